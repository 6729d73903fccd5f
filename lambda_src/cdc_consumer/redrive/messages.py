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

from cdc_consumer.exceptions import ForeignMessageError, MalformedMessageError
from cdc_consumer.redrive.defaults import REQUIRED_BATCH_FIELDS

__all__ = [
    "OnFailureBatch",
    "QuarantinedRecord",
    "Source",
    "clip",
    "function_name_of",
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


def function_name_of(name_or_arn: str) -> str:
    """A Lambda function's name from its name or ARN (``arn:aws:lambda:r:a:function:NAME[:q]``)."""
    parts = name_or_arn.split(":")
    if len(parts) >= 7 and parts[0] == "arn" and parts[5] == "function":
        return parts[6]
    return name_or_arn


def _check_function(document: dict[str, Any], expected_function: str | None, what: str) -> None:
    """Refuse an invocation record that another function's mapping wrote."""
    if expected_function is None:
        return
    context = document.get("requestContext")
    arn = context.get("functionArn") if isinstance(context, dict) else None
    if not isinstance(arn, str) or not arn:
        return  # Lambda always writes it; a record without it is judged by its stream alone
    if function_name_of(arn) != function_name_of(expected_function):
        raise ForeignMessageError(
            f"{what} is from function {function_name_of(arn)!r}'s event source mapping, not"
            f" the consumer {function_name_of(expected_function)!r}'s; redrive it with that"
            " consumer (kept)"
        )


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


def parse_on_failure_message(
    body: str, expected_stream_arn: str, expected_function: str | None = None
) -> OnFailureBatch:
    """Validate an on-failure message body and return the batch it points at.

    Raises :class:`MalformedMessageError` naming what was wrong when the body is not JSON, lacks
    one of ``DDBStreamBatchInfo.{shardId, startSequenceNumber, endSequenceNumber, streamArn}``
    or has a start after its end; :class:`ForeignMessageError` when it points at another stream
    than ``expected_stream_arn`` or (when ``expected_function`` is given) was written by another
    function's mapping.
    """
    document = _load_json_object(body, "on-failure message")
    return _batch_of(document, expected_stream_arn, expected_function, "on-failure message")


def _batch_of(
    document: dict[str, Any],
    expected_stream_arn: str,
    expected_function: str | None,
    what: str,
) -> OnFailureBatch:
    info = document.get("DDBStreamBatchInfo")
    if not isinstance(info, dict):
        raise MalformedMessageError(
            f"{what} has no DDBStreamBatchInfo object (keys:"
            f" {sorted(document)}); expected Lambda's on-failure record for a DynamoDB stream"
        )
    missing = [name for name in REQUIRED_BATCH_FIELDS if info.get(name) in (None, "")]
    if missing:
        raise MalformedMessageError(
            f"{what} lacks DDBStreamBatchInfo.{', DDBStreamBatchInfo.'.join(missing)};"
            f" expected all of {', '.join(REQUIRED_BATCH_FIELDS)}"
        )
    start = _sequence_number(info["startSequenceNumber"], "startSequenceNumber")
    end = _sequence_number(info["endSequenceNumber"], "endSequenceNumber")
    if int(start) > int(end):
        raise MalformedMessageError(
            f"{what} has startSequenceNumber {start} after endSequenceNumber {end};"
            " expected start <= end"
        )
    if info["streamArn"] != expected_stream_arn:
        raise ForeignMessageError(
            f"{what} is for stream {info['streamArn']!r}, not the configured stream"
            f" {expected_stream_arn!r}; redrive it with the consumer of that stream (kept)"
        )
    _check_function(document, expected_function, what)
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
    expected_stream_arn: str,
    expected_consumer: str,
) -> QuarantinedRecord:
    """Validate a quarantine message body (interfaces §4) and return its record.

    Raises :class:`MalformedMessageError` when the body is not JSON or has no ``record`` object
    with ``eventID`` and ``dynamodb.SequenceNumber``; :class:`ForeignMessageError` when it names
    another consumer or stream than the configured ones, or does not name both (the runtime
    always writes ``consumer`` and ``sourceArn``: a message without them cannot be shown to be
    this consumer's, so it is kept, never replayed on a guess).
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
    if not consumer:
        raise ForeignMessageError(
            "quarantine message names no consumer; redrive replays only messages that name"
            f" its consumer {expected_consumer!r} (kept)"
        )
    if consumer != expected_consumer:
        raise ForeignMessageError(
            f"quarantine message is from consumer {consumer!r}, not the configured consumer"
            f" {expected_consumer!r}; redrive it with that consumer (kept)"
        )
    for source_arn in (document.get("sourceArn"), record.get("eventSourceARN")):
        if not source_arn:
            raise ForeignMessageError(
                "quarantine message names no stream (sourceArn and the record's"
                f" eventSourceARN); redrive replays only records of {expected_stream_arn!r}"
                " (kept)"
            )
        if source_arn != expected_stream_arn:
            raise ForeignMessageError(
                f"quarantine message is for stream {source_arn!r}, not the configured stream"
                f" {expected_stream_arn!r}; redrive it with the consumer of that stream (kept)"
            )
    error = document.get("error")
    return QuarantinedRecord(
        record=record, consumer=consumer, error=error if isinstance(error, dict) else None
    )
