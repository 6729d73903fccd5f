"""The messages redrive reads: on-failure pointers (interfaces §5) and quarantined records (§4).

Each parser validates a queue message body and raises
:class:`~cdc_consumer.exceptions.MalformedMessageError` naming what was wrong, the value, and what
redrive expected.
"""

from __future__ import annotations

import enum
import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from cdc_consumer.exceptions import ForeignMessageError, MalformedMessageError
from cdc_consumer.message_fields import ContractError
from cdc_consumer.quarantine_shapes import QuarantineMessage
from cdc_consumer.redrive_shapes import OnFailureMessage, OnFailureRequestContext, StreamBatchInfo
from cdc_consumer.routes.replay import ROUTES, ReplayRoute, route_of_record, route_of_stream
from cdc_consumer.routes.replay import sequence_number as record_sequence_number

__all__ = [
    "BatchInfo",
    "OnFailureBatch",
    "OnFailureKey",
    "OnFailureObject",
    "QuarantinedRecord",
    "Source",
    "batch_records",
    "check_batch_records",
    "clip",
    "function_name_of",
    "parse_on_failure_key",
    "parse_on_failure_message",
    "parse_on_failure_object",
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
    #: The invocation record's ``timestamp`` (when Lambda gave up on the batch), as written.
    timestamp: str | None = None
    #: ``approximateArrivalOfFirstRecord``, as written (None: not said).
    first_arrival: str | None = None


@dataclass(frozen=True)
class QuarantinedRecord:
    """A quarantine message (interfaces §4): the record exactly as Lambda delivered it."""

    record: dict[str, Any]
    consumer: str | None
    error: dict[str, Any] | None
    #: The message's ``quarantinedAt``, as written.
    quarantined_at: str | None = None
    #: ``{"bucket", "key"}`` of the whole message when it was too big for the queue: ``record``
    #: then lacks its images (:func:`fetch_stored_record` reads the rest).
    record_location: dict[str, str] | None = None
    #: The shard the record was delivered from, when its event said (None in messages written
    #: before shards were kept): the redrive replays the record with it.
    shard_id: str | None = None

    @property
    def sequence_number(self) -> str:
        """What the consumer names the record by (its route's sequence number)."""
        return str(record_sequence_number(self.record))


def function_name_of(name_or_arn: str) -> str:
    """A Lambda function's name from its name or ARN (``arn:aws:lambda:r:a:function:NAME[:q]``)."""
    parts = name_or_arn.split(":")
    if len(parts) >= 7 and parts[0] == "arn" and parts[5] == "function":
        return parts[6]
    return name_or_arn


def _check_function(
    request: OnFailureRequestContext | None, expected_function: str | None, what: str
) -> None:
    """Refuse an invocation record that another function's mapping wrote."""
    if expected_function is None:
        return
    arn = request.function_arn if request is not None else None
    if not arn:
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
            f"on-failure message field {name} is {value!r}; expected a sequence number (a"
            " string of digits)"
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
    route = route_of_stream(expected_stream_arn)
    key = route.batch_info
    info = document.get(key)
    if not isinstance(info, dict):
        raise MalformedMessageError(
            f"{what} has no {key} object (keys: {sorted(document)}); expected Lambda's"
            f" on-failure record for a {route.name}"
        )
    required = StreamBatchInfo.REQUIRED
    missing = [name for name in required if info.get(name) in (None, "")]
    if missing:
        raise MalformedMessageError(
            f"{what} lacks {key}.{f', {key}.'.join(missing)}; expected all of {', '.join(required)}"
        )
    try:  # the contract's reading of the fields
        message = OnFailureMessage.from_dict(document, batch_info=key)
    except ContractError as error:
        raise MalformedMessageError(f"{what}: {error}") from None
    batch = message.batch
    start = _sequence_number(
        batch.start_sequence_number, f"{key}.{StreamBatchInfo.START_SEQUENCE_NUMBER}"
    )
    end = _sequence_number(
        batch.end_sequence_number, f"{key}.{StreamBatchInfo.END_SEQUENCE_NUMBER}"
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
    request = message.request_context
    _check_function(request, expected_function, what)
    return OnFailureBatch(
        shard_id=batch.shard_id,
        start_sequence_number=start,
        end_sequence_number=end,
        stream_arn=batch.stream_arn,
        batch_size=batch.batch_size,
        condition=request.condition or None if request is not None else None,
        timestamp=message.timestamp,
        first_arrival=batch.approximate_arrival_of_first_record,
    )


def parse_quarantine_message(
    body: str,
    *,
    expected_stream_arn: str,
    expected_consumer: str | Sequence[str],
) -> QuarantinedRecord:
    """Validate a quarantine message body (interfaces §4) and return its record.

    Raises :class:`MalformedMessageError` when the body is not JSON or has no ``record`` object
    with ``eventID`` and ``dynamodb.SequenceNumber`` (a Kinesis record, on the Kinesis route:
    ``eventID`` and ``kinesis.sequenceNumber``); :class:`ForeignMessageError` when it names
    another consumer or stream than the configured ones, or does not name both (the runtime
    always writes ``consumer`` and ``sourceArn``: a message without them cannot be shown to be
    this consumer's, so it is kept, never replayed on a guess). ``expected_consumer`` may name
    several consumers: the members of a consumer group, which share one function and queue.
    """
    accepted = (expected_consumer,) if isinstance(expected_consumer, str) else expected_consumer
    document = _load_json_object(body, "quarantine message")
    record = _quarantined_record(document)
    try:
        message = QuarantineMessage.from_dict(document)
    except ContractError as error:
        raise MalformedMessageError(str(error)) from None
    consumer = message.consumer
    _check_quarantine_consumer(consumer, accepted)
    _check_quarantine_stream(
        (message.source_arn, record.get("eventSourceARN")), expected_stream_arn
    )
    return QuarantinedRecord(
        record=record,
        consumer=consumer,
        error=message.error.to_dict() if message.error is not None else None,
        quarantined_at=message.quarantined_at or None,
        record_location=dict(message.record_location) if message.record_location else None,
        shard_id=message.shard_id,
    )


def fetch_stored_record(
    s3_client: Any,
    pointer: QuarantinedRecord,
    *,
    expected_stream_arn: str,
    expected_consumer: str | Sequence[str],
) -> QuarantinedRecord:
    """The whole quarantine message a pointer names (a record too big for the queue), checked
    as any message and against the pointer (same record). Raises
    :class:`MalformedMessageError` when it cannot be read or does not match; S3's errors
    (``ClientError``) pass through."""
    location = pointer.record_location
    assert location is not None
    where = f"s3://{location['bucket']}/{location['key']}"
    body = s3_client.get_object(Bucket=location["bucket"], Key=location["key"])["Body"].read()
    stored = parse_quarantine_message(
        body.decode("utf-8"),
        expected_stream_arn=expected_stream_arn,
        expected_consumer=expected_consumer,
    )
    if stored.record.get("eventID") != pointer.record.get("eventID") or (
        stored.sequence_number != pointer.sequence_number
    ):
        raise MalformedMessageError(
            f"{where} holds record {stored.record.get('eventID')!r} (sequence number"
            f" {stored.sequence_number}), not the one its message points at"
            f" ({pointer.record.get('eventID')!r}, {pointer.sequence_number})"
        )
    return replace(stored, record_location=dict(location))


def _quarantined_record(document: dict[str, Any]) -> dict[str, Any]:
    """The quarantine message's ``record``, checked to be a record a route delivers, with its
    identity (:meth:`~cdc_consumer.routes.replay.ReplayRoute.check_record`)."""
    record = document.get("record")  # the one field read before the contract's reading
    if not isinstance(record, dict):
        raise MalformedMessageError(
            f"quarantine message has no 'record' object (keys: {sorted(document)}); expected"
            " the stream record as the consumer received it"
        )
    route = route_of_record(record)
    if route is None:
        raise MalformedMessageError(
            "quarantine message's record lacks eventID or the dynamodb object; expected a"
            f" {' or a '.join(r.name for r in ROUTES)} record (keys: {clip(sorted(record))})"
        )
    route.check_record(record, "quarantine message's record")
    return record


def _check_quarantine_consumer(consumer: str | None, accepted: Sequence[str]) -> None:
    """Refuse a quarantine message that names no consumer, or one not ``accepted``."""
    expected = accepted[0] if len(accepted) == 1 else list(accepted)
    if not consumer:
        raise ForeignMessageError(
            "quarantine message names no consumer; redrive replays only messages that name"
            f" its consumer {expected!r} (kept)"
        )
    if consumer not in accepted:
        raise ForeignMessageError(
            f"quarantine message is from consumer {consumer!r}, not the configured consumer"
            f" {expected!r}; redrive it with that consumer (kept)"
        )


def _check_quarantine_stream(source_arns: Sequence[Any], expected_stream_arn: str) -> None:
    """Refuse a quarantine message whose ``sourceArn`` or record's ``eventSourceARN`` is
    missing or another stream's."""
    for source_arn in source_arns:
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


#: The key Lambda gives an S3 on-failure object (anywhere below the bucket's root):
#: ``aws/lambda/<mapping UUID>/<shard id>/YYYY/MM/DD/<timestamp>-<random UUID>``.
S3_KEY = re.compile(
    r"(?:^|/)aws/lambda/(?P<mapping>[0-9a-fA-F-]{36})/(?P<shard>[^/]+)/\d{4}/\d{2}/\d{2}/[^/]+$"
)


@dataclass(frozen=True)
class OnFailureObject:
    """An S3 on-failure object: the invocation record with the batch itself (``payload``)."""

    key: str
    mapping_uuid: str
    batch: OnFailureBatch
    records: list[dict[str, Any]]


def batch_records(payload: Any, what: str) -> list[Any]:
    """The ``Records`` of a failed batch's payload (the batch's event, as JSON text or parsed)
    that Lambda writes to an S3 on-failure destination, on either route; each record is the
    caller's to check."""
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError as error:
            raise MalformedMessageError(
                f"{what}'s payload is not JSON ({error}; truncated?): {clip(payload)!r}"
            ) from None
    records = payload.get("Records") if isinstance(payload, dict) else None
    if not isinstance(records, list) or not records:
        raise MalformedMessageError(
            f"{what}'s payload has no Records list: {clip(json.dumps(payload))!r}; expected the"
            ' batch\'s event, {"Records": [...]}'
        )
    return records


def _payload_records(document: dict[str, Any], route: ReplayRoute, what: str) -> list[Any]:
    if "payload" not in document:
        raise MalformedMessageError(
            f"{what} has no payload (keys: {sorted(document)}); expected the invocation record"
            " Lambda writes to an S3 destination, with the batch as payload"
        )
    records = batch_records(document["payload"], what)
    for index, record in enumerate(records):
        if not route.owns_record(record):
            raise MalformedMessageError(
                f"{what}'s payload record {index} is not a {route.name} record:"
                f" {clip(json.dumps(record, default=str))!r}"
            )
        route.check_record(record, f"{what}'s payload record {index}")
    return records


def parse_on_failure_object(
    key: str,
    body: bytes | str,
    expected_stream_arn: str,
    expected_function: str | None = None,
    expected_mapping_uuid: str | None = None,
) -> OnFailureObject:
    """Validate an S3 on-failure object and return its batch and records, in stream order.

    Raises :class:`MalformedMessageError` naming what was wrong when the key or the body is not
    in AWS's shape (not JSON or truncated, no ``DDBStreamBatchInfo``, no ``payload``, a payload
    whose records do not match the batch's shard, first and last sequence numbers and size);
    :class:`ForeignMessageError` when the batch (or any of its records) is another stream's, or
    another function's or mapping's (each checked when the expected value is given).
    """
    what = f"object {key}"
    where = parse_on_failure_key(key, expected_mapping_uuid)
    document = _load_json_object(_text(body, what), what)
    batch = _batch_of(document, expected_stream_arn, expected_function, what)
    if where.shard_id != batch.shard_id:
        raise MalformedMessageError(
            f"{what}: the key names shard {where.shard_id!r}, its batch info's shardId is"
            f" {batch.shard_id!r}; expected the same shard"
        )
    route = route_of_stream(expected_stream_arn)
    records = _payload_records(document, route, what)
    _check_payload_matches(records, batch, route, what)
    return OnFailureObject(
        key=key, mapping_uuid=where.mapping_uuid, batch=batch, records=list(records)
    )


@dataclass(frozen=True)
class OnFailureKey:
    """What an S3 on-failure object's key says: the mapping that wrote it, the batch's shard,
    and when it was written (``YYYY-MM-DDTHH.MM.SS``, to the second; "" when the name does not
    start with it)."""

    key: str
    mapping_uuid: str
    shard_id: str
    written: str


def parse_on_failure_key(key: str, expected_mapping_uuid: str | None = None) -> OnFailureKey:
    """Read an S3 on-failure object's key (nothing is fetched).

    Raises :class:`MalformedMessageError` when the key is not in AWS's shape,
    :class:`ForeignMessageError` when another mapping than ``expected_mapping_uuid`` wrote it.
    """
    match = S3_KEY.search(key)
    if match is None:
        raise MalformedMessageError(
            f"object {key}: the key is not in AWS's shape aws/lambda/<mapping UUID>/<shard id>/"
            "YYYY/MM/DD/<timestamp>-<uuid>; not an on-failure object of a stream mapping"
        )
    if expected_mapping_uuid and match["mapping"].lower() != expected_mapping_uuid.lower():
        raise ForeignMessageError(
            f"object {key} was written by event source mapping {match['mapping']}, not this"
            f" consumer's mapping {expected_mapping_uuid}; redrive it with that consumer (kept)"
        )
    written = _WRITTEN.match(key.rsplit("/", 1)[1])
    return OnFailureKey(key, match["mapping"], match["shard"], written.group(0) if written else "")


#: The time at the start of an object's name: ``2026-12-01T20.13.19``.
_WRITTEN = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}\.\d{2}\.\d{2}")


def _text(body: bytes | str, what: str) -> str:
    """An object's body as text; it must be UTF-8."""
    if isinstance(body, bytes):
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise MalformedMessageError(f"{what} is not UTF-8 text ({error})") from None
    return body


def _check_payload_matches(
    records: list[dict[str, Any]], batch: OnFailureBatch, route: ReplayRoute, what: str
) -> None:
    """Refuse a payload with another stream's record, or one that is not the batch its batch
    info describes (:func:`check_batch_records`)."""
    numbers = [int(str(route.sequence_number(r))) for r in records]
    start, end = int(batch.start_sequence_number), int(batch.end_sequence_number)
    info = BatchInfo(route.batch_info, batch.stream_arn, start, end, batch.batch_size)
    check_batch_records(records, numbers, info, what)


@dataclass(frozen=True)
class BatchInfo:
    """What a failed batch's info (``name``: DDBStreamBatchInfo, KinesisBatchInfo) says of it."""

    name: str
    stream_arn: str
    start: int
    end: int
    batch_size: int | None


def check_batch_records(
    records: Sequence[dict[str, Any]], numbers: Sequence[int], info: BatchInfo, what: str
) -> None:
    """Refuse a payload with another stream's record, or one that is not the batch ``info``
    describes: first and last sequence numbers (``numbers``, the records'), order, size."""
    for record in records:
        source = record.get("eventSourceARN")
        if source not in (None, info.stream_arn):
            raise ForeignMessageError(
                f"{what}'s payload holds a record of stream {source!r}, not the configured"
                f" stream {info.stream_arn!r}; redrive it with the consumer of that stream"
                " (kept)"
            )
    problems = []
    if (numbers[0], numbers[-1]) != (info.start, info.end):
        problems.append(
            f"its records run {numbers[0]}..{numbers[-1]}, {info.name} says"
            f" {info.start}..{info.end}"
        )
    if any(later <= earlier for earlier, later in itertools.pairwise(numbers)):
        problems.append("its records are not in stream order")
    if info.batch_size is not None and info.batch_size != len(records):
        problems.append(f"it holds {len(records)} record(s), batchSize says {info.batch_size}")
    if problems:
        raise MalformedMessageError(
            f"{what}'s payload does not match its {info.name}: {'; '.join(problems)}"
        )
