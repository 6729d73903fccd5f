"""The Kinesis route's failure records: what Lambda writes to a Kinesis mapping's on-failure
destination, read and checked.

A Kinesis event source mapping describes a discarded batch as a DynamoDB stream's does, under
``KinesisBatchInfo`` instead of ``DDBStreamBatchInfo`` (AWS Lambda developer guide, "Retain
discarded batch records for a Kinesis Data Streams event source")::

    {"requestContext": {...}, "responseContext": {...}, "version": "1.0",
     "timestamp": "2019-11-14T00:38:06.021Z",
     "KinesisBatchInfo": {"shardId": "shardId-000000000001",
                          "startSequenceNumber": "4960...", "endSequenceNumber": "4960...",
                          "approximateArrivalOfFirstRecord": "2019-11-14T00:38:04.835Z",
                          "approximateArrivalOfLastRecord": "2019-11-14T00:38:05.580Z",
                          "batchSize": 500, "streamArn": "arn:aws:kinesis:...:stream/name"}}

An S3 destination also gets the batch itself (``payload``, the Kinesis event as Lambda delivered
it) in an object keyed ``aws/lambda/<mapping UUID>/<shard id>/YYYY/MM/DD/...``; an SQS or SNS
destination gets the record above only, and the records are read back from the Kinesis stream
while its retention holds them (:mod:`~cdc_consumer.redrive.kinesis_reader`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from cdc_consumer.exceptions import ForeignMessageError, MalformedMessageError, RedriveSetupError
from cdc_consumer.kinesis import kinesis_sequence_number
from cdc_consumer.message_fields import ContractError
from cdc_consumer.redrive.marker_age import failure_time
from cdc_consumer.redrive.messages import (
    BatchInfo,
    batch_records,
    check_batch_records,
    clip,
    function_name_of,
)
from cdc_consumer.redrive_shapes import OnFailureMessage, StreamBatchInfo

__all__ = [
    "KINESIS_STREAM_ARN_PATTERN",
    "KinesisFailure",
    "check_kinesis_stream_arn",
    "is_kinesis_stream_arn",
    "parse_kinesis_failure",
]

#: A Kinesis data stream ARN: ``arn:<partition>:kinesis:<region>:<account>:stream/<name>``.
KINESIS_STREAM_ARN_PATTERN = re.compile(r"^arn:aws[a-z-]*:kinesis:[a-z0-9-]+:\d{12}:stream/[^/]+$")


def is_kinesis_stream_arn(arn: str) -> bool:
    """Whether ``arn`` is a Kinesis data stream's (the Kinesis route), not a DynamoDB stream's."""
    return bool(KINESIS_STREAM_ARN_PATTERN.match(arn or ""))


def check_kinesis_stream_arn(arn: str) -> None:
    """Raise :class:`RedriveSetupError` unless ``arn`` is a Kinesis data stream ARN."""
    if not is_kinesis_stream_arn(arn):
        raise RedriveSetupError(
            f"stream ARN {arn!r} is not a Kinesis data stream ARN"
            " (arn:aws:kinesis:REGION:ACCOUNT:stream/NAME): pass the stream the consumer reads"
            " (not its enhanced fan-out consumer's ARN)"
        )


@dataclass(frozen=True)
class KinesisFailure:
    """One discarded batch of a Kinesis mapping: where its failure record is (an S3 key or an SQS
    message id, with the receipt handle to delete it), where the batch lies in the stream, and
    its records when the record carries them (an S3 destination's ``payload``; else None)."""

    where: str
    shard_id: str
    start: str
    end: str
    stream_arn: str
    batch_size: int | None
    #: When Lambda gave up on the batch (the record's ``timestamp``), as written.
    timestamp: str | None
    #: ``approximateArrivalOfFirstRecord``, as written.
    first_arrival: str | None
    records: tuple[dict[str, Any], ...] | None = None
    receipt_handle: str | None = None

    @property
    def position(self) -> tuple[str, int, int]:
        """Its place in the stream: shard, first and last sequence number."""
        return self.shard_id, int(self.start), int(self.end)

    def earliest(self) -> float | None:
        """The earliest time the failure record states (its first record's arrival, or when it
        was given up on), epoch seconds; None when it states neither."""
        times = [failure_time(self.first_arrival), failure_time(self.timestamp)]
        known = [t for t in times if t is not None]
        return min(known) if known else None

    def without_records(self) -> KinesisFailure:
        """The same failure without its records (a plan keeps one object's records at a time)."""
        return replace(self, records=None)


def parse_kinesis_failure(
    body: bytes | str,
    where: str,
    expected_stream_arn: str,
    expected_function: str | None = None,
    receipt_handle: str | None = None,
) -> KinesisFailure:
    """Validate a Kinesis on-failure record (an SQS message body or an S3 object) and return it.

    Raises :class:`MalformedMessageError` naming what was wrong (not JSON, no
    ``KinesisBatchInfo`` or a field of it, a start after its end, a payload that is not the
    batch it describes); :class:`ForeignMessageError` when it is another stream's, or another
    function's mapping wrote it (checked when ``expected_function`` is given).
    """
    what = f"on-failure record {where}"
    message = _message(_document(body, what), what)
    batch = message.batch
    start, end = (
        _sequence(batch.start_sequence_number, what),
        _sequence(batch.end_sequence_number, what),
    )
    if int(start) > int(end):
        raise MalformedMessageError(
            f"{what} has startSequenceNumber {start} after endSequenceNumber {end};"
            " expected start <= end"
        )
    if batch.stream_arn != expected_stream_arn:
        raise ForeignMessageError(
            f"{what} is for stream {batch.stream_arn!r}, not the configured stream"
            f" {expected_stream_arn!r}; redrive it with the consumer of that stream (kept)"
        )
    _check_function(message, expected_function, what)
    failure = KinesisFailure(
        where=where,
        shard_id=batch.shard_id,
        start=start,
        end=end,
        stream_arn=batch.stream_arn,
        batch_size=batch.batch_size,
        timestamp=message.timestamp,
        first_arrival=batch.approximate_arrival_of_first_record,
        receipt_handle=receipt_handle,
    )
    if message.payload is None:
        return failure
    records = _payload_records(message.payload, what)
    _check_payload(records, failure, what)
    return replace(failure, records=tuple(records))


def _document(body: bytes | str, what: str) -> dict[str, Any]:
    try:
        text = body.decode("utf-8") if isinstance(body, bytes) else body
        document = json.loads(text)
    except (UnicodeDecodeError, ValueError) as error:
        raise MalformedMessageError(
            f"{what} is not JSON text ({error}): {clip(body)!r}; expected Lambda's invocation"
            " record for a Kinesis stream"
        ) from None
    if not isinstance(document, dict):
        raise MalformedMessageError(f"{what} is JSON {type(document).__name__}, not an object")
    return document


def _message(document: dict[str, Any], what: str) -> OnFailureMessage:
    key = OnFailureMessage.KINESIS_BATCH_INFO
    info = document.get(key)
    if not isinstance(info, dict):
        raise MalformedMessageError(
            f"{what} has no {key} object (keys: {sorted(document)}); expected Lambda's"
            " on-failure record for a Kinesis stream"
        )
    missing = [name for name in StreamBatchInfo.REQUIRED if info.get(name) in (None, "")]
    if missing:
        raise MalformedMessageError(
            f"{what} lacks {key}.{', '.join(missing)}; expected all of"
            f" {', '.join(StreamBatchInfo.REQUIRED)}"
        )
    try:
        return OnFailureMessage.from_dict(document, batch_info=key)
    except ContractError as error:
        raise MalformedMessageError(f"{what}: {error}") from None


def _sequence(value: str, what: str) -> str:
    if not value.isdigit():
        raise MalformedMessageError(
            f"{what} has sequence number {value!r}; expected a Kinesis sequence number (digits)"
        )
    return value


def _check_function(message: OnFailureMessage, expected: str | None, what: str) -> None:
    """Refuse a record another function's mapping wrote (Lambda always names the function)."""
    arn = message.request_context.function_arn if message.request_context else ""
    if expected is None or not arn:
        return
    if function_name_of(arn) != function_name_of(expected):
        raise ForeignMessageError(
            f"{what} is from function {function_name_of(arn)!r}'s event source mapping, not"
            f" the consumer {function_name_of(expected)!r}'s; redrive it with that consumer"
            " (kept)"
        )


def _payload_records(payload: str, what: str) -> list[dict[str, Any]]:
    records = batch_records(payload, what)
    for index, record in enumerate(records):
        if not str(kinesis_sequence_number(record) or "").isdigit():
            raise MalformedMessageError(
                f"{what}'s payload record {index} is not a Kinesis record (kinesis."
                f"sequenceNumber): {clip(json.dumps(record, default=str))!r}"
            )
    return records


def _check_payload(records: Sequence[dict[str, Any]], failure: KinesisFailure, what: str) -> None:
    """Refuse a payload with another stream's record, or one that is not the batch its
    ``KinesisBatchInfo`` describes (:func:`~cdc_consumer.redrive.messages.check_batch_records`)."""
    numbers = [int(str(kinesis_sequence_number(record))) for record in records]
    start, end = int(failure.start), int(failure.end)
    info = BatchInfo(
        OnFailureMessage.KINESIS_BATCH_INFO, failure.stream_arn, start, end, failure.batch_size
    )
    check_batch_records(records, numbers, info, what)
