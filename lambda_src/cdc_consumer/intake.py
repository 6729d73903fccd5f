"""One ``StreamProcessor.handle`` call: a stream batch or a backfill's snapshot batch, end to end.

Imported by the first :meth:`~cdc_consumer.StreamProcessor.handle` (with the batch machinery),
not by the handler module's import. A *snapshot batch* (an event with ``cdcBackfill``,
:class:`~cdc_consumer.backfill.shapes.SnapshotBatch`) is told from a stream batch by one lookup per
batch; it is refused whole, before anything is written, when a registered projection or side
effect cannot take snapshot rows (:class:`SnapshotRefusedError`), and its records decode as
:class:`~cdc_consumer.snapshots.SnapshotChange`. A stream batch of a consumer that records its
progress (:mod:`cdc_consumer.progress`) writes it after its transactions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from cdc_consumer import logs, metrics
from cdc_consumer.backfill.shapes import BACKFILL_EVENT_KEY, SnapshotBatch
from cdc_consumer.batch import BatchRun, GroupTurn, LambdaContext, Registry
from cdc_consumer.change import Change
from cdc_consumer.exceptions import (
    ConfigurationError,
    DeadlineError,
    MalformedBatchError,
    SnapshotRefusedError,
)
from cdc_consumer.outcomes import event_id, sequence_number
from cdc_consumer.progress import ProgressRecorder
from cdc_consumer.routes import route_of
from cdc_consumer.snapshots import SnapshotChange
from cdc_consumer.tally import Tally
from cdc_consumer.windows import answer, shard_of

if TYPE_CHECKING:
    from cdc_consumer.settings import Settings

__all__ = ["Handler", "grouped", "handle_batch", "snapshot_refusal"]


class Handler(Registry, Protocol):
    """What one ``handle`` call needs of its :class:`~cdc_consumer.processor.StreamProcessor`
    (a protocol, so this module does not import the processor that imports it)."""

    snapshot_refusers: list[str]
    batch_hooks: list[Callable[[list[Any]], None]]
    merge_keys: list[Callable[[Any], str | None]]
    progress: ProgressRecorder | None

    def settings(self) -> Settings: ...


def handle_batch(
    processor: Handler,
    event: Mapping[str, Any],
    context: LambdaContext | None,
    turn: GroupTurn | None = None,
) -> dict[str, Any]:
    """:meth:`StreamProcessor.handle` (see there)."""
    if not processor.projections and not processor.side_effects:
        raise ConfigurationError(
            "the processor has neither a projection nor a side effect: register one with "
            "@processor.projection or @processor.side_effect"
        )
    settings = processor.settings()
    snapshot = SnapshotBatch.of(event)
    if snapshot is not None:
        refusal = snapshot_refusal(settings.consumer, processor.snapshot_refusers)
        if refusal is not None:
            raise refusal
        if snapshot.probe:
            return {"batchItemFailures": [], BACKFILL_EVENT_KEY: {"consumer": settings.consumer}}
    shard = shard_of(event)
    started = processor.clock()
    tally = Tally(settle_at_commit=not processor.side_effects)
    try:
        records = _records_of(event)
        for start_batch in processor.batch_hooks:
            start_batch(records)
        decode = Change.from_record if snapshot is None else SnapshotChange.from_record
        order = None if snapshot is None else grouped(records, processor.merge_keys)
        taken = records if order is None else [records[i] for i in order]
        run = BatchRun.assemble(processor, settings, context, taken, tally, turn, decode, shard)
        failed = run.run()
        if order is not None and failed is not None:
            failed = _earliest_unsettled(records, order, failed)
    except (MalformedBatchError, ConfigurationError, DeadlineError) as error:
        # The invocation cannot go on: a function error (alarmed, retried by Lambda).
        tally.metrics.batch_failures = 1
        logs.log(
            "ERROR",
            "batch rejected" if isinstance(error, MalformedBatchError) else "batch failed",
            consumer=settings.consumer,
            error=logs.describe_error(error),
        )
        metrics.emit(
            settings.metrics_namespace, settings.consumer, tally.metrics, processor.clock()
        )
        raise
    return answer(event, _answered(processor, settings, snapshot, records, tally, failed, started))


def _answered(
    processor: Handler,
    settings: Settings,
    snapshot: SnapshotBatch | None,
    records: list[Any],
    tally: Tally,
    failed: str | None,
    started: float,
) -> dict[str, Any]:
    """Log, emit the metrics and record the progress of a batch run; its response."""
    tally.metrics.batch_failures = int(failed is not None)
    if snapshot is not None:
        tally.metrics.newest_record_time = None  # a row's horizon is not the stream's lag
    duration_ms = round((processor.clock() - started) * 1000)
    _log_processed(settings, records, tally, failed, duration_ms)
    metrics.emit(settings.metrics_namespace, settings.consumer, tally.metrics, processor.clock())
    if snapshot is None and ProgressRecorder.enabled():
        processor.progress = processor.progress or ProgressRecorder(processor.clock)
        processor.progress.note(
            processor.dynamodb,
            settings.idempotency_table,
            settings.consumer,
            _settled(records, failed),
        )
    response: dict[str, Any] = {
        "batchItemFailures": [] if failed is None else [{"itemIdentifier": failed}]
    }
    if snapshot is not None:
        answer = {"consumer": settings.consumer, "quarantined": tally.metrics.records_quarantined}
        response[BACKFILL_EVENT_KEY] = answer
    return response


def grouped(records: list[Any], keys: list[Callable[[Any], str | None]]) -> list[int] | None:
    """The order to take a snapshot batch's rows in: grouped by the view items their actions
    merge on (the sinks' ``merge_key``), so that one view item's deltas travel as one action
    and a transaction cut splits at most one group (docs/design.md, the write plan); None
    when no sink groups. The rows are of distinct items, so any order applies them alike; a
    row that cannot be decoded keeps its place at the end (it is quarantined there)."""
    if not keys or len(records) < 2:
        return None

    def key_of(position: int) -> tuple[int, str]:
        try:
            change = SnapshotChange.from_record(records[position])
            found = [key(change) for key in keys]
        except Exception:  # poison or a failing function: decided again in the batch, in turn
            return 1, ""
        return 0, "|".join(k or "" for k in found)

    return sorted(range(len(records)), key=key_of)


def _earliest_unsettled(records: list[Any], order: list[int], failed: str) -> str:
    """The row to report when a grouped run stopped at ``failed``: the first, in the batch's
    own order, of the rows not settled (the caller resends from there; the settled rows after
    it are no-ops by their versions)."""
    taken = [sequence_number(records[i]) for i in order]
    stopped = taken.index(failed) if failed in taken else 0
    earliest = min(order[stopped:])
    return sequence_number(records[earliest]) or failed


def snapshot_refusal(consumer: str, refusers: list[str]) -> SnapshotRefusedError | None:
    """The error refusing a snapshot batch for ``refusers`` (None when there are none)."""
    if not refusers:
        return None
    return SnapshotRefusedError(
        f"consumer {consumer!r} cannot take snapshot rows: {', '.join(refusers)} "
        "applies differences between OLD and NEW images or makes external calls, and a table "
        "row is not a difference. Make it a cdc_consumer.Contributions projection (each item's "
        "contribution kept and replaced by version) or a LatestImage, or register it with "
        "snapshots=True if it is idempotent per item state (docs/backfill.md); nothing was "
        "written"
    )


def _settled(records: list[Any], failed: str | None) -> list[Any]:
    """The records before the one reported failed (all of them when none was)."""
    if failed is None:
        return records
    for index, record in enumerate(records):
        if sequence_number(record) == failed:
            return records[:index]
    return []


def _log_processed(
    settings: Settings, records: list[Any], tally: Tally, failed: str | None, duration_ms: int
) -> None:
    """The batch's log line."""
    logs.log(
        "INFO",
        "batch processed",
        consumer=settings.consumer,
        records=len(records),
        processed=tally.metrics.records_processed,
        duplicates=tally.metrics.duplicates_skipped,
        quarantined=tally.metrics.records_quarantined,
        transactions=tally.transactions,
        failedSequenceNumber=failed,
        firstSequenceNumber=sequence_number(records[0]) if records else None,
        lastSequenceNumber=sequence_number(records[-1]) if records else None,
        durationMs=duration_ms,
    )


def _records_of(event: Mapping[str, Any]) -> list[Any]:
    """The event's records, checked before anything is applied.

    A record without a sequence number cannot be named in ``batchItemFailures``. Lambda would
    also fail the whole batch for an empty ``itemIdentifier``, but we raise instead: a function
    error shows in the function's Errors metric and alarm, Lambda's bisect-on-error splits the
    batch so the other records still get through, and redrive and the local pipeline read an
    exception as "the whole batch failed" without a special case.
    """
    records = event.get("Records") if isinstance(event, Mapping) else None
    if not isinstance(records, list):
        raise MalformedBatchError(
            f"a DynamoDB stream event is {{'Records': [...]}}, got {str(event)[:200]}"
        )
    for position, record in enumerate(records):
        if sequence_number(record) is None:
            raise MalformedBatchError(
                f"record {position} (eventID {event_id(record)!r}) has no "
                f"{route_of(record).identifier_field}, so it cannot be reported alone; failing "
                "the batch"
            )
    return records
