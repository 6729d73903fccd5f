"""On-failure destinations of a stream event source mapping: SQS, SNS or S3, in AWS's shape.

Lambda's "Retain discarded records for a DynamoDB event source" (developer guide): a discarded
batch is described by an invocation record (``requestContext``, ``responseContext``, ``version``,
``timestamp``, ``DDBStreamBatchInfo``); SQS and SNS get that record only (the records themselves
must be read back from the stream), an S3 destination also gets the payload, as an object keyed
``aws/lambda/<ESM UUID>/<shard id>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<random UUID>``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cdc_consumer.contract import (
    ON_FAILURE_S3_PREFIX,
    OnFailureMessage,
    OnFailureRequestContext,
    OnFailureResponseContext,
    StreamBatchInfo,
)

from cdc_local.endpoint import LocalEndpoint
from cdc_local.exceptions import LocalPipelineError


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


def batch_info(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """The batch description of an invocation record: ``DDBStreamBatchInfo`` (DynamoDB stream)
    or ``KinesisBatchInfo`` (Kinesis stream)."""
    return OnFailureMessage.batch_info(record) or record[OnFailureMessage.KINESIS_BATCH_INFO]


class OnFailureDestination:
    """Sends invocation records to the destination ARN (an SQS queue, SNS topic or S3 bucket)."""

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
        if self.service not in ("sqs", "sns", "s3"):
            raise LocalPipelineError(
                f"on-failure destination {arn!r}: a stream mapping's destination must be an SQS "
                "queue, SNS topic or S3 bucket"
            )
        if self.service == "sqs" and queue_url is None:
            raise LocalPipelineError(f"on-failure destination {arn!r}: no such queue in the stack")
        self.queue_url = queue_url
        self.bucket = self.arn.split(":::", 1)[1] if self.service == "s3" else None
        self.mapping_uuid = mapping_uuid or str(uuid.uuid4())
        # Lambda sends with the function's role (``credentials``: its session's).
        self.client = endpoint.client(self.service, credentials=credentials)
        self.sent = 0

    def send(self, record: Mapping[str, Any], event: Mapping[str, Any], now: float) -> None:
        """Deliver ``record``; an S3 destination also stores ``event`` (the batch) as payload."""
        if self.service == "sqs":
            self.client.send_message(QueueUrl=self.queue_url, MessageBody=json.dumps(record))
        elif self.service == "sns":
            self.client.publish(TopicArn=self.arn, Message=json.dumps(record))
        else:
            # The calls AWS needs the role to allow for an S3 destination (Lambda developer
            # guide: s3:ListBucket, which IAM checks for ListObjectsV2, and s3:PutObject).
            self.client.list_objects_v2(Bucket=self.bucket, Prefix=ON_FAILURE_S3_PREFIX, MaxKeys=1)
            self.client.put_object(
                Bucket=self.arn.split(":::", 1)[1],
                Key=self.s3_key(batch_info(record)[StreamBatchInfo.SHARD_ID], now),
                Body=json.dumps({**record, "payload": json.dumps(event)}).encode(),
                ContentType="application/json",
            )
        self.sent += 1

    def s3_key(self, shard_id: str, now: float) -> str:
        moment = datetime.fromtimestamp(now, tz=UTC)
        return (
            f"{ON_FAILURE_S3_PREFIX}{self.mapping_uuid}/{shard_id}/{moment:%Y/%m/%d}/"
            f"{moment:%Y-%m-%dT%H.%M.%S}-{uuid.uuid4()}"
        )
