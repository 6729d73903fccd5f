"""On-failure destinations of a stream event source mapping: SQS, SNS or S3, in AWS's shape,
each delivered by its kind's module (:mod:`~cdc_local.destinations.bucket`,
:mod:`~cdc_local.destinations.queue`, :mod:`~cdc_local.destinations.topic`), found by the
destination ARN's service (docs/design.md, "Adding a failure destination").

Lambda's "Retain discarded records for a DynamoDB event source" (developer guide): a discarded
batch is described by an invocation record (``requestContext``, ``responseContext``, ``version``,
``timestamp``, ``DDBStreamBatchInfo``); SQS and SNS get that record only (the records themselves
must be read back from the stream), an S3 destination also gets the payload, as an object keyed
``aws/lambda/<ESM UUID>/<shard id>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<random UUID>``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cdc_consumer.redrive_shapes import (
    OnFailureMessage,
    OnFailureRequestContext,
    OnFailureResponseContext,
    StreamBatchInfo,
)

from cdc_local.destinations.bucket import BUCKET
from cdc_local.destinations.queue import QUEUE
from cdc_local.destinations.target import DeliveryKind, DeliveryTarget, batch_info
from cdc_local.destinations.topic import TOPIC
from cdc_local.endpoint import LocalEndpoint
from cdc_local.exceptions import LocalPipelineError

__all__ = [
    "DELIVERY_KINDS",
    "DeliveryKind",
    "DeliveryTarget",
    "FailedInvocation",
    "OnFailureDestination",
    "batch_info",
    "invocation_record",
    "iso_timestamp",
    "register",
]


def iso_timestamp(epoch_seconds: float) -> str:
    """``2019-11-14T00:38:06.021Z``: the timestamp format of Lambda's invocation records."""
    moment = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class FailedInvocation:
    """What the last invocation of a discarded batch reported (None if it was never invoked)."""

    request_id: str | None
    status_code: int | None
    function_error: str | None
    invoke_count: int


def invocation_record(
    *,
    records: Sequence[Mapping[str, Any]],
    condition: str,
    function_arn: str,
    shard_id: str,
    stream_arn: str,
    failure: FailedInvocation,
    now: float,
) -> dict[str, Any]:
    """The invocation record Lambda sends for a discarded batch of stream ``records``."""
    first, last = records[0], records[-1]
    return OnFailureMessage(
        request_context=OnFailureRequestContext(
            request_id=failure.request_id or str(uuid.uuid4()),
            function_arn=function_arn,
            condition=condition,
            approximate_invoke_count=failure.invoke_count,
        ),
        response_context=OnFailureResponseContext(
            status_code=failure.status_code,
            executed_version="$LATEST" if failure.status_code is not None else None,
            function_error=failure.function_error,
        ),
        timestamp=iso_timestamp(now),
        batch=StreamBatchInfo(
            shard_id=shard_id,
            start_sequence_number=first["dynamodb"]["SequenceNumber"],
            end_sequence_number=last["dynamodb"]["SequenceNumber"],
            approximate_arrival_of_first_record=iso_timestamp(
                first["dynamodb"]["ApproximateCreationDateTime"]
            ),
            approximate_arrival_of_last_record=iso_timestamp(
                last["dynamodb"]["ApproximateCreationDateTime"]
            ),
            batch_size=len(records),
            stream_arn=stream_arn,
        ),
    ).to_dict()


class OnFailureDestination:
    """Sends invocation records to the destination ARN, as its kind's module delivers them."""

    def __init__(
        self,
        arn: str,
        endpoint: LocalEndpoint,
        queue_url: str | None = None,
        mapping_uuid: str = "",
        credentials: Mapping[str, str] | None = None,
    ) -> None:
        self.arn = arn
        self.service = arn.split(":")[2]
        kind = DELIVERY_KINDS.get(self.service)
        if kind is None:
            raise LocalPipelineError(
                f"on-failure destination {arn!r}: a stream mapping's destination must be an SQS "
                f"queue, SNS topic or S3 bucket (a destination of {sorted(DELIVERY_KINDS)})"
            )
        self.kind: DeliveryKind = kind
        self.target = DeliveryTarget(arn, queue_url, mapping_uuid or str(uuid.uuid4()))
        kind.check(self.target)
        # Lambda sends with the function's role (``credentials``: its session's).
        self.client = endpoint.client(self.service, credentials=credentials)
        self.sent = 0

    @property
    def queue_url(self) -> str | None:
        return self.target.queue_url

    @property
    def mapping_uuid(self) -> str:
        return self.target.mapping_uuid

    @property
    def bucket(self) -> str | None:
        """The bucket's name when the destination is one (its kind says)."""
        return self.kind.bucket(self.target)

    def send(self, record: Mapping[str, Any], event: Mapping[str, Any], now: float) -> None:
        """Deliver ``record``; an S3 destination also stores ``event`` (the batch) as payload."""
        self.kind.send(self.client, self.target, record, event, now)
        self.sent += 1

    @property
    def where(self) -> str | None:
        """Where a redrive reads it (``Redrive.run``'s location; None: it cannot, a topic)."""
        return self.kind.where(self.target)

    def peek(self, client: Any) -> list[dict[str, Any]]:
        """The invocation records it holds, left where they are (``client``: the endpoint's
        client for its service, not the function's role)."""
        return self.kind.peek(client, self.target)

    def describe(self) -> str:
        """One line for people: what it is and what it keeps."""
        return self.kind.describe(self.target)


DELIVERY_KINDS: dict[str, DeliveryKind] = {kind.service: kind for kind in (QUEUE, TOPIC, BUCKET)}
"""The kinds by their ARN's service."""


def register(kind: DeliveryKind) -> None:
    """Deliver to destinations of ``kind.service`` with ``kind`` (a kind defined elsewhere)."""
    DELIVERY_KINDS[kind.service] = kind
