"""What the redrive reads and says: AWS's on-failure record, its causes, its lease and check.

The on-failure message is AWS's invocation record for a discarded stream batch (AWS Lambda
developer guide, "Retain discarded records for a DynamoDB event source"): SQS and SNS
destinations get this record only; an S3 destination gets it with the batch as ``payload`` (the
invocation event, JSON text). The local pipeline writes it, the redrive reads it.

:class:`RedriveCause` is why a redrive left a message where it was, for code that decides (a
report's sentence is for people); :func:`redrive_lease_key` and :data:`FAILURE_AGE_CHECK` are the
redrive function's lease and scheduled check, which the constructs grant and schedule.

Beside :mod:`cdc_consumer.redrive`, not in it: the constructs import it, and the redrive package
loads boto3. Standard library only.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from cdc_consumer.message_fields import as_object, require_field
from cdc_consumer.windows import SHARD_ID_KEY

__all__ = [
    "FAILURE_AGE_CHECK",
    "ON_FAILURE_CONDITIONS",
    "ON_FAILURE_MESSAGE_VERSION",
    "ON_FAILURE_S3_PREFIX",
    "RECORD_AGE_EXCEEDED",
    "RETRY_ATTEMPTS_EXHAUSTED",
    "OnFailureMessage",
    "OnFailureRequestContext",
    "OnFailureResponseContext",
    "RedriveCause",
    "StreamBatchInfo",
    "redrive_lease_key",
]


FAILURE_AGE_CHECK: Final = "failure-age"
"""The redrive function's event ``{"check": "failure-age"}``: measure
:data:`OLDEST_FAILURE_AGE` and replay nothing (the construct's schedule sends it)."""


def redrive_lease_key(consumer_name: str, stream_arn: str) -> str:
    """The ``id`` of a consumer's redrive lease in its idempotency table
    (``cdc_consumer.redrive.lease``; the redrive function's role may write this item only): in
    the consumer's namespace, and no marker or claim id has ``#redrive-lease#`` (theirs end in
    an event id)."""
    return f"{consumer_name}#redrive-lease#{stream_arn}"


class RedriveCause(enum.StrEnum):
    """Why a redrive left a message or object where it was (``FailedMessage.cause``)."""

    EARLIER_CHANGE_IN_QUARANTINE = "earlier-change-in-quarantine"
    """The quarantine queue holds an earlier change of one of its items (a second on-failure
    round may take it once the quarantine was replayed)."""
    EARLIER_CHANGE_IN_BUCKET = "earlier-change-in-bucket"
    """The failed-batch bucket holds an earlier change of its item (or an object whose items
    cannot be read)."""
    EARLIER_CHANGE_OF_ITEM = "earlier-change-of-item"
    """An earlier quarantined change of its item stayed in the queue in this run."""
    EARLIER_BATCH_OF_SHARD = "earlier-batch-of-shard"
    """An earlier object of its shard failed, was held or stays in the bucket."""
    ANCESTOR_SHARD_PENDING = "ancestor-shard-pending"
    """A shard it may descend from still has an object in the bucket."""
    OLDER_THAN_MARKERS = "older-than-markers"
    """It failed longer ago than the consumer's markers live: replaying it could apply records
    a second time."""
    OLDER_THAN_STREAM_RETENTION = "older-than-stream-retention"
    """It holds no records (a pointer) and its records arrived longer ago than the stream keeps
    them: they cannot be read back (they are reported lost too)."""
    REPLAY_FAILED = "replay-failed"
    """The consumer failed a record of it (or deleting it failed after its replay)."""
    UNREADABLE = "unreadable"
    """It could not be read, parsed or read back from the stream."""
    FOREIGN = "foreign"
    """Another consumer's, function's or stream's, or it names none."""
    REQUARANTINED = "requarantined"
    """A record of it was quarantined again by the replay."""


RETRY_ATTEMPTS_EXHAUSTED: Final = "RetryAttemptsExhausted"

RECORD_AGE_EXCEEDED: Final = "RecordAgeExceeded"

ON_FAILURE_CONDITIONS: Final = (RETRY_ATTEMPTS_EXHAUSTED, RECORD_AGE_EXCEEDED)
"""The conditions Lambda writes in ``requestContext.condition`` for stream sources."""

ON_FAILURE_MESSAGE_VERSION: Final = "1.0"

ON_FAILURE_S3_PREFIX: Final = "aws/lambda/"
"""Where Lambda writes a stream mapping's discarded batches in an S3 on-failure destination:
``aws/lambda/<mapping UUID>/<shard id>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<random UUID>``."""


@dataclass(frozen=True)
class StreamBatchInfo:
    """``DDBStreamBatchInfo``: where the discarded batch lies in the stream."""

    shard_id: str
    start_sequence_number: str
    end_sequence_number: str
    stream_arn: str
    approximate_arrival_of_first_record: str | None = None
    approximate_arrival_of_last_record: str | None = None
    batch_size: int | None = None

    SHARD_ID: ClassVar[str] = SHARD_ID_KEY
    START_SEQUENCE_NUMBER: ClassVar[str] = "startSequenceNumber"
    END_SEQUENCE_NUMBER: ClassVar[str] = "endSequenceNumber"
    STREAM_ARN: ClassVar[str] = "streamArn"
    REQUIRED: ClassVar[tuple[str, ...]] = (
        SHARD_ID,
        START_SEQUENCE_NUMBER,
        END_SEQUENCE_NUMBER,
        STREAM_ARN,
    )
    """The fields redrive needs to read the batch back."""

    def to_dict(self) -> dict[str, Any]:
        return {
            self.SHARD_ID: self.shard_id,
            self.START_SEQUENCE_NUMBER: self.start_sequence_number,
            self.END_SEQUENCE_NUMBER: self.end_sequence_number,
            "approximateArrivalOfFirstRecord": self.approximate_arrival_of_first_record,
            "approximateArrivalOfLastRecord": self.approximate_arrival_of_last_record,
            "batchSize": self.batch_size,
            self.STREAM_ARN: self.stream_arn,
        }

    @classmethod
    def from_dict(cls, document: Any) -> StreamBatchInfo:
        what = "DDBStreamBatchInfo"
        document = as_object(document, what)
        batch_size = document.get("batchSize")
        return cls(
            shard_id=str(require_field(document, cls.SHARD_ID, what)),
            start_sequence_number=str(require_field(document, cls.START_SEQUENCE_NUMBER, what)),
            end_sequence_number=str(require_field(document, cls.END_SEQUENCE_NUMBER, what)),
            stream_arn=str(require_field(document, cls.STREAM_ARN, what)),
            approximate_arrival_of_first_record=document.get("approximateArrivalOfFirstRecord"),
            approximate_arrival_of_last_record=document.get("approximateArrivalOfLastRecord"),
            batch_size=batch_size if isinstance(batch_size, int) else None,
        )


@dataclass(frozen=True)
class OnFailureRequestContext:
    request_id: str
    function_arn: str
    condition: str
    approximate_invoke_count: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "requestId": self.request_id,
            "functionArn": self.function_arn,
            "condition": self.condition,
            "approximateInvokeCount": self.approximate_invoke_count,
        }

    @classmethod
    def from_dict(cls, document: Any) -> OnFailureRequestContext:
        document = as_object(document, "requestContext")
        return cls(
            request_id=str(document.get("requestId", "")),
            function_arn=str(document.get("functionArn", "")),
            condition=str(document.get("condition", "")),
            approximate_invoke_count=int(document.get("approximateInvokeCount") or 0),
        )


@dataclass(frozen=True)
class OnFailureResponseContext:
    status_code: int | None
    executed_version: str | None
    function_error: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "statusCode": self.status_code,
            "executedVersion": self.executed_version,
            "functionError": self.function_error,
        }

    @classmethod
    def from_dict(cls, document: Any) -> OnFailureResponseContext:
        document = as_object(document, "responseContext")
        return cls(
            status_code=document.get("statusCode"),
            executed_version=document.get("executedVersion"),
            function_error=document.get("functionError"),
        )


@dataclass(frozen=True)
class OnFailureMessage:
    """The invocation record Lambda sends to a stream mapping's on-failure destination."""

    batch: StreamBatchInfo
    request_context: OnFailureRequestContext | None
    response_context: OnFailureResponseContext | None
    timestamp: str | None
    """``2019-11-14T00:38:06.021Z``"""
    version: str = ON_FAILURE_MESSAGE_VERSION
    payload: str | None = None
    """S3 destinations only: the invocation event (the batch itself), JSON text."""

    BATCH_INFO: ClassVar[str] = "DDBStreamBatchInfo"
    """Where a DynamoDB stream's batch is described."""
    KINESIS_BATCH_INFO: ClassVar[str] = "KinesisBatchInfo"
    """Where a Kinesis stream's batch is described (the same fields; AWS Lambda developer
    guide, "Retain discarded batch records for a Kinesis Data Streams event source")."""

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "requestContext": self.request_context.to_dict() if self.request_context else None,
            "responseContext": self.response_context.to_dict() if self.response_context else None,
            "version": self.version,
            "timestamp": self.timestamp,
            self.BATCH_INFO: self.batch.to_dict(),
        }
        if self.payload is not None:
            document["payload"] = self.payload
        return document

    @classmethod
    def from_dict(cls, document: Any, batch_info: str | None = None) -> OnFailureMessage:
        """Raises :class:`ContractError` when ``DDBStreamBatchInfo`` (``batch_info``: another
        key, e.g. :attr:`KINESIS_BATCH_INFO`) or one of its required fields
        (:attr:`StreamBatchInfo.REQUIRED`) is missing."""
        what = "on-failure message"
        document = as_object(document, what)
        request = document.get("requestContext")
        response = document.get("responseContext")
        payload = document.get("payload")
        return cls(
            batch=StreamBatchInfo.from_dict(
                require_field(document, batch_info or cls.BATCH_INFO, what)
            ),
            request_context=(
                OnFailureRequestContext.from_dict(request) if isinstance(request, Mapping) else None
            ),
            response_context=(
                OnFailureResponseContext.from_dict(response)
                if isinstance(response, Mapping)
                else None
            ),
            timestamp=document.get("timestamp"),
            version=str(document.get("version", ON_FAILURE_MESSAGE_VERSION)),
            payload=payload if isinstance(payload, str) else None,
        )

    @staticmethod
    def batch_info(document: Mapping[str, Any]) -> Any:
        """The raw ``DDBStreamBatchInfo`` of a message document (None when absent), for readers
        that validate it field by field."""
        return document.get(OnFailureMessage.BATCH_INFO)
