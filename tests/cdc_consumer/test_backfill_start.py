"""The start step at production edges (issue 31): one horizon per backfill id, horizons the
stream cannot cover refused, bad input refused before anything is written, group membership
decided by the runtime's filter matcher, one execution at a time, segments from the table's
size when the backfill starts, a steady rate, and a rebuild over an unchanged view that writes
nothing."""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError
from cdc_consumer import AccessDeniedError, ConsumerGroup, GroupMember, LatestImage
from cdc_consumer.backfill.handler import Backfill
from cdc_consumer.backfill.rate import RateLimit
from cdc_consumer.backfill.settings import BackfillSettings
from cdc_consumer.backfill.shapes import (
    BackfillPlan,
    BackfillRequest,
    ConsumerProgress,
    SegmentTask,
)
from cdc_consumer.exceptions import BackfillRefusedError

from tests.cdc_consumer.fixtures import Resources
from tests.cdc_consumer.test_backfill_segment import World, run_all
from tests.reference_app.handlers.orders import recompute

DAY = 24 * 3600


def plan(backfill: Backfill, request: BackfillRequest | dict[str, Any]) -> BackfillPlan:
    document = request.to_dict() if isinstance(request, BackfillRequest) else request
    return BackfillPlan.from_dict(backfill.handle(document))


def record_progress(world: World, first: int, applied: int) -> None:
    """The consumer's progress record as its runtime writes it: first and newest change."""
    world.resources.dynamodb.put_item(
        TableName=world.resources.idempotency_table,
        Item={
            "id": {"S": ConsumerProgress.record_id("order-stats")},
            ConsumerProgress.APPLIED_UNTIL: {"N": str(applied * 1_000_000)},
            ConsumerProgress.FIRST_APPLIED: {"N": str(first * 1_000_000)},
        },
    )


def with_settings(backfill: Backfill, **changes: Any) -> Backfill:
    backfill.settings = BackfillSettings(**{**backfill.settings.__dict__, **changes})
    return backfill


# --- one horizon per backfill id -------------------------------------------------------------


def test_starting_a_backfill_again_resumes_under_its_first_horizon(resources: Resources) -> None:
    world = World(resources)
    applied = int(time.time()) - 120
    record_progress(world, applied, applied)
    backfill = world.backfill()
    first = plan(backfill, BackfillRequest("again", 3))
    record_progress(world, applied, applied + 100)  # the consumer moves on; the clock too

    again = plan(backfill, BackfillRequest("again", None))

    assert first.horizon == applied
    assert again.horizon == first.horizon and again.total_segments == 3
    run_all(backfill, again)
    assert resources.view() == recompute(world.orders.values())


@pytest.mark.parametrize(
    "request_again",
    [
        lambda horizon: BackfillRequest("once", None, horizon=horizon - 10),
        lambda horizon: BackfillRequest("once", 5),
    ],
    ids=["another horizon", "another segment count"],
)
def test_another_plan_for_a_started_backfill_is_refused_before_any_write(
    resources: Resources, request_again: Any
) -> None:
    world = World(resources)
    world.record_progress(at=int(time.time()) - 120)
    backfill = world.backfill()
    first = plan(backfill, BackfillRequest("once", 3))
    backfill.handle(first.tasks()[0].to_dict())  # one segment has run, the others not
    before = world.written()

    with pytest.raises(BackfillRefusedError, match="resumes it under its own plan"):
        backfill.handle(request_again(first.horizon).to_dict())

    assert world.written() == before


# --- horizons the stream cannot cover ----------------------------------------------------------


@pytest.mark.parametrize(
    ("horizon", "message"),
    [
        ("1700000000", "horizon must be an integer"),
        (1_700_000_000.5, "horizon must be an integer"),
        (-5, "positive whole number of epoch seconds"),
        (0, "positive whole number of epoch seconds"),
        (int(time.time()) + 3600, "later than the start time less the skew margin"),
        (int(time.time()) - 2 * DAY, "older than the stream's retention"),
    ],
    ids=["text", "fraction", "negative", "zero", "future", "too old"],
)
def test_a_horizon_the_stream_cannot_cover_is_refused_before_anything_is_written(
    resources: Resources, horizon: Any, message: str
) -> None:
    world = World(resources)
    world.record_progress(at=int(time.time()) - 60)
    backfill = world.backfill()
    before = world.written()
    request = {"backfillId": "h", "totalSegments": 2, "horizon": horizon}

    with pytest.raises(BackfillRefusedError, match=message):
        backfill.handle(request)

    assert world.written() == before


def test_a_horizon_before_the_consumers_first_change_is_refused(resources: Resources) -> None:
    world = World(resources)
    first = int(time.time()) - 600
    record_progress(world, first, first + 500)

    with pytest.raises(BackfillRefusedError, match="first recorded change"):
        world.backfill().handle(BackfillRequest("early", 1, horizon=first - 100).to_dict())
    assert plan(world.backfill(), BackfillRequest("early", 1, horizon=first)).horizon == first


def test_a_skew_margin_below_the_minimum_is_refused(resources: Resources) -> None:
    world = World(resources)
    world.record_progress()
    backfill = with_settings(world.backfill(), skew_seconds=0)

    with pytest.raises(BackfillRefusedError, match="below the minimum of 1 s"):
        backfill.handle(BackfillRequest("skew", 1).to_dict())


def test_a_segment_task_with_a_fractional_horizon_is_refused_not_retried(
    resources: Resources,
) -> None:
    world = World(resources)
    task = {**SegmentTask("t", 0, 1, 1_700_000_000).to_dict(), "horizon": 1_700_000_000.5}

    with pytest.raises(BackfillRefusedError, match="must be an integer"):
        world.backfill().handle(task)


@pytest.mark.parametrize("backfill_id", ["with space", "a/b", "x" * 81, "a#b", "tab\there"])
def test_an_id_step_functions_refuses_is_refused_before_anything_is_written(
    resources: Resources, backfill_id: str
) -> None:
    world = World(resources)
    world.record_progress()
    before = world.written()

    with pytest.raises(BackfillRefusedError, match="Step Functions accepts as an execution name"):
        world.backfill().handle({"backfillId": backfill_id, "totalSegments": 1})
    assert world.written() == before


# --- group membership, decided by the runtime's filter matcher -------------------------------


def test_a_name_not_in_the_group_is_refused_even_with_progress(resources: Resources) -> None:
    world = World(resources)
    other = resources.processor("replica")
    other.projection(LatestImage(table_name=resources.new_table("replica")))
    world.record_progress()  # "order-stats" has progress...
    world.consumer_handle = ConsumerGroup([GroupMember(other)]).handle  # ...but is no member
    before = world.written()

    with pytest.raises(BackfillRefusedError, match="is not a member of the group"):
        world.backfill().handle(BackfillRequest("g", 1).to_dict())
    assert world.written() == before


def test_a_member_whose_filter_admits_rows_by_an_absent_identity_is_probed(
    resources: Resources,
) -> None:
    """``userIdentity`` with ``exists: false`` admits snapshot rows (they have none): the start
    step asks that member, and a delta projection there is refused before anything is written."""
    world = World(resources)
    world.consumer.projection(lambda change: [], reads=["NewImage", "OldImage"])  # a delta
    not_ttl = {"userIdentity": {"type": [{"exists": False}]}}
    world.consumer_handle = ConsumerGroup([GroupMember(world.consumer, [not_ttl])]).handle
    world.record_progress()
    before = world.written()

    with pytest.raises(BackfillRefusedError, match="cannot take snapshot rows"):
        world.backfill().handle(BackfillRequest("g", 1).to_dict())
    assert world.written() == before


def test_a_mapping_filter_that_admits_no_row_is_refused(resources: Resources) -> None:
    world = World(resources)
    world.record_progress()
    ttl_only = {"userIdentity": {"type": ["Service"]}}
    backfill = with_settings(world.backfill(), filters=(ttl_only,))

    with pytest.raises(BackfillRefusedError, match="admit no snapshot row"):
        backfill.handle(BackfillRequest("f", 1).to_dict())


# --- one execution at a time -----------------------------------------------------------------


class StepFunctions:
    def __init__(self, *running: str) -> None:
        self.running = running

    def list_executions(self, **request: Any) -> dict[str, Any]:
        assert request["statusFilter"] == "RUNNING"
        return {"executions": [{"executionArn": arn} for arn in self.running]}


def test_a_second_execution_of_a_running_backfill_is_refused(resources: Resources) -> None:
    world = World(resources)
    world.record_progress()
    backfill = world.backfill()
    machine = "arn:aws:states:eu-west-1:1:stateMachine:m"
    first, second = (f"arn:aws:states:eu-west-1:1:execution:m:{n}" for n in ("e1", "e2"))
    backfill.stepfunctions = StepFunctions(first)
    plan(backfill, BackfillRequest("x", 2, execution=first, state_machine=machine))

    with pytest.raises(BackfillRefusedError, match=r"is running in execution .*:e1"):
        backfill.handle(
            BackfillRequest("x", None, execution=second, state_machine=machine).to_dict()
        )

    backfill.stepfunctions = StepFunctions()  # the first one ended: the second resumes it
    resumed = plan(backfill, BackfillRequest("x", None, execution=second, state_machine=machine))
    assert resumed.total_segments == 2


# --- the table's size when the backfill starts ------------------------------------------------


def test_segments_come_from_the_table_when_the_backfill_starts(resources: Resources) -> None:
    world = World(resources)  # 9 orders, pages of 2
    world.record_progress()
    backfill = with_settings(world.backfill(), max_concurrency=4)

    assert plan(backfill, BackfillRequest("size", None)).total_segments == 4


def test_a_backfill_that_cannot_finish_before_the_timeout_is_refused(resources: Resources) -> None:
    world = World(resources)  # 9 orders
    world.record_progress()
    backfill = with_settings(
        world.backfill(), items_per_second=0.001, max_concurrency=2, execution_timeout_seconds=3600
    )
    before = world.written()

    with pytest.raises(BackfillRefusedError, match=r"take about 1\.2 h.* after 1\.0 h"):
        backfill.handle(BackfillRequest("slow", 2).to_dict())
    assert world.written() == before


# --- permanent errors -------------------------------------------------------------------------


class Denied:
    def __getattr__(self, name: str) -> Any:
        def call(**_: Any) -> Any:
            error = {"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}}
            raise ClientError(error, name)

        return call


def test_a_denied_call_is_an_access_denied_error_not_a_retried_one(resources: Resources) -> None:
    world = World(resources)
    backfill = world.backfill()
    backfill.dynamodb = Denied()

    with pytest.raises(AccessDeniedError, match="grant it to the function's role"):
        backfill.handle(BackfillRequest("d", 1).to_dict())


# --- a steady rate ----------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_the_rate_holds_after_a_stall_with_a_burst_of_one_page() -> None:
    clock = Clock()
    limit = RateLimit(10.0, clock, clock.sleep, burst=10)
    sent: list[float] = []
    for page in range(20):
        if page == 5:
            clock.now += 30  # a 30-second stall
        limit.wait()
        sent.append(clock.now)
        limit.took(10)

    after_stall = [b - a for a, b in itertools.pairwise(sent[5:])]
    assert sent[5] == pytest.approx(34.0)  # the first page after the stall goes at once...
    assert all(gap == pytest.approx(1.0) for gap in after_stall)  # ...then one per second


# --- a rebuild over an unchanged view ---------------------------------------------------------


def test_a_second_rebuild_over_an_unchanged_view_writes_nothing(resources: Resources) -> None:
    world = World(resources)
    applied = int(time.time()) - 30
    record_progress(world, applied - 100, applied)
    backfill = world.backfill()
    run_all(backfill, plan(backfill, BackfillRequest("first", 2, horizon=applied - 60)))
    contributions = [i for i in world.written() if "#contribution#" in str(i.get("id"))]
    view = resources.scan(resources.view_table)

    second = plan(backfill, BackfillRequest("second", 2))
    run_all(backfill, second)

    assert second.horizon == applied  # rows newer than the first rebuild's, the same states
    assert [i for i in world.written() if "#contribution#" in str(i.get("id"))] == contributions
    assert resources.scan(resources.view_table) == view
