"""DynamoDB changes delivered through a Kinesis data stream (docs/design.md §9).

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
A duplicate carries the same DynamoDB ``eventID``, which the processed-markers are keyed on.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from collections.abc import Mapping
from typing import Any

from cdc_consumer.exceptions import UndecodableRecordError

#: ``eventSource`` of a record Lambda delivers from a Kinesis data stream.
KINESIS_EVENT_SOURCE = "aws:kinesis"
#: ``eventSource`` of the DynamoDB change inside the record's data.
DYNAMODB_EVENT_SOURCE = "aws:dynamodb"
#: ``recordFormat`` of the change inside the record's data.
RECORD_FORMAT = "application/json"


def is_kinesis_record(record: Any) -> bool:
    """Whether ``record`` is a record Lambda delivers from a Kinesis stream."""
    return isinstance(record, Mapping) and (
        record.get("eventSource") == KINESIS_EVENT_SOURCE
        or isinstance(record.get("kinesis"), Mapping)
    )


def kinesis_sequence_number(record: Any) -> str | None:
    """The Kinesis sequence number of ``record`` (its item identifier), or None."""
    kinesis = record.get("kinesis") if isinstance(record, Mapping) else None
    value = kinesis.get("sequenceNumber") if isinstance(kinesis, Mapping) else None
    return value if isinstance(value, str) and value else None


def item_identifier(record: Any) -> str | None:
    """What Lambda's ``batchItemFailures`` names ``record`` by: the Kinesis sequence number of a
    Kinesis record, ``dynamodb.SequenceNumber`` of a DynamoDB stream record; None if missing."""
    if (
        type(record) is dict
        and record.get("eventSource") != KINESIS_EVENT_SOURCE
        and record.get("kinesis") is None
    ):  # a DynamoDB stream record as JSON: no ABC checks (once per record per batch)
        stream = record.get("dynamodb")
        value = stream.get("SequenceNumber") if type(stream) is dict else None
        if type(value) is str and value:
            return value
    if is_kinesis_record(record):
        return kinesis_sequence_number(record)
    stream = record.get("dynamodb") if isinstance(record, Mapping) else None
    value = stream.get("SequenceNumber") if isinstance(stream, Mapping) else None
    return value if isinstance(value, str) and value else None


def filter_view(record: Mapping[str, Any]) -> Any:
    """What Lambda's filters match for ``record``: a Kinesis record's ``kinesis`` fields with
    ``data`` decoded when it is JSON (a pattern on ``data`` never matches other data); any
    other record as it is (a DynamoDB stream record is matched whole)."""
    if not is_kinesis_record(record):
        return record
    view = dict(record["kinesis"])
    with contextlib.suppress(ValueError, TypeError):  # binascii.Error is a ValueError
        view["data"] = json.loads(base64.b64decode(view["data"]))
    return view


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
