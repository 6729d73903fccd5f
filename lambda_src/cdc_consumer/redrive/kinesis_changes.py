"""A Kinesis record's item and the place of its change in the item's history, for the redrive's
rule that no change of an item overtakes an earlier pending one (:mod:`~cdc_consumer.redrive.
pending_changes`, which asks here for a record of the Kinesis route).

A Kinesis record carries the DynamoDB change in its ``data``
(:mod:`cdc_consumer.routes.kinesis.records`): the item is the change's ``dynamodb.Keys``, as on
the stream route, so one item is one item across the quarantine queue and the failed-batch
bucket. A change's place is its
``ApproximateCreationDateTime`` (milli- or microseconds, read as microseconds) and then the
Kinesis sequence number (exact within a shard). A record whose data cannot be decoded (often
why it was quarantined) has no known item: it is its own item (keyed by its sequence number), so
it holds nothing and nothing holds it, and its place is its arrival time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cdc_consumer.exceptions import UndecodableRecordError
from cdc_consumer.routes.kinesis.records import (
    decode_data,
    kinesis_sequence_number,
    kinesis_time_to_us,
)

__all__ = ["kinesis_change_of", "kinesis_item_key"]

#: Microseconds in a second: an undecodable record's arrival time (seconds) in the change's unit.
_US = 1_000_000


def _change(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The DynamoDB change's ``dynamodb`` section, or None when the data cannot be decoded (a
    pointer to a record too big for a message has no data: its own ``dynamodb`` keeps the
    change's keys and times, :mod:`cdc_consumer.quarantine`)."""
    pointer = record.get("dynamodb")
    if "data" not in record.get("kinesis", {}) and isinstance(pointer, Mapping) and pointer:
        return pointer
    try:
        stream = decode_data(record).get("dynamodb")
    except UndecodableRecordError:
        return None
    return stream if isinstance(stream, Mapping) else None


def kinesis_item_key(record: Mapping[str, Any]) -> str:
    """The item of the change ``record`` carries: its key attributes, as canonical JSON (the
    stream route's identity); an undecodable record's own sequence number."""
    stream = _change(record)
    if stream is None:
        return f"undecodable Kinesis record {kinesis_sequence_number(record)}"
    return json.dumps(stream.get("Keys", {}), sort_keys=True)


def kinesis_change_of(record: Mapping[str, Any]) -> tuple[int, int]:
    """(``ApproximateCreationDateTime`` in microseconds, Kinesis sequence number)."""
    number = int(kinesis_sequence_number(record) or 0)
    stream = _change(record)
    try:
        created = kinesis_time_to_us((stream or {}).get("ApproximateCreationDateTime"))
    except ValueError:  # undecodable, or no creation time: the arrival time stands in
        arrival = record.get("kinesis", {}).get("approximateArrivalTimestamp", 0)
        created = int(float(arrival or 0) * _US)
    return created, number
