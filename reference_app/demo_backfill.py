"""The demo's backfill (docs/backfill.md): orders written before the consumer existed reach the
order-stats view through the stack's ViewBackfill, run by the local pipeline while the workload
goes on.

Before the pipeline starts, :func:`write_before_the_consumer` writes orders (creates, updates,
deletes, orders given a TTL in the past) and trims the stream, as 24 hours would: the consumer
never sees those changes. Once the consumer runs and has recorded its progress,
:func:`start_backfill` runs the backfill in a thread (its segments in threads of their own)
while the demo keeps writing; one segment's consumer invocations fail until the segment gives
up, and it resumes from its progress record when invoked again (:class:`FailingSegment`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.backfill.shapes import BACKFILL_EVENT_KEY, SegmentResult
from cdc_consumer.exceptions import InvocationError

from cdc_local.backfill import BackfillProgress, LocalBackfill
from cdc_local.runner import LocalPipeline
from reference_app.handlers.orders_schema import ORDER_STATS_CONSUMER
from reference_app.workload import OrderWorkload, apply

#: The orders the table holds before the consumer exists: 600 changes on 300 orders.
BEFORE = OrderWorkload(changes=600, orders=300, poison=0, seed=42)
#: Parallel-scan segments and the threads that run them.
SEGMENTS = 8
THREADS = 4
#: Scan's Limit: small, so that each segment has several pages to resume between.
PAGE_SIZE = 10
#: The segment that fails (on its second page) and resumes.
FAILING_SEGMENT = 1


def write_before_the_consumer(pipeline: LocalPipeline, table_logical_id: str) -> int:
    """Provision, write :data:`BEFORE` to the orders table, then trim its stream (the changes
    are older than the stream's retention by the time the consumer starts); the writes."""
    pipeline.provision()
    table = pipeline.table_name(table_logical_id)
    ddb = pipeline.endpoint.client("dynamodb") if pipeline.endpoint else None
    assert ddb is not None
    count = 0
    for change in BEFORE.plan():
        apply(ddb, table, change)
        count += 1
    time.sleep(1.1)  # every change of them is now more than a second old
    retention = pipeline.retention.retention_seconds
    pipeline.retention.retention_seconds = 0
    try:
        pipeline.trim_streams()
    finally:
        pipeline.retention.retention_seconds = retention
    return count


@dataclass
class FailingSegment:
    """Wraps the consumer invoker: segment :data:`FAILING_SEGMENT`'s second page fails as often
    as a segment invocation retries a page, so that invocation fails; the next one resumes."""

    invoker: Any
    failures_left: int = 5
    pages_seen: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def invoke(self, event: dict[str, Any]) -> dict[str, Any] | None:
        segment = (event.get(BACKFILL_EVENT_KEY) or {}).get("segment")
        if segment == FAILING_SEGMENT and event.get("Records"):
            with self.lock:
                first = event["Records"][0]["dynamodb"]["SequenceNumber"]
                if not first.startswith("0000000000") and self.failures_left:
                    self.failures_left -= 1
                    raise InvocationError("injected: the consumer failed for this segment")
        return self.invoker.invoke(event)  # type: ignore[no-any-return]


@dataclass
class RunningBackfill:
    """A backfill running in a thread: its progress, its results or its error."""

    backfill: LocalBackfill
    thread: threading.Thread | None = None
    results: list[SegmentResult] = field(default_factory=list)
    error: BaseException | None = None

    @property
    def progress(self) -> BackfillProgress:
        return self.backfill.progress

    def join(self) -> list[SegmentResult]:
        assert self.thread is not None
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.results


def start_backfill(pipeline: LocalPipeline, backfill_id: str) -> RunningBackfill:
    """Plan the backfill (refusals raise here) and run it in a thread."""
    running = RunningBackfill(
        LocalBackfill(
            pipeline,
            ORDER_STATS_CONSUMER,
            threads=THREADS,
            invoker_wrapper=FailingSegment,
            page_size=PAGE_SIZE,
        )
    )
    plan = running.backfill.plan(backfill_id, SEGMENTS)

    def run() -> None:
        try:
            running.results = running.backfill.run(plan)
        except BaseException as error:  # reported by join()
            running.error = error

    running.thread = threading.Thread(target=run, name="backfill", daemon=True)
    running.thread.start()
    return running
