"""The messages redrive reads: on-failure pointers (interfaces §5) and quarantined records (§4).

Each parser validates a queue message body and raises
:class:`~cdc_consumer.exceptions.MalformedMessageError` naming what was wrong, the value, and what
redrive expected.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

from cdc_consumer.exceptions import MalformedMessageError
from cdc_consumer.redrive.defaults import REQUIRED_BATCH_FIELDS

__all__ = [
    "OnFailureBatch",
    "QuarantinedRecord",
    "Source",
    "clip",
    "parse_on_failure_message",
    "parse_quarantine_message",
]


def clip(text: Any, limit: int = 120) -> str:
    """``text`` shortened to ``limit`` characters for an error message."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Source(enum.StrEnum):
    """Which queue a redrive reads."""

    ON_FAILURE = "on-failure"
    QUARANTINE = "quarantine"


@dataclass(frozen=True)
class OnFailureBatch:
    """The part of an on-failure message (interfaces §5) that locates the failed records."""

    shard_id: str
    start_sequence_number: str
    end_sequence_number: str
    stream_arn: str
    batch_size: int | None
    condition: str | None


@dataclass(frozen=True)
class QuarantinedRecord:
    """A quarantine message (interfaces §4): the record exactly as Lambda delivered it."""

    record: dict[str, Any]
    consumer: str | None
    error: dict[str, Any] | None

    @property
    def sequence_number(self) -> str:
        return str(self.record["dynamodb"]["SequenceNumber"])


def _load_json_object(body: str, what: str) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except (TypeError, ValueError) as error:
        raise MalformedMessageError(
            f"{what} body is not JSON ({error}): {clip(body)!r}; expected a JSON object"
        ) from None
    if not isinstance(document, dict):
        raise MalformedMessageError(
            f"{what} body is JSON {type(document).__name__}, not an object: {clip(body)!r}"
        )
    return document


def _sequence_number(value: Any, name: str) -> str:
    text = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if not text.isdigit():
        raise MalformedMessageError(
            f"on-failure message field DDBStreamBatchInfo.{name} is {value!r}; expected a"
            " sequence number (a string of digits)"
        )
    return text


def parse_on_failure_message(body: str, expected_stream_arn: str) -> OnFailureBatch:
    """Validate an on-failure message body and return the batch it points at.

    Raises :class:`MalformedMessageError` naming what was wrong when the body is not JSON, lacks
    one of ``DDBStreamBatchInfo.{shardId, startSequenceNumber, endSequenceNumber, streamArn}``,
    has a start after its end, or points at another stream than ``expected_stream_arn``.
    """
    document = _load_json_object(body, "on-failure message")
    info = document.get("DDBStreamBatchInfo")
    if not isinstance(info, dict):
        raise MalformedMessageError(
            "on-failure message has no DDBStreamBatchInfo object (keys:"
            f" {sorted(document)}); expected Lambda's on-failure record for a DynamoDB stream"
        )
    missing = [name for name in REQUIRED_BATCH_FIELDS if info.get(name) in (None, "")]
    if missing:
        raise MalformedMessageError(
            f"on-failure message lacks DDBStreamBatchInfo.{', DDBStreamBatchInfo.'.join(missing)};"
            f" expected all of {', '.join(REQUIRED_BATCH_FIELDS)}"
        )
    start = _sequence_number(info["startSequenceNumber"], "startSequenceNumber")
    end = _sequence_number(info["endSequenceNumber"], "endSequenceNumber")
    if int(start) > int(end):
        raise MalformedMessageError(
            f"on-failure message has startSequenceNumber {start} after endSequenceNumber {end};"
            " expected start <= end"
        )
    if info["streamArn"] != expected_stream_arn:
        raise MalformedMessageError(
            f"on-failure message is for stream {info['streamArn']!r}, not the configured stream"
            f" {expected_stream_arn!r}; redrive it with the consumer of that stream"
        )
    batch_size = info.get("batchSize")
    context = document.get("requestContext")
    return OnFailureBatch(
        shard_id=str(info["shardId"]),
        start_sequence_number=start,
        end_sequence_number=end,
        stream_arn=str(info["streamArn"]),
        batch_size=batch_size if isinstance(batch_size, int) else None,
        condition=context.get("condition") if isinstance(context, dict) else None,
    )


def parse_quarantine_message(
    body: str,
    *,
    expected_stream_arn: str | None = None,
    expected_consumer: str | None = None,
) -> QuarantinedRecord:
    """Validate a quarantine message body (interfaces §4) and return its record.

    Raises :class:`MalformedMessageError` when the body is not JSON, has no ``record`` object with
    ``eventID`` and ``dynamodb.SequenceNumber``, or names another consumer or stream than the
    configured ones (each check only when the expected value is given).
    """
    document = _load_json_object(body, "quarantine message")
    record = document.get("record")
    if not isinstance(record, dict):
        raise MalformedMessageError(
            f"quarantine message has no 'record' object (keys: {sorted(document)}); expected"
            " the stream record as the consumer received it"
        )
    dynamodb = record.get("dynamodb")
    if not record.get("eventID") or not isinstance(dynamodb, dict):
        raise MalformedMessageError(
            "quarantine message's record lacks eventID or the dynamodb object; expected a"
            " DynamoDB stream record"
        )
    if not str(dynamodb.get("SequenceNumber", "")).isdigit():
        raise MalformedMessageError(
            "quarantine message's record has dynamodb.SequenceNumber"
            f" {dynamodb.get('SequenceNumber')!r}; expected a string of digits"
        )
    consumer = document.get("consumer")
    if expected_consumer is not None and consumer not in (None, expected_consumer):
        raise MalformedMessageError(
            f"quarantine message is from consumer {consumer!r}, not the configured consumer"
            f" {expected_consumer!r}; redrive it with that consumer"
        )
    source_arn = document.get("sourceArn") or record.get("eventSourceARN")
    if expected_stream_arn is not None and source_arn not in (None, expected_stream_arn):
        raise MalformedMessageError(
            f"quarantine message is for stream {source_arn!r}, not the configured stream"
            f" {expected_stream_arn!r}; redrive it with the consumer of that stream"
        )
    error = document.get("error")
    return QuarantinedRecord(
        record=record, consumer=consumer, error=error if isinstance(error, dict) else None
    )
