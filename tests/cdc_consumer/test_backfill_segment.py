"""The segment function: its start step refuses bad input before anything is written; its
segments scan in pages, resume after a deadline or a failure, and a rerun is a no-op."""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from cdc_consumer import ConsumerGroup, Contributions, GroupMember, LatestImage
from cdc_consumer.backfill.handler import Backfill
from cdc_consumer.backfill.settings import BackfillSettings
from cdc_consumer.backfill.shapes import (
    BACKFILL_REFUSED_ERROR,
    BackfillPlan,
    BackfillRequest,
    SegmentResult,
    SegmentTask,
)
from cdc_consumer.environment_variables import CONSUMER_PROGRESS_ENV
from cdc_consumer.exceptions import BackfillError, BackfillRefusedError
from cdc_consumer.redrive.invokers import CallableInvoker
from cdc_consumer.testing import FakeContext, TableStream, serialize, stream_event

from cdc_local.endpoint import patched_environ
from tests.cdc_consumer.fixtures import Resources, create_table
from tests.reference_app.handlers.orders import handler_module, recompute

CONSUMER_FUNCTION = "orders-consumer"


class Mappings:
    """The Lambda API's ListEventSourceMappings, as the test wants it to answer."""

    def __init__(self, *states: str, start: str = "TRIM_HORIZON") -> None:
        self.states = states
        self.start = start

    def list_event_source_mappings(self, **request: Any) -> dict[str, Any]:
        return {
            "EventSourceMappings": [
                {
                    "UUID": f"m{i}",
                    "State": state,
                    "StartingPosition": self.start,
                    "LastModified": datetime.fromtimestamp(time.time() - 600, UTC),
                }
                for i, state in enumerate(self.states)
            ]
        }


class World:
    def __init__(self, resources: Resources, orders: int = 9, customers: int = 3) -> None:
        self.resources = resources
        self.source = f"orders-{uuid.uuid4().hex[:8]}"
        create_table(resources.dynamodb, self.source, stream=True)
        self.stream_arn = resources.dynamodb.describe_table(TableName=self.source)["Table"][
            "LatestStreamArn"
        ]
        self.orders = {}
        for n in range(orders):
            order = {
                "pk": f"ORDER#{n:06d}",
                "customerId": f"c{n % customers}",
                "status": "paid",
                "amount": n,
            }
            self.orders[order["pk"]] = order
        puts = [{"PutRequest": {"Item": serialize(order)}} for order in self.orders.values()]
        for start in range(0, len(puts), 25):
            request = {self.source: puts[start : start + 25]}
            while request:
                answer = resources.dynamodb.batch_write_item(RequestItems=request)
                request = answer.get("UnprocessedItems") or {}
        order_stats = handler_module("order_stats")
        self.consumer = resources.processor("order-stats")
        self.consumer.projection(
            Contributions(
                "order-stats",
                order_stats.order_shares,
                select=order_stats.is_order,
                table_name=resources.idempotency_table,
                dynamodb_client=resources.dynamodb,
            )
        )
        self.consumer_handle = self.consumer.handle
        self.invocations = 0
        self.fail_next = 0

    def invoke(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.invocations += 1
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("Rate exceeded")  # a throttled invoke
        with patched_environ({"VIEW_TABLE_NAME": self.resources.view_table}):
            return self.consumer_handle(event, context)

    def record_progress(self, at: float | None = None) -> None:
        stream = TableStream(clock=lambda: at or time.time())
        stream.put({"pk": "OTHER#1", "note": "a change the consumer applies"})
        with patched_environ(
            {CONSUMER_PROGRESS_ENV: "1", "VIEW_TABLE_NAME": self.resources.view_table}
        ):
            assert self.consumer_handle(stream_event(stream.records), FakeContext())

    def backfill(
        self,
        mappings: Mappings | None = None,
        sleep: Callable[[float], None] = lambda s: None,
        page_size: int | None = 2,
    ) -> Backfill:
        settings = BackfillSettings(
            table=self.source,
            stream_arn=self.stream_arn,
            consumer_function=CONSUMER_FUNCTION,
            consumer="order-stats",
            idempotency_table=self.resources.idempotency_table,
        )
        if page_size is not None:  # None: the runtime's default page
            settings = dataclasses.replace(settings, page_size=page_size)
        invoker = CallableInvoker(self.invoke, function_name=CONSUMER_FUNCTION)
        return Backfill(
            settings, self.resources.dynamodb, mappings or Mappings("Enabled"), invoker, sleep=sleep
        )

    def written(self) -> list[dict[str, Any]]:
        return self.resources.scan(self.resources.view_table) + self.resources.markers()


def run_all(backfill: Backfill, plan: BackfillPlan, context: Any = None) -> list[SegmentResult]:
    """Every segment to its end, as the state machine's loop does (done: false: again)."""
    results = []
    for task in plan.tasks():
        result = SegmentResult.from_dict(backfill.handle(task.to_dict(), context))
        while not result.done:
            result = SegmentResult.from_dict(backfill.handle(result.to_dict(), context))
        results.append(result)
    return results


def test_a_backfill_fills_the_view_and_a_rerun_writes_nothing(resources: Resources) -> None:
    world = World(resources)
    world.record_progress()
    backfill = world.backfill()

    plan = BackfillPlan.from_dict(backfill.handle(BackfillRequest("b1", 3).to_dict()))
    results = run_all(backfill, plan)

    assert sum(r.items for r in results) == 9
    assert resources.view() == recompute(world.orders.values())
    before, invocations = world.written(), world.invocations
    assert all(r.done for r in run_all(backfill, plan))
    assert world.invocations == invocations  # each segment's record says it is done
    assert world.written() == before


def test_the_default_page_writes_at_most_2_5_units_an_item_at_a_fan_in_of_ten(
    resources: Resources,
) -> None:
    """Issue 29: 1,000 orders of 100 customers, in one segment with the runtime's default
    page: each order's contribution (2 units in a transaction) and about one ADD per customer
    and page (docs/design.md §11: about 2 + 2 V/P units an item). Pages of 100 wrote 4: the
    scan returns orders in the order written here, so 100 consecutive orders are 100
    customers and nothing merged."""
    world = World(resources, orders=1_000, customers=100)
    world.record_progress()
    backfill = world.backfill(page_size=None)
    plan = BackfillPlan.from_dict(backfill.handle(BackfillRequest("cost", 1).to_dict()))
    written = {"transactional": 0, "alone": 0}

    def count(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "TransactWriteItems":
            written["transactional"] += len(params["TransactItems"])
        elif model.name in ("PutItem", "UpdateItem", "DeleteItem"):
            written["alone"] += 1

    resources.dynamodb.meta.events.register("provide-client-params.dynamodb.*", count)
    invocations = world.invocations
    results = run_all(backfill, plan)

    assert sum(r.items for r in results) == 1_000
    assert resources.view() == recompute(world.orders.values())
    # Every item written is well under 1 KB: 2 units in a transaction, 1 alone.
    units = 2 * written["transactional"] + written["alone"]
    assert units / 1_000 <= 2.5
    assert world.invocations - invocations == 1  # the page of 1,000 in one invocation


def test_a_segment_stops_before_its_deadline_and_resumes_there(resources: Resources) -> None:
    world = World(resources)
    world.record_progress()
    backfill = world.backfill()
    plan = BackfillPlan.from_dict(backfill.handle(BackfillRequest("b2", 1).to_dict()))
    left = iter([60_000, 60_000, 60_000, 1_000] * 10)  # each invocation: two pages, then stop
    context = FakeContext(remaining_ms=lambda: next(left))

    first = SegmentResult.from_dict(backfill.handle(plan.tasks()[0].to_dict(), context))
    assert not first.done and first.pages == 2 and first.task.resume_key is not None
    results = run_all(backfill, plan, context)

    assert results[0].done and results[0].items == 9
    assert resources.view() == recompute(world.orders.values())


def test_a_failed_segment_resumes_from_its_last_applied_page(resources: Resources) -> None:
    world = World(resources)
    world.record_progress()
    slept: list[float] = []
    backfill = world.backfill(sleep=slept.append)
    plan = BackfillPlan.from_dict(backfill.handle(BackfillRequest("b3", 1).to_dict()))
    task = plan.tasks()[0]

    world.fail_next = 1  # one throttled invoke: retried after a backoff
    first = SegmentResult.from_dict(backfill.handle(task.to_dict()))
    assert first.done and slept == [0.2]
    world.fail_next = 99
    other = SegmentTask("b4", 0, 1, plan.horizon)
    with pytest.raises(BackfillError, match="resumes from its last applied page"):
        backfill.handle(other.to_dict())
    world.fail_next = 0
    assert SegmentResult.from_dict(backfill.handle(other.to_dict())).done
    assert resources.view() == recompute(world.orders.values())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda w, b: setattr(b, "lambda_client", Mappings("Disabled")), "is not running"),
        (lambda w, b: setattr(b, "lambda_client", Mappings()), "no mapping"),
        (lambda w, b: w.consumer.projection(lambda c: []), "cannot take snapshot rows"),
        (lambda w, b: None, "has recorded no progress"),
    ],
    ids=["mapping disabled", "no mapping", "delta projection", "no progress"],
)
def test_the_start_step_refuses_before_anything_is_written(
    resources: Resources, change: Callable[[World, Backfill], Any], message: str
) -> None:
    world = World(resources)
    if "progress" not in message:
        world.record_progress()
    backfill = world.backfill()
    change(world, backfill)
    before = world.written()

    with pytest.raises(BackfillRefusedError, match=message):
        backfill.handle(BackfillRequest("bad", 4).to_dict())
    assert world.written() == before


def test_the_start_step_refuses_a_horizon_the_consumer_has_not_passed(
    resources: Resources,
) -> None:
    world = World(resources)
    applied = int(time.time()) - 60
    world.record_progress(at=applied)
    backfill = world.backfill()

    with pytest.raises(BackfillRefusedError, match="has not passed the horizon"):
        backfill.handle(BackfillRequest("b", 1, horizon=int(time.time()) - 30).to_dict())
    plan = BackfillPlan.from_dict(backfill.handle(BackfillRequest("b", 1).to_dict()))
    assert plan.horizon == applied  # the consumer's progress, not now - skew


@pytest.mark.parametrize("total", [0, 1_000_001])
def test_a_segment_count_out_of_range_is_refused(resources: Resources, total: int) -> None:
    world = World(resources, orders=0)
    with pytest.raises(BackfillRefusedError, match=r"1\.\.1,000,000 segments"):
        world.backfill().handle(BackfillRequest("b", total).to_dict())


def test_a_table_without_a_stream_is_refused(resources: Resources) -> None:
    world = World(resources, orders=0)
    backfill = world.backfill()
    backfill.settings = BackfillSettings(
        **{**backfill.settings.__dict__, "table": resources.view_table}
    )
    with pytest.raises(BackfillRefusedError, match="has no stream"):
        backfill.handle(BackfillRequest("b", 2).to_dict())


def test_a_latest_image_replica_is_backfilled_too(resources: Resources) -> None:
    world = World(resources)
    replica = LatestImage(table_name=resources.new_table("replica"))
    world.consumer.projection(replica)
    world.record_progress()
    backfill = world.backfill()
    plan = BackfillPlan.from_dict(backfill.handle(BackfillRequest("b5", 2).to_dict()))
    run_all(backfill, plan)

    assert replica.table_name is not None
    items = [replica.image(item) for item in resources.scan(replica.table_name)]
    assert {i["pk"]: i for i in items if i and i["pk"].startswith("ORDER#")} == world.orders


def test_the_refusal_is_the_error_type_the_state_machine_matches() -> None:
    assert BackfillRefusedError.__name__ == BACKFILL_REFUSED_ERROR


def test_rows_the_mapping_filter_would_drop_are_not_handed_over(resources: Resources) -> None:
    world = World(resources)
    world.record_progress()
    backfill = world.backfill()
    pattern = {"dynamodb": {"NewImage": {"customerId": {"S": ["c1"]}}}}
    backfill.settings = BackfillSettings(**{**backfill.settings.__dict__, "filters": (pattern,)})
    plan = BackfillPlan.from_dict(backfill.handle(BackfillRequest("f", None).to_dict()))
    assert plan.total_segments == 1  # a small table: one segment
    run_all(backfill, plan)

    c1 = [order for order in world.orders.values() if order["customerId"] == "c1"]
    assert resources.view() == recompute(c1)


def test_a_group_hands_a_backfill_to_the_member_backfilled_only(resources: Resources) -> None:
    world = World(resources)
    other = resources.processor("replica")
    replica = LatestImage(table_name=resources.new_table("replica"))
    other.projection(replica)
    group = ConsumerGroup([GroupMember(world.consumer), GroupMember(other)])
    world.consumer_handle = group.handle
    world.record_progress()
    backfill = world.backfill()
    plan = BackfillPlan.from_dict(backfill.handle(BackfillRequest("g", 2).to_dict()))
    run_all(backfill, plan)

    assert resources.view() == recompute(world.orders.values())
    assert replica.table_name is not None
    assert [i for i in resources.scan(replica.table_name) if i["pk"].startswith("ORDER#")] == []
