"""The start step: every refusal before anything is written, and the horizon (docs/backfill.md).

Refused, each with what was wrong, the value, and what would be right
(:class:`BackfillRefusedError`): a segment count outside Scan's range; a table without a
stream, or whose stream is not the consumer's; a consumer function without a running event
source mapping on that stream, or one that starts at LATEST and was changed after the horizon;
a consumer that has recorded no progress, or whose progress is before the horizon; a horizon
later than the start time less the skew margin; a consumer whose projections cannot take
snapshot rows (the probe invocation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cdc_consumer.backfill import defaults
from cdc_consumer.backfill.settings import BackfillSettings
from cdc_consumer.contract import (
    BACKFILL_EVENT_KEY,
    MAX_PLANNED_SEGMENTS,
    MAX_TOTAL_SEGMENTS,
    MIN_TOTAL_SEGMENTS,
    SEGMENT_BYTES,
    BackfillPlan,
    BackfillRefusal,
    BackfillRequest,
    SnapshotBatch,
)
from cdc_consumer.exceptions import BackfillRefusedError, InvocationError, SnapshotRefusedError
from cdc_consumer.progress import read_progress
from cdc_consumer.redrive.invokers import Invoker
from cdc_consumer.versions import MICROSECONDS_PER_SECOND

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


def segments_for(table_bytes: int) -> int:
    """One segment per :data:`SEGMENT_BYTES` of the table, within 1..MAX_PLANNED_SEGMENTS."""
    return max(1, min(MAX_PLANNED_SEGMENTS, -(-table_bytes // SEGMENT_BYTES)))


@dataclass
class StartCheck:
    """Validates a :class:`BackfillRequest` and makes its :class:`BackfillPlan`."""

    settings: BackfillSettings
    dynamodb: Any
    lambda_client: Any
    invoker: Invoker
    clock: Callable[[], float]

    def plan(self, request: BackfillRequest) -> BackfillPlan:
        if request.total_segments is not None:
            _check_planned(request.total_segments)
        table = self.check_stream()
        total = request.total_segments or segments_for(int(table.get("TableSizeBytes") or 0))
        running = self.running_mappings()
        horizon = self.horizon(request.horizon)
        _check_latest(running, horizon)
        self.probe(request.backfill_id, horizon)
        return BackfillPlan(
            request.backfill_id,
            total,
            horizon,
            self.settings.consumer,
            self.settings.table,
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
        """``given``, checked; else the start time less the skew margin, or the consumer's
        progress if that is earlier."""
        latest = int(self.clock()) - self.settings.skew_seconds
        progress = read_progress(
            self.dynamodb, self.settings.idempotency_table, self.settings.consumer
        )
        if progress is None:
            raise BackfillRefusedError(
                f"consumer {self.settings.consumer} has recorded no progress: set "
                "CDC_RECORD_PROGRESS=1 on its function (ViewBackfill does) and let it apply a "
                "change, so the backfill knows it reads the stream",
                BackfillRefusal.NO_PROGRESS,
            )
        applied = progress.applied_until_us // MICROSECONDS_PER_SECOND
        if given is None:
            return min(latest, applied)
        if given > latest:
            raise BackfillRefusedError(
                f"horizon {given} is later than the start time less the skew margin ({latest}): "
                "a change made after the scan started could be stamped before it and lose to "
                f"an older row; give a horizon <= {latest}, or none"
            )
        if given > applied:
            raise BackfillRefusedError(
                f"horizon {given} is after what consumer {self.settings.consumer} has applied "
                f"({applied}): it has not passed the horizon yet; wait for it, or give a "
                f"horizon <= {applied}"
            )
        return given

    def probe(self, backfill_id: str, horizon: int) -> None:
        probe = SnapshotBatch(
            backfill_id=backfill_id, horizon=horizon, probe=True, consumer=self.settings.consumer
        )
        try:
            self.invoker.invoke({"Records": [], BACKFILL_EVENT_KEY: probe.to_dict()})
        except InvocationError as error:
            if error.error_type == SnapshotRefusedError.__name__:
                raise BackfillRefusedError(str(error)) from error
            raise


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
