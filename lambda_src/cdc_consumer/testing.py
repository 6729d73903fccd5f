"""Helpers for testing stream consumers without AWS: the environment a StreamConsumer gives
its function (:func:`consumer_environment`, on moto's server: the ``testing`` extra), stream
records, a table's stream, a Lambda context, and AWS-style redelivery.

Importing this module needs nothing beyond boto3, so it is safe to ship in the layer; it is
meant for tests, the local pipeline and benchmarks::

    stream = TableStream(keys=("pk",), source_arn=ORDERS_STREAM_ARN)
    first = stream.put({"pk": "ITEM#1", "customerId": "c1", "status": "pending", "amount": 10})
    second = stream.put({"pk": "ITEM#1", "customerId": "c1", "status": "paid", "amount": 10})
    response = handler(stream_event([first, second]), FakeContext())
    retry = redelivery([first, second], response)   # what Lambda sends next, [] if none

A poison record is quarantined once per delivery of its batch (docs/runtime.md, "Quarantined
once per delivery"): assert on :func:`distinct_quarantined` of the messages, one per record.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeSerializer

from cdc_consumer.change import TTL_PRINCIPAL
from cdc_consumer.consumer_environment import ConsumerEnvironment, consumer_environment
from cdc_consumer.routes import DEFAULT_ROUTE, item_identifier
from cdc_consumer.wire import to_wire

__all__ = [
    "DEFAULT_SHARD_ID",
    "DEFAULT_SOURCE_ARN",
    "FIRST_SEQUENCE_NUMBER",
    "ConsumerEnvironment",
    "FakeContext",
    "TableStream",
    "consumer_environment",
    "distinct_quarantined",
    "redelivery",
    "serialize",
    "stream_event",
    "stream_record",
    "wire_serialize",
]

#: The stream ARN records carry unless told otherwise.
DEFAULT_SOURCE_ARN = (
    "arn:aws:dynamodb:us-east-1:123456789012:table/source-table/stream/2024-01-01T00:00:00.000"
)
#: A first sequence number shaped like DynamoDB's (21 digits, so string order = numeric order).
FIRST_SEQUENCE_NUMBER = 100_000_000_000_000_000_000

_serializer = TypeSerializer()


def serialize(item: Mapping[str, Any]) -> dict[str, Any]:
    """A Python item (numbers as int or Decimal) in DynamoDB JSON, with boto3's TypeSerializer:
    the shape boto3's *client* takes (binary values as ``bytes``). A stream record carries the
    wire form instead (base64 text): see :func:`wire_serialize`."""
    return {name: _serializer.serialize(_decimals(value)) for name, value in item.items()}


def wire_serialize(item: Mapping[str, Any]) -> dict[str, Any]:
    """A Python item in DynamoDB JSON as a Lambda event carries it: binary values (``bytes``
    in ``item``) as base64 text."""
    wire: dict[str, Any] = to_wire(serialize(item))
    return wire


def _decimals(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, Mapping):
        return {key: _decimals(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_decimals(inner) for inner in value]
    return value


def stream_record(
    event_name: str,
    keys: Mapping[str, Any],
    *,
    new_image: Mapping[str, Any] | None = None,
    old_image: Mapping[str, Any] | None = None,
    sequence_number: str | int,
    event_id: str | None = None,
    ttl_expiry: bool = False,
    source_arn: str = DEFAULT_SOURCE_ARN,
    approximate_creation_time: float | None = None,
    region: str = "us-east-1",
) -> dict[str, Any]:
    """One record as Lambda delivers it from a NEW_AND_OLD_IMAGES stream.

    Images are Python values, serialized here in the wire form (``bytes`` become base64 text,
    as in Lambda's event; :class:`~cdc_consumer.change.Change` decodes them back to bytes).
    ``ttl_expiry`` adds the ``userIdentity`` DynamoDB puts on TTL deletions. ``event_id``
    defaults to a random 32-hex id, as AWS's.
    """
    stream: dict[str, Any] = {
        "ApproximateCreationDateTime": approximate_creation_time or float(int(time.time())),
        "Keys": wire_serialize(keys),
        "SequenceNumber": str(sequence_number),
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    }
    if new_image is not None:
        stream["NewImage"] = wire_serialize(new_image)
    if old_image is not None:
        stream["OldImage"] = wire_serialize(old_image)
    # An estimate: DynamoDB counts the bytes of keys and images.
    stream["SizeBytes"] = sum(len(str(stream.get(part, ""))) for part in ("NewImage", "OldImage"))
    record: dict[str, Any] = {
        "eventID": event_id or uuid.uuid4().hex,
        "eventName": event_name,
        "eventVersion": "1.1",
        "eventSource": DEFAULT_ROUTE.event_source,  # the DynamoDB stream's
        "awsRegion": region,
        "dynamodb": stream,
        "eventSourceARN": source_arn,
    }
    if ttl_expiry:
        record["userIdentity"] = dict(TTL_PRINCIPAL)
    return record


#: The shard :func:`stream_event` names by default: a shard id as DynamoDB Streams writes them.
DEFAULT_SHARD_ID = "shardId-00000001700000000000-00000001"
#: The tumbling window :func:`stream_event` puts its batches in, as the constructs' default.
TEST_WINDOW_SECONDS = 900


def stream_event(
    records: Iterable[Mapping[str, Any]],
    *,
    shard_id: str | None = None,
    final: bool = False,
) -> dict[str, Any]:
    """The Lambda event for a batch of records: ``{"Records": [...]}``, as a mapping without a
    tumbling window sends it. With ``shard_id`` (``DEFAULT_SHARD_ID`` will do), as a mapping
    with a window (the ``StreamConsumer`` default) sends it: ``shardId``, ``window`` (the current
    one), ``state``, ``isFinalInvokeForWindow`` (``final``); the answer then carries ``state``."""
    event: dict[str, Any] = {"Records": list(records)}
    if shard_id is None:
        return event
    from cdc_consumer import windows

    start = int(time.time()) // TEST_WINDOW_SECONDS * TEST_WINDOW_SECONDS
    event.update(
        {
            windows.SHARD_ID_KEY: shard_id,
            windows.WINDOW_KEY: {"start": _iso(start), "end": _iso(start + TEST_WINDOW_SECONDS)},
            windows.WINDOW_STATE_KEY: {},
            windows.FINAL_INVOKE_KEY: final,
            windows.WINDOW_TERMINATED_EARLY_KEY: False,
        }
    )
    return event


def _iso(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


@dataclass
class TableStream:
    """A table's item state and the NEW_AND_OLD_IMAGES stream records its writes produce.

    :meth:`put` / :meth:`delete` change ``items`` and return the record DynamoDB Streams
    would emit (none for a delete of a missing item; unlike moto, which emits MODIFY for a
    put that changes nothing, this emits nothing for it either, as DynamoDB does).
    """

    keys: Sequence[str] = ("pk",)
    source_arn: str = DEFAULT_SOURCE_ARN
    clock: Callable[[], float] = time.time
    items: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    _sequence: Iterable[int] = field(
        default_factory=lambda: itertools.count(FIRST_SEQUENCE_NUMBER), repr=False
    )

    def key_of(self, item: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(item[name] for name in self.keys)

    def put(self, item: Mapping[str, Any]) -> dict[str, Any] | None:
        """Write ``item`` (whole); the INSERT or MODIFY record, or None if nothing changed."""
        new: dict[str, Any] = _decimals(dict(item))
        key = self.key_of(new)
        old = self.items.get(key)
        if old == new:
            return None
        self.items[key] = new
        return self._emit("MODIFY" if old else "INSERT", key, new_image=new, old_image=old)

    def update(self, key: Sequence[Any], **changes: Any) -> dict[str, Any] | None:
        """Set attributes of the existing item at ``key`` (a tuple of key values)."""
        return self.put({**self.items[tuple(key)], **changes})

    def delete(self, key: Sequence[Any], *, ttl_expiry: bool = False) -> dict[str, Any] | None:
        """Delete the item at ``key``; the REMOVE record, or None if there was no item."""
        old = self.items.pop(tuple(key), None)
        if old is None:
            return None
        return self._emit("REMOVE", tuple(key), old_image=old, ttl_expiry=ttl_expiry)

    def _emit(self, event_name: str, key: tuple[Any, ...], **images: Any) -> dict[str, Any]:
        record = stream_record(
            event_name,
            dict(zip(self.keys, key, strict=True)),
            sequence_number=next(self._sequence),  # type: ignore[call-overload]
            source_arn=self.source_arn,
            approximate_creation_time=self.clock(),
            **images,
        )
        self.records.append(record)
        return record


@dataclass
class FakeContext:
    """A Lambda context: ``get_remaining_time_in_millis`` returns ``remaining_ms``, or calls it
    when it is a function (for a deadline that moves during the test)."""

    remaining_ms: int | Callable[[], int] = 300_000
    function_name: str = "cdc-consumer"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def get_remaining_time_in_millis(self) -> int:
        value = self.remaining_ms
        return int(value() if callable(value) else value)


def redelivery(
    records: Sequence[Mapping[str, Any]], response: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """What Lambda delivers next after ``response`` to a batch of ``records``.

    With ReportBatchItemFailures Lambda resumes from the *lowest* failed sequence number and
    re-sends everything after it; an empty failure list means the batch is done (``[]``).
    """
    failures = response.get("batchItemFailures") or []
    if not failures:
        return []
    failed = {failure["itemIdentifier"] for failure in failures}
    positions = [
        position
        for position, record in enumerate(records)
        if record["dynamodb"]["SequenceNumber"] in failed
    ]
    if len(positions) != len(failed):
        raise ValueError(
            f"itemIdentifier(s) {sorted(failed)} are not all sequence numbers of the batch; "
            "Lambda would fail the whole batch"
        )
    return list(records[min(positions) :])


def snapshot_event(
    items: Iterable[Mapping[str, Any]],
    *,
    horizon: int,
    backfill_id: str = "test-backfill",
    keys: Sequence[str] = ("pk",),
    source_arn: str = DEFAULT_SOURCE_ARN,
) -> dict[str, Any]:
    """A backfill's snapshot batch of ``items`` (Python values) read after ``horizon`` (epoch
    seconds), as the segment function sends it to the consumer (docs/backfill.md)."""
    from cdc_consumer.backfill.shapes import BACKFILL_EVENT_KEY, SnapshotBatch
    from cdc_consumer.snapshots import snapshot_record

    records = []
    for index, item in enumerate(items):
        image = wire_serialize(_decimals(dict(item)))
        records.append(
            snapshot_record(
                image,
                {name: image[name] for name in keys},
                backfill_id=backfill_id,
                horizon=horizon,
                sequence_number=f"{index:08d}",
                stream_arn=source_arn,
            )
        )
    batch = SnapshotBatch(backfill_id=backfill_id, horizon=horizon)
    return {"Records": records, BACKFILL_EVENT_KEY: batch.to_dict()}


def distinct_quarantined(messages: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``messages`` (quarantine message bodies, e.g. ``ConsumerEnvironment.quarantined()``)
    with one per consumer and record, the first of each, in order.

    A poison record commits nothing, so every delivery of its batch (Lambda's retry, a
    redelivery, a redrive) quarantines it again, under the same record; what a test can
    assert exactly is the set of records quarantined, not the number of messages."""
    seen: set[tuple[Any, Any]] = set()
    distinct = []
    for message in messages:
        key = (message.get("consumer"), _record_identity(message.get("record") or {}))
        if key not in seen:
            seen.add(key)
            distinct.append(message)
    return distinct


def _record_identity(record: Mapping[str, Any]) -> Any:
    """A record's identity across deliveries: its event id (a record's envelope keeps it, and a
    pointer to a record kept in the bucket), else its sequence number in its route."""
    return record.get("eventID") or item_identifier(record)
