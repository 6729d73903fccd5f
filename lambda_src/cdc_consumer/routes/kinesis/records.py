"""The Kinesis route's records: DynamoDB changes delivered through a Kinesis data stream
(docs/design.md §9).

When a table streams its changes to Kinesis ("Kinesis Data Streams for DynamoDB"), Lambda
delivers Kinesis records::

    {"eventSource": "aws:kinesis", "eventID": "shardId-...:<sequence number>",
     "eventSourceARN": "arn:aws:kinesis:...:stream/<name>", "eventName": "aws:kinesis:record",
     "kinesis": {"sequenceNumber": "...", "partitionKey": "...", "data": "<base64>",
                 "approximateArrivalTimestamp": 1.7e9, "kinesisSchemaVersion": "1.0"}, ...}

whose ``data`` is the base64 of a JSON DynamoDB change in AWS's published format::

    {"awsRegion": "...", "eventID": "...", "eventName": "INSERT|MODIFY|REMOVE",
     "userIdentity": null | {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
     "recordFormat": "application/json", "tableName": "...", "eventSource": "aws:dynamodb",
     "dynamodb": {"ApproximateCreationDateTime": <milli- or microseconds>, "Keys": {...},
                  "NewImage": {...}, "OldImage": {...}, "SizeBytes": n}}

It has no ``SequenceNumber``: the item identifier Lambda expects in ``batchItemFailures`` is the
Kinesis sequence number. Kinesis may deliver one item's changes out of order and more than once
(AWS: "The Kinesis data stream records might appear in a different order than when the item
changes occurred. The same item notifications might also appear more than once in the stream"),
so a consumer orders by :attr:`Change.version` and guards its writes (:mod:`cdc_consumer.versions`).
A duplicate carries the same DynamoDB ``eventID``, which the processed-markers are keyed on: the
route keeps a marker per record, no ledger lane (:meth:`KinesisRoute.lane_position`).

The change's ``ApproximateCreationDateTime`` is in milli- or microseconds (the table's
``ApproximateCreationDateTimePrecision``; the constructs set MICROSECOND), not rounded down to
the second, so a version holds it as it is (:func:`cdc_consumer.versions.format_version`; "Across
routes" there). The tie-break is the Kinesis sequence number, the order in which the shard
received the records: with MILLISECOND precision two changes of one item within the same
millisecond fall back to that arrival order, which a redelivered older change can break (so keep
MICROSECOND). Kinesis sequence numbers have at most 128 digits.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from cdc_consumer.exceptions import UndecodableRecordError
from cdc_consumer.routes.route import Created, Edit, LanePosition
from cdc_consumer.versions import (
    MICROSECOND_PLACES,
    MILLISECOND_PLACES,
    floored,
    format_version,
    scaled,
)

#: ``eventSource`` of a record Lambda delivers from a Kinesis data stream.
KINESIS_EVENT_SOURCE = "aws:kinesis"
#: ``eventSource`` of the DynamoDB change inside the record's data.
DYNAMODB_EVENT_SOURCE = "aws:dynamodb"
#: ``recordFormat`` of the change inside the record's data.
RECORD_FORMAT = "application/json"
#: A change's ApproximateCreationDateTime at or above this is in microseconds (in milliseconds
#: it would be after the year 5138); below it, milliseconds.
MICROSECONDS_FROM = 10**14
#: Below this a change's time is neither milli- nor microseconds after 1973 (epoch seconds,
#: say): refused, as a version built from it would sort before every real change.
MILLISECONDS_FROM = 10**11


def is_kinesis_record(record: Any) -> bool:
    """Whether ``record`` is a record Lambda delivers from a Kinesis stream (asked of every
    record of a batch: a record as JSON, a dict, without ABC checks)."""
    if type(record) is dict:
        kinesis = record.get("kinesis")
        return record.get("eventSource") == KINESIS_EVENT_SOURCE or (
            kinesis is not None and isinstance(kinesis, Mapping)
        )
    return isinstance(record, Mapping) and (
        record.get("eventSource") == KINESIS_EVENT_SOURCE
        or isinstance(record.get("kinesis"), Mapping)
    )


def kinesis_sequence_number(record: Any) -> str | None:
    """The Kinesis sequence number of ``record`` (its item identifier), or None."""
    kinesis = record.get("kinesis") if isinstance(record, Mapping) else None
    value = kinesis.get("sequenceNumber") if isinstance(kinesis, Mapping) else None
    return value if isinstance(value, str) and value else None


def decode_data(record: Mapping[str, Any]) -> dict[str, Any]:
    """The DynamoDB change a Kinesis record's ``data`` holds, as a dict.

    Raises :class:`UndecodableRecordError` naming the problem when the data is not base64, not
    UTF-8 JSON, or not a DynamoDB change in AWS's format (an object with ``eventID``,
    ``eventName`` and ``dynamodb.Keys``; ``eventSource`` and ``recordFormat``, when present, must
    be ``aws:dynamodb`` and ``application/json``).
    """
    sequence_number = kinesis_sequence_number(record)
    where = f"Kinesis record {sequence_number}"
    data = record.get("kinesis", {}).get("data")
    if not isinstance(data, str):
        raise UndecodableRecordError(f"{where}: kinesis.data must be base64 text, got {data!r:.80}")
    try:
        change = json.loads(base64.b64decode(data, validate=True).decode("utf-8"))
    except (binascii.Error, ValueError) as error:
        # ValueError covers UnicodeDecodeError and json.JSONDecodeError.
        raise UndecodableRecordError(
            f"{where}: kinesis.data is not base64 of UTF-8 JSON ({error})"
        ) from error
    if not isinstance(change, dict):
        raise UndecodableRecordError(
            f"{where}: kinesis.data holds {type(change).__name__} JSON, not a DynamoDB change"
        )
    for name, expected in (("eventSource", DYNAMODB_EVENT_SOURCE), ("recordFormat", RECORD_FORMAT)):
        if name in change and change[name] != expected:
            raise UndecodableRecordError(
                f"{where}: kinesis.data has {name} {change[name]!r}, not {expected!r}: "
                "not a DynamoDB change"
            )
    stream = change.get("dynamodb")
    if not isinstance(stream, Mapping) or "Keys" not in stream:
        raise UndecodableRecordError(
            f"{where}: kinesis.data is JSON without dynamodb.Keys: not a DynamoDB change "
            f"(keys: {sorted(change)[:10]})"
        )
    return change


def encode_data(change: Mapping[str, Any]) -> str:
    """The base64 ``data`` of a Kinesis record holding ``change`` (the inverse of
    :func:`decode_data`, for tests and the local pipeline)."""
    return base64.b64encode(json.dumps(change, separators=(",", ":")).encode()).decode()


def kinesis_time_to_us(value: Any) -> int:
    """A change's ``ApproximateCreationDateTime`` (milli- or microseconds) in microseconds.
    Raises ValueError for anything else (a string, seconds, a negative number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise ValueError(f"expected a number of milli- or microseconds, got {value!r}")
    number = Decimal(str(value))
    if number >= MICROSECONDS_FROM:
        return floored(number)
    if number >= MILLISECONDS_FROM:
        return floored(scaled(number, MICROSECOND_PLACES - MILLISECOND_PLACES))
    raise ValueError(
        f"{value!r} is not epoch milli- or microseconds (below {MILLISECONDS_FROM}: seconds?)"
    )


class KinesisRoute:
    """The Kinesis route (:class:`~cdc_consumer.routes.route.Route`)."""

    name = "kinesis"
    event_source = KINESIS_EVENT_SOURCE
    identifier_field = "kinesis.sequenceNumber"

    def recognises(self, record: Any) -> bool:
        """:func:`is_kinesis_record`."""
        return is_kinesis_record(record)

    def item_identifier(self, record: Any) -> str | None:
        """The Kinesis sequence number."""
        return kinesis_sequence_number(record)

    def change_document(self, record: Mapping[str, Any]) -> Mapping[str, Any]:
        """The change ``data`` holds (:func:`decode_data`); the record's sequence number is
        checked first."""
        if kinesis_sequence_number(record) is None:
            raise UndecodableRecordError(
                f"Kinesis record: kinesis.sequenceNumber must be a non-empty string, "
                f"got {record.get('kinesis', {}).get('sequenceNumber')!r}"
            )
        return decode_data(record)

    def created(self, stream: Mapping[str, Any], event_id: str) -> Created:
        """Milli- or microseconds (:func:`kinesis_time_to_us`), in microseconds and as a
        datetime."""
        value = stream.get("ApproximateCreationDateTime")
        if value is None:
            return None, None
        try:
            time_us = kinesis_time_to_us(value)
            created = datetime.fromtimestamp(time_us / 1_000_000, tz=UTC)  # in datetime's range
        except (ValueError, ArithmeticError, OverflowError, OSError) as error:
            raise UndecodableRecordError(
                f"record {event_id}: dynamodb.ApproximateCreationDateTime must be epoch milli- "
                f"or microseconds, got {value!r} ({error})"
            ) from error
        return time_us, created

    def version(self, time_us: int, sequence_number: str) -> str:
        """The time as it is: not rounded down to the second."""
        return format_version(time_us, sequence_number)

    def filter_view(self, record: Mapping[str, Any], edit: Edit | None = None) -> Any:
        """The record's ``kinesis`` fields with ``data`` decoded when it is JSON (a pattern on
        ``data`` never matches other data); ``edit`` applies to a DynamoDB change there."""
        view = dict(record["kinesis"])
        with contextlib.suppress(ValueError, TypeError):  # binascii.Error is a ValueError
            view["data"] = json.loads(base64.b64decode(view["data"]))
        data = view.get("data")
        if edit is not None and isinstance(data, Mapping) and "dynamodb" in data:
            view["data"] = edit(data)
        return view

    def envelope(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """The record with its ``kinesis`` fields but ``data``."""
        kept = {k: v for k, v in record.items() if k != "kinesis"}
        kept["kinesis"] = {k: v for k, v in record["kinesis"].items() if k != "data"}
        return kept

    def lane_position(self, record: Any) -> LanePosition | None:
        """None: one DynamoDB change may be in the Kinesis stream twice, under two sequence
        numbers (AWS documents it), so only its DynamoDB ``eventID`` (a marker's key) tells the
        second from a new change."""
        return None


ROUTE = KinesisRoute()
