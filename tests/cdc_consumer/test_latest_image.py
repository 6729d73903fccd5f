"""LatestImage and the version guard: an older or equal change is a no-op, a REMOVE leaves a
tombstone; with AWS's Kinesis records out of order and repeated per item, the latest-image view
ends equal to the table and the order-stats aggregate exact. The same on a DynamoDB stream."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from cdc_consumer import LatestImage, StreamProcessor
from cdc_consumer.routes.kinesis.testing import (
    KinesisDelivery,
    MicrosecondClock,
    kinesis_data,
    kinesis_event,
    kinesis_record,
    kinesis_redelivery,
)
from cdc_consumer.testing import FakeContext, TableStream, redelivery, stream_event

from cdc_local.endpoint import patched_environ
from tests.cdc_consumer.fixtures import Resources, TransactionHooks, error_response
from tests.reference_app.handlers.orders import handler_module, recompute

ORDERS = [f"ORDER#{n}" for n in range(8)]
CUSTOMERS = ["c1", "c2", "c3"]
STATUSES = ["pending", "paid", "cancelled", "shipped"]


def replica(resources: Resources, table: str, latest: LatestImage) -> dict[str, dict[str, Any]]:
    """The replica's live items by pk, as source items (tombstones and versions left out)."""
    items = {}
    for item in resources.scan(table):
        image = latest.image(item)
        if image is not None:
            items[image["pk"]] = image
    return items


def write_orders(stream: TableStream, count: int, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(count):
        pk = rng.choice(ORDERS)
        if pk in {key[0] for key in stream.items} and rng.random() < 0.15:
            stream.delete((pk,), ttl_expiry=rng.random() < 0.3)
            continue
        stream.put(
            {
                "pk": pk,
                "customerId": rng.choice(CUSTOMERS),
                "status": rng.choice(STATUSES),
                "amount": rng.randint(1, 500),
                "note": rng.choice(["", "gift", "b" * rng.randint(0, 30)]),
            }
        )


class FlakyTransactions(TransactionHooks):
    """Every ``every``-th TransactWriteItems is throttled; the one after it commits but its
    response is lost (the runtime sees a timeout and the batch is redelivered)."""

    def __init__(self, client: Any, every: int) -> None:
        super().__init__(client)
        self.every, self.calls = every, 0

    def before(self, **_: Any) -> Any:
        self.calls += 1
        if self.calls % self.every == 0:
            return error_response("ThrottlingException", "Rate of requests exceeds the allowed")
        self.lose_response = self.calls % self.every == 1 and self.calls > 1
        return None


def consume(
    processor: StreamProcessor,
    records: list[dict[str, Any]],
    *,
    event: Callable[[list[dict[str, Any]]], dict[str, Any]],
    again: Callable[[list[dict[str, Any]], dict[str, Any]], list[Any]],
    seed: int,
) -> None:
    """Lambda's delivery: batches of 1-40 records, resumed from the reported record, and now
    and then a batch delivered again after it succeeded."""
    rng = random.Random(seed)
    position, invocations = 0, 0
    while position < len(records):
        batch = records[position : position + rng.randint(1, 40)]
        response = processor.handle(event(batch), FakeContext())
        invocations += 1
        assert invocations < 2000, "no progress"
        remaining = again(batch, response)
        if remaining:
            position = records.index(remaining[0])
            continue
        if rng.random() < 0.2:
            processor.handle(event(batch), FakeContext())
        position += len(batch)


@pytest.mark.parametrize(("seed", "precision"), [(1, "MICROSECOND"), (2, "MILLISECOND")])
def test_kinesis_out_of_order_and_repeated_views_end_equal_to_the_table(
    resources: Resources, seed: int, precision: str
) -> None:
    # A change every 1.5 ms: distinct times per item even in milliseconds.
    stream = TableStream(keys=("pk",), clock=MicrosecondClock(step_us=1500))
    write_orders(stream, 200, seed)
    delivery = KinesisDelivery(seed=seed, reorder=0.3, duplicate=0.15, precision=precision)
    records = delivery.deliver(stream.records)
    assert len(records) > len(stream.records)  # some delivered twice
    assert _out_of_order_items(records) > 0

    table = resources.new_table("replica")
    latest = LatestImage(table_name=table)
    processor = resources.processor(f"kinesis-{seed}")
    processor.projection(latest)
    order_stats = handler_module("order_stats")
    processor.projection(order_stats.order_stats)
    with (
        patched_environ({"VIEW_TABLE_NAME": resources.view_table}),
        FlakyTransactions(resources.dynamodb, every=7),
    ):
        consume(processor, records, event=kinesis_event, again=kinesis_redelivery, seed=seed)

    assert replica(resources, table, latest) == {key[0]: item for key, item in stream.items.items()}
    assert resources.view() == recompute(stream.items.values())
    assert resources.quarantined() == []


def _out_of_order_items(records: list[dict[str, Any]]) -> int:
    """How many records arrive after a newer change of the same item."""
    from cdc_consumer import Change

    newest: dict[Any, int] = {}
    late = 0
    for record in records:
        change = Change.from_record(record)
        key = change.keys["pk"]
        assert change.creation_time_us is not None
        if change.creation_time_us < newest.get(key, 0):
            late += 1
        newest[key] = max(newest.get(key, 0), change.creation_time_us)
    return late


def test_dynamodb_stream_route_keeps_the_replica_equal_too(resources: Resources) -> None:
    stream = TableStream(keys=("pk",), clock=MicrosecondClock(step_us=250_000))
    write_orders(stream, 100, seed=9)
    table = resources.new_table("replica")
    latest = LatestImage(table_name=table)
    processor = resources.processor("stream-replica")
    processor.projection(latest)
    consume(processor, stream.records, event=stream_event, again=redelivery, seed=9)
    assert replica(resources, table, latest) == {key[0]: item for key, item in stream.items.items()}


def test_older_and_equal_changes_are_no_ops_and_a_tombstone_stays(resources: Resources) -> None:
    stream = TableStream(keys=("pk",), clock=MicrosecondClock())
    first = stream.put({"pk": "a", "n": 1})
    second = stream.put({"pk": "a", "n": 2})
    removed = stream.delete(("a",))
    table = resources.new_table("replica")
    latest = LatestImage(table_name=table)
    processor = resources.processor("guard")
    processor.projection(latest)

    def send(*changes: Any, start: int = 0) -> None:
        records = [
            kinesis_record(kinesis_data(change), sequence_number=str(start + n))
            for n, change in enumerate(changes)
        ]
        assert processor.handle(kinesis_event(records), FakeContext()) == {"batchItemFailures": []}

    send(second)
    send(first, start=10)  # older: no-op
    assert replica(resources, table, latest) == {"a": {"pk": "a", "n": 2}}
    send(second, start=20)  # the same change again (a new Kinesis record): no-op
    send(removed, start=30)
    send(first, second, start=40)  # older than the delete: the item does not come back
    assert replica(resources, table, latest) == {}
    (tombstone,) = resources.scan(table)
    assert tombstone["cdc_deleted"] is True
    assert tombstone["cdc_version"] == Change_version(removed, "30")


@pytest.mark.parametrize(
    ("asked_days", "kept_days"),
    [(3, 45), (60, 60)],  # below the marker lifetime: the lifetime; above: as asked
)
def test_a_tombstone_outlives_the_consumers_replay_windows(
    resources: Resources, monkeypatch: pytest.MonkeyPatch, asked_days: int, kept_days: int
) -> None:
    """A tombstone guards the delete's version: expiring before a late replay of an older change
    (a redrive of the failed-batch bucket on day 14) would bring the item back (issue 23 §1)."""
    day, now = 24 * 3600, 1_800_000_000
    monkeypatch.setenv("CDC_MARKER_TTL_SECONDS", str(45 * day))
    stream = TableStream(keys=("pk",), clock=MicrosecondClock())
    stream.put({"pk": "a", "n": 1})
    removed = stream.delete(("a",))
    table = resources.new_table("replica")
    latest = LatestImage(
        table_name=table, tombstone_ttl=("expireAt", asked_days * day), clock=lambda: now
    )
    processor = resources.processor("tombstones")
    processor.projection(latest)
    record = kinesis_record(kinesis_data(removed), sequence_number="1")
    assert processor.handle(kinesis_event([record]), FakeContext()) == {"batchItemFailures": []}
    (tombstone,) = resources.scan(table)
    assert tombstone["expireAt"] == now + kept_days * day


def Change_version(stream_change: dict[str, Any], sequence_number: str) -> str:
    from cdc_consumer import Change

    return Change.from_record(
        kinesis_record(kinesis_data(stream_change), sequence_number=sequence_number)
    ).version


def test_latest_image_refuses_what_it_cannot_write() -> None:
    from cdc_consumer import Change, ConfigurationError, PermanentError

    with pytest.raises(ConfigurationError, match="exactly one of table_name and table_name_env"):
        LatestImage()
    stream = TableStream(keys=("pk",), clock=MicrosecondClock())
    record = stream.put({"pk": "a", "cdc_version": "mine"})
    with pytest.raises(PermanentError, match="cdc_version"):
        LatestImage(table_name="t")(Change.from_record(record))
    keys_only = dict(stream.put({"pk": "a", "n": 1}) or {})
    keys_only["dynamodb"] = {k: v for k, v in keys_only["dynamodb"].items() if k != "NewImage"}
    with pytest.raises(PermanentError, match="no NEW image"):
        LatestImage(table_name="t")(Change.from_record(keys_only))


def test_a_write_alone_on_an_item_a_transaction_holds_is_tried_again(
    resources: Resources, faults: Any
) -> None:
    """DynamoDB answers a PutItem on an item another transaction holds at that moment with
    TransactionConflictException (nothing written): the runtime backs off and writes it again,
    in the same invocation, instead of failing the batch."""
    table = resources.new_table("replica")
    waits: list[float] = []
    processor = resources.processor(sleep=waits.append)
    processor.projection(LatestImage(table_name=table))
    stream = TableStream()
    records = [stream.put({"pk": f"k{n}", "v": n}) for n in range(3)]
    refused: list[bool] = []

    def conflict_once(body: dict[str, Any]) -> Any:
        if refused:
            return None
        refused.append(True)
        return error_response("TransactionConflictException", "Transaction is ongoing")

    faults(resources.dynamodb).on("PutItem", conflict_once)
    assert processor.handle(stream_event(records), FakeContext()) == {"batchItemFailures": []}
    assert refused and len(waits) == 1
    items = resources.dynamodb.scan(TableName=table)["Items"]
    assert sorted(item["pk"]["S"] for item in items) == ["k0", "k1", "k2"]
