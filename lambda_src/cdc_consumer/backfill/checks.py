"""The start step: every refusal before anything is written, and the plan (docs/backfill.md).

Refused, each with what was wrong, the value, and what would be right
(:class:`BackfillRefusedError`): a segment count outside Scan's range; a table without a
stream, or whose stream is not the consumer's; a consumer function without a running event
source mapping on that stream, or one that starts at LATEST and was changed after the horizon;
a horizon the stream cannot cover or the consumer has not read (:mod:`.horizon`); a backfill id
started again with another horizon or segment count than it was planned with, or while another
execution runs it (:mod:`.plan_store`); a consumer the function does not run, a group member
whose filters admit no snapshot row, or projections that cannot take rows (the probe).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cdc_consumer.backfill import defaults
from cdc_consumer.backfill.horizon import HorizonRules, check_horizon_value, check_skew
from cdc_consumer.backfill.plan_store import PlanStore, StoredPlan
from cdc_consumer.backfill.settings import BackfillSettings
from cdc_consumer.backfill.shapes import (
    BACKFILL_EVENT_KEY,
    MAX_PLANNED_SEGMENTS,
    SEGMENT_BYTES,
    BackfillPlan,
    BackfillRequest,
    SnapshotBatch,
)
from cdc_consumer.exceptions import BackfillRefusedError, InvocationError, SnapshotRefusedError
from cdc_consumer.filter_patterns import FilterCriteria
from cdc_consumer.progress import read_progress
from cdc_consumer.redrive.invokers import Invoker
from cdc_consumer.service_limits import MAX_TOTAL_SEGMENTS, MIN_TOTAL_SEGMENTS
from cdc_consumer.snapshots import admits_snapshot_rows

__all__ = ["StartCheck", "check_segments", "segments_for"]


def check_segments(segment: int | None, total_segments: int) -> None:
    """Scan's ``Segment`` / ``TotalSegments`` ranges."""
    if not MIN_TOTAL_SEGMENTS <= total_segments <= MAX_TOTAL_SEGMENTS:
        raise BackfillRefusedError(
            f"totalSegments is {total_segments}; DynamoDB's Scan takes "
            f"{MIN_TOTAL_SEGMENTS}..{MAX_TOTAL_SEGMENTS:,} segments"
        )
    if segment is not None and not 0 <= segment < total_segments:
        raise BackfillRefusedError(
            f"segment is {segment}; with totalSegments {total_segments} it is "
            f"0..{total_segments - 1}"
        )


def _check_planned(total_segments: int) -> None:
    check_segments(None, total_segments)
    if total_segments > MAX_PLANNED_SEGMENTS:
        raise BackfillRefusedError(
            f"totalSegments is {total_segments:,}; a backfill plans at most "
            f"{MAX_PLANNED_SEGMENTS:,} (its list of segments passes through the state machine's "
            "256 KB payload): give fewer, each scans more"
        )


def segments_for(table_bytes: int, items: int = 0, concurrency: int = 1, page: int = 1) -> int:
    """One segment per :data:`SEGMENT_BYTES` of the table (DynamoDB's parallel-scan guidance),
    at least as many as run at once (``concurrency``) while the table has a page of items for
    each, within 1..MAX_PLANNED_SEGMENTS."""
    by_size = -(-table_bytes // SEGMENT_BYTES)
    by_items = min(concurrency, -(-items // max(page, 1)))
    return max(1, min(MAX_PLANNED_SEGMENTS, max(by_size, by_items)))


@dataclass
class StartCheck:
    """Validates a :class:`BackfillRequest` and makes its :class:`BackfillPlan`; nothing is
    written before every check passed (the plan record is the first write)."""

    settings: BackfillSettings
    dynamodb: Any
    lambda_client: Any
    invoker: Invoker
    clock: Callable[[], float]
    stepfunctions: Any = None

    def plan(self, request: BackfillRequest) -> BackfillPlan:
        check_skew(self.settings.skew_seconds)
        if request.total_segments is not None:
            _check_planned(request.total_segments)
        if request.horizon is not None:
            check_horizon_value(request.horizon)
        table = self.check_stream()
        running = self.running_mappings()
        plans = PlanStore(
            self.dynamodb, self.settings.idempotency_table, self.settings.consumer, self.clock
        )
        stored = plans.load(request.backfill_id)
        if stored is None:
            horizon = self.horizon(request.horizon)
            total = request.total_segments or self.segments(table)
            _check_duration(self.settings, int(table.get("ItemCount") or 0), total)
        else:
            horizon, total = _resumed(request, stored)
            self.check_alone(request, stored)
        _check_latest(running, horizon)
        self.probe(request.backfill_id, horizon)
        plans.save(request.backfill_id, StoredPlan(horizon, total, request.execution), stored)
        return BackfillPlan(
            request.backfill_id, total, horizon, self.settings.consumer, self.settings.table
        )

    def check_stream(self) -> dict[str, Any]:
        """The table's description; refused: no stream, or not the consumer's."""
        table = self.dynamodb.describe_table(TableName=self.settings.table)["Table"]
        spec = table.get("StreamSpecification") or {}
        latest = table.get("LatestStreamArn")
        if not spec.get("StreamEnabled") or not latest:
            raise BackfillRefusedError(
                f"table {self.settings.table} has no stream: a backfill reconciles its rows "
                "with the changes the consumer reads from the table's stream; enable one "
                "(NEW_AND_OLD_IMAGES, ChangeCaptureTable does)"
            )
        if latest != self.settings.stream_arn:
            raise BackfillRefusedError(
                f"table {self.settings.table}'s stream is {latest}, the consumer reads "
                f"{self.settings.stream_arn}: the stream was re-created; point the consumer "
                "at the table's stream first"
            )
        return table  # type: ignore[no-any-return]

    def segments(self, table: Mapping[str, Any]) -> int:
        """The segment count from the table's size now (DescribeTable's ``TableSizeBytes``,
        ``ItemCount``): see :func:`segments_for`."""
        return segments_for(
            int(table.get("TableSizeBytes") or 0),
            int(table.get("ItemCount") or 0),
            self.settings.max_concurrency,
            self.settings.page_size,
        )

    def running_mappings(self) -> list[dict[str, Any]]:
        """The consumer function's running mappings on the stream (refused: none)."""
        found = self.lambda_client.list_event_source_mappings(
            FunctionName=self.settings.consumer_function, EventSourceArn=self.settings.stream_arn
        ).get("EventSourceMappings", [])
        running = [m for m in found if m.get("State") in defaults.RUNNING_STATES]
        if not running:
            states = [m.get("State") for m in found] or "no mapping"
            raise BackfillRefusedError(
                f"consumer function {self.settings.consumer_function} is not running on "
                f"{self.settings.stream_arn} ({states}): a backfill needs its stream consumer "
                "running, or changes after the scan would be lost; enable its mapping first"
            )
        return running

    def horizon(self, given: int | None) -> int:
        """``given``, checked by the horizon's rules (:mod:`cdc_consumer.backfill.horizon`);
        else the start time less the skew margin, or the consumer's progress if earlier."""
        progress = read_progress(
            self.dynamodb, self.settings.idempotency_table, self.settings.consumer
        )
        rules = HorizonRules(
            self.settings.consumer, int(self.clock()), self.settings.skew_seconds, progress
        )
        return rules.decide(given)

    def check_alone(self, request: BackfillRequest, stored: StoredPlan) -> None:
        """Refused: another execution of the state machine runs this backfill now."""
        if stored.execution is None or stored.execution == request.execution:
            return
        if self.stepfunctions is None or request.state_machine is None:
            return  # not started by the state machine (the local pipeline): nothing to ask
        running = self.stepfunctions.list_executions(
            stateMachineArn=request.state_machine, statusFilter="RUNNING", maxResults=1000
        ).get("executions", [])
        if any(e.get("executionArn") == stored.execution for e in running):
            raise BackfillRefusedError(
                f"backfill {request.backfill_id!r} is running in execution {stored.execution}: "
                "one execution at a time runs a backfill; follow that one (cdc-backfill watch), "
                "or stop it and start again"
            )

    def probe(self, backfill_id: str, horizon: int) -> None:
        """The consumer answers whether it takes snapshot rows, and who it is."""
        consumer = self.settings.consumer
        criteria = FilterCriteria(list(self.settings.filters), where="consumer filters")
        if not admits_snapshot_rows(criteria, self.settings.stream_arn):
            raise BackfillRefusedError(
                f"the mapping's filters of consumer {consumer} admit no snapshot row (an INSERT "
                f"without userIdentity): {list(self.settings.filters)}; nothing would be handed "
                "over"
            )
        probe = SnapshotBatch(backfill_id, horizon, probe=True, consumer=consumer)
        try:
            answer = self.invoker.invoke({"Records": [], BACKFILL_EVENT_KEY: probe.to_dict()})
        except InvocationError as error:
            if error.error_type == SnapshotRefusedError.__name__:
                raise BackfillRefusedError(str(error)) from error
            raise
        _check_answer(consumer, self.settings.consumer_function, answer)


def _check_duration(settings: BackfillSettings, items: int, total: int) -> None:
    """Refused: a backfill the table's item count (DescribeTable, updated about every six
    hours) and the rate say cannot finish before the state machine stops the execution."""
    timeout, rate = settings.execution_timeout_seconds, settings.items_per_second
    if not timeout or not rate:
        return
    running = min(total, settings.max_concurrency)
    needed = items / (rate * running)
    if needed > timeout:
        raise BackfillRefusedError(
            f"{items:,} items at {rate:g} items/s per segment, {running} segment(s) at once, "
            f"take about {needed / 3600:.1f} h; the state machine stops an execution after "
            f"{timeout / 3600:.1f} h: raise ViewBackfill's items_per_second, max_concurrency "
            "or timeout"
        )


def _resumed(request: BackfillRequest, stored: StoredPlan) -> tuple[int, int]:
    """The stored plan, refused when the request asks for another horizon or segment count."""
    for what, given, kept in (
        ("horizon", request.horizon, stored.horizon),
        ("totalSegments", request.total_segments, stored.total_segments),
    ):
        if given is not None and given != kept:
            raise BackfillRefusedError(
                f"backfill {request.backfill_id!r} was planned with {what} {kept}; this request "
                f"gives {given}: starting the same id again resumes it under its own plan; give "
                f"{what} {kept} (or none), or start a new backfill id"
            )
    return stored.horizon, stored.total_segments


def _check_answer(consumer: str, function: str, answer: Any) -> None:
    """The probe's answer names the consumer backfilled: the function's own consumer, or a
    member of its group whose filters admit a snapshot row."""
    part = (answer or {}).get(BACKFILL_EVENT_KEY) or {}
    if "members" in part:
        members, takers = part.get("members") or [], part.get("consumers") or []
        if consumer not in members:
            raise BackfillRefusedError(
                f"consumer {consumer} is not a member of the group function {function} runs "
                f"(members: {members}): a backfill feeds one member; name one of them"
            )
        if consumer not in takers:
            raise BackfillRefusedError(
                f"member {consumer}'s filters admit no snapshot row (an INSERT without "
                "userIdentity): nothing would be handed over"
            )
        return
    if part.get("consumer") != consumer:
        raise BackfillRefusedError(
            f"function {function} runs consumer {part.get('consumer')!r}, not {consumer}: "
            "backfill the consumer the function runs"
        )


def _check_latest(mappings: list[dict[str, Any]], horizon: int) -> None:
    """A mapping starting at LATEST changed after the horizon may not have read from there."""
    for mapping in mappings:
        since = _epoch(mapping.get("LastModified"))
        if mapping.get("StartingPosition") == "LATEST" and since > horizon:
            raise BackfillRefusedError(
                f"mapping {mapping.get('UUID')} starts at LATEST and was changed at {since}, "
                f"after the horizon {horizon}: it may not have read the changes since the "
                "horizon; give a later horizon (or none)"
            )


def _epoch(value: Any) -> float:
    """ListEventSourceMappings' LastModified (a datetime from boto3, or epoch seconds)."""
    if isinstance(value, datetime):
        return value.timestamp()
    return float(value) if isinstance(value, (int, float)) else 0.0
