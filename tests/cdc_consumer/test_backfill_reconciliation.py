"""Snapshot rows and stream changes reconcile by the time horizon (docs/backfill.md).

For any interleaving of a backfill's snapshot rows with the stream's changes of the same items
(changes before the horizon partly trimmed, deletes during the scan, items created after it,
duplicates and redeliveries), both the order-stats aggregate (kept as per-order contributions)
and a latest-image replica end equal to their recomputation from the table.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from cdc_consumer import Contributions, LatestImage, SnapshotRefusedError, StreamProcessor
from cdc_consumer.testing import FakeContext, TableStream, snapshot_event, stream_event
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_local.endpoint import patched_environ
from tests.cdc_consumer.fixtures import Resources, create_table
from tests.reference_app.handlers.orders import handler_module, recompute

ORDERS = [f"ORDER#{n}" for n in range(4)]
HORIZON = 2_000  # epoch seconds


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


write = st.tuples(
    st.sampled_from(ORDERS),
    st.one_of(
        st.none(),  # a delete (a TTL expiry half the time)
        st.tuples(
            st.sampled_from(["c1", "c2"]),
            st.sampled_from(["pending", "paid", "shipped"]),
            st.integers(1, 9),
        ),
    ),
    st.booleans(),
)


def apply(stream: TableStream, op: tuple[str, Any, bool]) -> None:
    pk, order, ttl = op
    if order is None:
        if (pk,) in stream.items:
            stream.delete((pk,), ttl_expiry=ttl)
        return
    customer, status, amount = order
    stream.put({"pk": pk, "customerId": customer, "status": status, "amount": amount})


class World:
    """Fresh tables for one example (hypothesis runs many in one test's fixture): the
    idempotency table (markers and contributions), the order-stats view, a replica."""

    def __init__(self, resources: Resources) -> None:
        self.resources = resources
        self.idempotency = f"idempotency-{uuid.uuid4().hex[:8]}"
        create_table(resources.dynamodb, self.idempotency, key="id")
        self.view_table = resources.new_table("view")
        self.replica_table = resources.new_table("replica")
        order_stats = handler_module("order_stats")
        self.processor = StreamProcessor(
            "order-stats",
            idempotency_table=self.idempotency,
            quarantine_queue_url=resources.queue_url,
            dynamodb_client=resources.dynamodb,
            sqs_client=resources.sqs,
        )
        self.processor.projection(
            Contributions(
                "order-stats",
                order_stats.order_shares,
                select=order_stats.is_order,
                table_name=self.idempotency,
                dynamodb_client=resources.dynamodb,
            )
        )
        self.latest = LatestImage(table_name=self.replica_table)
        self.processor.projection(self.latest)

    def view(self) -> dict[str, dict[str, Any]]:
        view = {
            item["pk"]: {k: v for k, v in item.items() if k != "pk" and v != 0}
            for item in self.resources.scan(self.view_table)
        }
        return {pk: attributes for pk, attributes in view.items() if attributes}

    def replica(self) -> dict[str, dict[str, Any]]:
        images = (self.latest.image(item) for item in self.resources.scan(self.replica_table))
        return {image["pk"]: image for image in images if image is not None}


def deliveries(
    stream_records: list[dict[str, Any]],
    snapshot_rows: list[dict[str, Any]],
    rng: random.Random,
) -> list[dict[str, Any]]:
    """Stream records in stream order and snapshot rows, interleaved at random, cut into
    batches (each an event), some batches delivered twice (a crash after commit, a retry)."""
    units: list[tuple[str, dict[str, Any]]] = [("stream", r) for r in stream_records]
    for row in snapshot_rows:
        units.insert(rng.randint(0, len(units)), ("snapshot", row))
    events: list[dict[str, Any]] = []
    while units:
        kind = units[0][0]
        size = rng.randint(1, 6)
        batch = []
        while units and units[0][0] == kind and len(batch) < size:
            batch.append(units.pop(0)[1])
        if kind == "stream":
            events.append(stream_event(batch))
        else:
            events.append(snapshot_event(batch, horizon=HORIZON))
        if rng.random() < 0.25:
            events.append(events[rng.randrange(len(events))])  # a redelivery, later
    return events


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    before=st.lists(write, max_size=10),
    during=st.lists(write, max_size=12),
    reads=st.lists(st.integers(0, 12), min_size=len(ORDERS), max_size=len(ORDERS)),
    trimmed=st.integers(0, 6),
    seed=st.integers(0, 10_000),
)
def test_any_interleaving_reconciles_with_the_table(
    resources: Resources,
    before: list[Any],
    during: list[Any],
    reads: list[int],
    trimmed: int,
    seed: int,
) -> None:
    rng = random.Random(seed)
    clock = Clock(HORIZON - 100)
    stream = TableStream(clock=clock)
    for op in before:  # written before the horizon: some of them trimmed from the stream
        clock.now += rng.choice([0, 1])
        apply(stream, op)
    early = stream.records[trimmed:]
    stream.records = []
    clock.now = HORIZON  # the scan starts; changes from here on are created at or after it
    rows: list[dict[str, Any]] = []
    for index in range(len(during) + 1):
        for pk, at in zip(ORDERS, reads, strict=True):
            if min(at, len(during)) == index and (pk,) in stream.items:
                rows.append(dict(stream.items[(pk,)]))  # the scan reads the item now
        if index < len(during):
            clock.now += rng.choice([0, 0, 1])
            apply(stream, during[index])

    world = World(resources)
    with patched_environ({"VIEW_TABLE_NAME": world.view_table}):
        for event in deliveries(early + stream.records, rows, rng):
            assert world.processor.handle(event, FakeContext())["batchItemFailures"] == []

    assert world.view() == recompute(stream.items.values())
    assert world.replica() == {key[0]: _plain(item) for key, item in stream.items.items()}


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    return {k: Decimal(v) if isinstance(v, int) else v for k, v in item.items()}


# --- refusals --------------------------------------------------------------------------------


def delta(change: Any) -> list[dict[str, Any]]:
    return []


@pytest.mark.parametrize(
    "register",
    [
        lambda p: p.projection(delta, reads=["NewImage", "OldImage"]),
        lambda p: p.side_effect(delta, name="notify"),
    ],
    ids=["delta projection", "side effect"],
)
def test_a_snapshot_batch_is_refused_before_anything_is_written(
    resources: Resources, register: Callable[[StreamProcessor], Any]
) -> None:
    processor = resources.processor("refuses")
    processor.projection(LatestImage(table_name=resources.view_table))
    register(processor)
    rows = [{"pk": "ORDER#1", "customerId": "c1", "status": "paid", "amount": 3}]

    with pytest.raises(SnapshotRefusedError, match="cannot take snapshot rows") as refused:
        processor.handle(snapshot_event(rows, horizon=HORIZON), FakeContext())

    assert "nothing was written" in str(refused.value)
    assert resources.scan(resources.view_table) == []
    assert resources.markers() == []


def test_a_probe_answers_without_writing(resources: Resources) -> None:
    processor = resources.processor("replica")
    processor.projection(LatestImage(table_name=resources.view_table))
    probe = snapshot_event([], horizon=HORIZON)
    probe["cdcBackfill"]["probe"] = True

    response = processor.handle(probe, FakeContext())

    assert response == {"batchItemFailures": [], "cdcBackfill": {"consumer": "replica"}}
    assert resources.scan(resources.view_table) == []


# --- each rule of the reconciliation, deterministically ---------------------------------------

PENDING = {"pk": "ORDER#1", "customerId": "c1", "status": "pending", "amount": 3}
PAID = {**PENDING, "status": "paid"}


def reconciled(resources: Resources, events: list[dict[str, Any]]) -> World:
    world = World(resources)
    with patched_environ({"VIEW_TABLE_NAME": world.view_table}):
        for event in events:
            assert world.processor.handle(event, FakeContext())["batchItemFailures"] == []
    return world


@pytest.mark.parametrize("row_first", [True, False], ids=["row first", "change first"])
def test_a_change_stamped_at_the_horizon_beats_a_row_read_before_it(
    resources: Resources, row_first: bool
) -> None:
    stream = TableStream(clock=lambda: HORIZON)  # the change is stamped at the horizon exactly
    stream.items[("ORDER#1",)] = dict(PENDING)
    row = dict(PENDING)  # read before the change
    change = stream.update(("ORDER#1",), status="paid")
    events = [snapshot_event([row], horizon=HORIZON), stream_event([change])]

    world = reconciled(resources, events if row_first else events[::-1])

    assert world.view() == recompute([PAID])
    assert world.replica() == {"ORDER#1": _plain(PAID)}


@pytest.mark.parametrize("row_first", [True, False], ids=["row first", "change first"])
@pytest.mark.parametrize("before", [1, 100], ids=["a second before", "long before"])
def test_a_row_beats_every_change_created_before_the_horizon(
    resources: Resources, row_first: bool, before: int
) -> None:
    stream = TableStream(clock=lambda: HORIZON - before)
    change = stream.put(dict(PENDING))  # created before the horizon
    row = dict(PAID)  # the item as the scan reads it, after the horizon
    events = [snapshot_event([row], horizon=HORIZON), stream_event([change])]

    world = reconciled(resources, events if row_first else events[::-1])

    assert world.view() == recompute([PAID])
    assert world.replica() == {"ORDER#1": _plain(PAID)}
