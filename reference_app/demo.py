"""The demo behind ``make local`` (``python -m reference_app``): the orders example's
pipeline, run locally under a workload.

Orders are written before the consumer exists (their changes trimmed from the stream, as 24
hours would); then the consumer starts and, once it runs, the stack's ViewBackfill backfills
order-stats from the table (reference_app/demo_backfill.py, docs/backfill.md) while orders are
created, paid, cancelled, amended, deleted and expired by TTL, with a few poison writes, and the
order-stats consumer runs with a few injected faults (crashes, transient DynamoDB errors,
duplicate deliveries, a backfill segment that fails and resumes), so its idempotency has
something to do. At the end the
TTL sweeper runs, every consumer's on-failure batches are redriven (the summary says how many
messages are left: none, or the run is not ok), every stream record is accounted for, and
the view is compared with its recomputation from the orders table. A progress bar runs while it
works; it ends with a summary table and the same summary as one JSON line.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cdc_local.accounting import (
    ConsumerWiring,
    account,
    on_failure_batches,
    redrive_on_failure,
)
from cdc_local.faults import FaultPlan
from cdc_local.runner import LocalPipeline
from reference_app.demo_backfill import (
    RunningBackfill,
    start_backfill,
    write_before_the_consumer,
)
from reference_app.oracle import order_stats_wiring, require_order_stats_consumer, view_reconciled
from reference_app.workload import OrderWorkload, write_while_running

#: Light faults, so the summary shows duplicates suppressed and retries, yet every batch
#: settles within the reference consumer's 5 retries.
DEMO_FAULTS = FaultPlan(
    seed=1,
    crash_probability=0.01,
    transient_error_probability=0.01,
    lost_response_probability=0.01,
    duplicate_delivery_probability=0.05,
)
#: Writes between two pipeline turns: the consumer keeps up with the workload as it runs.
WRITES_PER_TURN = 50
#: The share of the workload written before the backfill starts: the consumer has applied
#: changes by then (it records its progress, which the backfill's start step checks).
BACKFILL_AFTER = 0.1


@dataclass(frozen=True)
class DemoSummary:
    written_before_the_consumer: int
    backfilled_items: int
    backfill_segments: int
    backfill_segment_retries: int
    changes_written: int
    records_delivered: int
    processed: int
    duplicates_suppressed: int
    quarantined: int
    on_failure_messages: int
    redriven_records: int
    on_failure_destination: str
    on_failure_messages_left: int
    ttl_deletions: int
    faults_injected: int
    lost: int
    view_reconciled: bool
    seconds: float
    warnings: tuple[str, ...] = ()
    """The local pipeline's warnings (e.g. a stream with more readers than AWS serves)."""
    iam_enforced: bool = False
    """Whether each function ran under its own synthesized role with IAM enforced."""

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.view_reconciled and self.on_failure_messages_left == 0


def run_demo(
    assembly_dir: str | Path,
    stack_name: str,
    *,
    workload: OrderWorkload | None = None,
    faults: FaultPlan | None = DEMO_FAULTS,
    console: Console | None = None,
    enforce_iam: bool = True,
) -> DemoSummary:
    """Run the demo and print its summary; see the module docstring. Defaults: 2,000 changes on
    100 orders with 3 poison writes (about half a minute), :data:`DEMO_FAULTS`, and IAM enforced
    (each function under its own role: ``LocalPipeline(enforce_iam=...)``)."""
    workload = workload or OrderWorkload(changes=2000, orders=100, poison=3)
    console = console or Console()
    started = time.monotonic()
    pipeline = LocalPipeline(
        assembly_dir, stack_name, faults=faults, track_records=True, enforce_iam=enforce_iam
    )
    require_order_stats_consumer(pipeline)
    before = write_before_the_consumer(pipeline, "Orders")
    with pipeline:
        wiring = order_stats_wiring(pipeline)
        backfill = _run_workload(pipeline, workload, console)
        redriven, left = redrive_every_consumer(pipeline)
        accounting = account(pipeline, wiring)
        counters = pipeline.counters
        injected = pipeline.faults.counters if pipeline.faults is not None else None
        results = backfill.results
        summary = DemoSummary(
            written_before_the_consumer=before,
            backfilled_items=sum(result.items for result in results),
            backfill_segments=len(results),
            backfill_segment_retries=backfill.progress.segment_retries,
            changes_written=workload.changes,
            records_delivered=counters.records_delivered,
            processed=accounting.processed + accounting.acknowledged_without_marker,
            duplicates_suppressed=int(pipeline.metrics["DuplicatesSkipped"]),
            quarantined=len({m["record"]["eventID"] for m in accounting.quarantine_messages}),
            on_failure_messages=counters.on_failure_messages,
            redriven_records=redriven,
            on_failure_destination=destination_of(wiring),
            on_failure_messages_left=left,
            ttl_deletions=counters.ttl_deletions,
            faults_injected=sum(asdict(injected).values()) if injected is not None else 0,
            lost=len(accounting.lost),
            view_reconciled=view_reconciled(pipeline, wiring),
            seconds=round(time.monotonic() - started, 1),
            warnings=tuple(pipeline.reader_warnings),
            iam_enforced=pipeline.iam_enforced,
        )
    print_summary(summary, console)
    return summary


def _run_workload(
    pipeline: LocalPipeline, workload: OrderWorkload, console: Console
) -> RunningBackfill:
    """Write the workload while the consumers run and, from :data:`BACKFILL_AFTER` of it on,
    the backfill; then let everything settle (TTL sweep included). Shows progress bars."""
    source_table = order_stats_wiring(pipeline).source_table
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeElapsedColumn(), console=console) as progress:
        writing = progress.add_task("changes written", total=workload.changes)
        delivered = progress.add_task("records settled", total=workload.changes)
        segments = progress.add_task("backfill segments", total=None)
        backfill: list[RunningBackfill] = []

        def show(_: object = None) -> None:
            settled = pipeline.counters.records_succeeded + pipeline.counters.records_discarded
            progress.update(delivered, completed=min(settled, workload.changes))
            if backfill:
                done = backfill[0].progress
                progress.update(segments, total=done.total_segments, completed=done.segments_done)

        def wrote(count: int) -> None:
            if not backfill and count >= workload.changes * BACKFILL_AFTER:
                pipeline.drain()  # the consumer has applied changes: its progress is recorded
                backfill.append(start_backfill(pipeline, "demo"))
            if count % WRITES_PER_TURN == 0:
                show()
            progress.update(writing, completed=count)

        write_while_running(pipeline, source_table, workload, WRITES_PER_TURN, on_write=wrote)
        if not backfill:
            backfill.append(start_backfill(pipeline, "demo"))
        while backfill[0].thread is not None and backfill[0].thread.is_alive():
            pipeline.poll()  # the stream keeps flowing while the backfill finishes
            show()
            time.sleep(0.05)
        backfill[0].join()
        pipeline.drain(on_progress=show)
        pipeline.sweep_ttl()
        pipeline.drain(on_progress=show)
        show()
        progress.update(delivered, completed=workload.changes)
    return backfill[0]


def destination_of(wiring: ConsumerWiring) -> str:
    """Where the consumer's failed batches go, for the summary (its kind describes it)."""
    destination = wiring.mapping.destination
    return destination.describe() if destination is not None else "none"


def redrive_every_consumer(pipeline: LocalPipeline) -> tuple[int, int]:
    """Redrive the on-failure messages of every consumer of the stack (not only order-stats: the
    TTL archive's batches land there too); (records replayed, messages left in the queues)."""
    replayed = left = 0
    for mapping in pipeline.mappings.values():
        wiring = ConsumerWiring.of(pipeline, mapping.function.spec.own_handler)
        if on_failure_batches(pipeline, wiring):  # the bucket's objects or the queue's messages
            report = redrive_on_failure(pipeline, wiring)
            replayed += report.records_replayed if report is not None else 0
        left += len(on_failure_batches(pipeline, wiring))
    return replayed, left


def summary_table(title: str, rows: Iterable[tuple[str, object]]) -> Table:
    """A demo's summary for people: one row per figure (what, value)."""
    table = Table(title=title)
    table.add_column("what")
    table.add_column("value", justify="right")
    for name, value in rows:
        table.add_row(name, str(value))
    return table


def print_summary(summary: DemoSummary, console: Console) -> None:
    rows = [
        (
            "orders' changes written before the consumer existed",
            summary.written_before_the_consumer,
        ),
        (
            "items backfilled (segments, segment retries)",
            f"{summary.backfilled_items} "
            f"({summary.backfill_segments}, {summary.backfill_segment_retries})",
        ),
        ("changes written", summary.changes_written),
        ("records delivered (retries and duplicates included)", summary.records_delivered),
        ("processed (distinct records)", summary.processed),
        ("duplicates suppressed (runtime metric)", summary.duplicates_suppressed),
        ("quarantined (poison)", summary.quarantined),
        ("on-failure destination", summary.on_failure_destination),
        ("on-failure batches (objects or messages)", summary.on_failure_messages),
        ("records redriven", summary.redriven_records),
        ("on-failure messages left after redrive", summary.on_failure_messages_left),
        ("expired by TTL", summary.ttl_deletions),
        ("faults injected", summary.faults_injected),
        ("lost", summary.lost),
        ("view reconciled", "yes" if summary.view_reconciled else "NO"),
        ("IAM enforced (each function under its own role)", summary.iam_enforced),
        ("seconds", summary.seconds),
    ]
    rows += [("warning", warning) for warning in summary.warnings]
    title = "cdc-constructs local pipeline: CdcReferenceStack order-stats"
    console.print(summary_table(title, rows))
    print(json.dumps({"summary": "cdc-local-demo", **asdict(summary)}), flush=True)
