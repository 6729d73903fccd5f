"""The tally of one invocation: what became of each record, and the counts the metrics report.

Every record of a batch ends in exactly one of these states, and only the tally counts them:

- **applied** (``RecordsProcessed``; ``TtlExpiries`` too for a TTL deletion): its effect was
  made by this invocation: its projection's transaction committed, or a side effect ran;
- **duplicate** (``DuplicatesSkipped``): every effect was already made by an earlier delivery
  (its ledger entry or marker says so, every version-guarded write found the view at this
  version or a newer one, or its sink returned
  :class:`~cdc_consumer.sinks.protocol.AlreadyApplied`);
- **quarantined** (``RecordsQuarantined``): poison, sent whole to the quarantine queue;
- **failed**: reported to Lambda (or raised); not counted here, it is delivered again. A
  record failed because its marker was written for another stream also counts in
  ``ForeignMarkers``.

A record with a projection *and* side effects is settled after its side effects, so the
tally holds the projection's part until then (:meth:`Tally.projected`).

Besides the records, the tally counts what each committed transaction wrote to know what it
applied (:meth:`Tally.bookkept`): processed-markers (``MarkersWritten``), ledger entries
(``LedgerEntriesWritten``) and the records they list (``LedgerRecordsListed``); and the other
writers its transactions met (:meth:`Tally.contended`: ``LedgerMeetings``,
``TransactionConflicts``, ``ContentionFailures``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cdc_consumer.change import Change
from cdc_consumer.metrics import BatchMetrics


@dataclass
class Tally:
    """The counts of one :meth:`~cdc_consumer.processor.StreamProcessor.handle` call.

    ``settle_at_commit``: True when the projection is the record's last stage (no side
    effects), so a committed or duplicate transaction settles the record at once.
    """

    settle_at_commit: bool = True
    metrics: BatchMetrics = field(default_factory=BatchMetrics)
    transactions: int = 0
    _changes: dict[int, Change] = field(default_factory=dict)
    _projected: dict[int, bool] = field(default_factory=dict)

    def saw(self, position: int, change: Change) -> None:
        """A record was decoded (its creation time drives the lag metric)."""
        self._changes[position] = change
        created, metrics = change.approximate_creation_time, self.metrics
        if created is not None and (
            metrics.newest_record_time is None or created > metrics.newest_record_time
        ):
            metrics.newest_record_time = created  # BatchMetrics.saw_record_time, inlined

    def projected(self, position: int, *, applied: bool) -> None:
        """The record's projection committed now (``applied``) or had been (a duplicate)."""
        if self.settle_at_commit:
            self.settle(position, applied=applied)
        else:
            self._projected[position] = applied

    def side_effects_done(self, position: int, *, ran: bool) -> None:
        """The record's side effects are done: applied if one ran now or its projection
        committed now, else a duplicate."""
        self.settle(position, applied=ran or self._projected.get(position, False))

    def settle(self, position: int, *, applied: bool) -> None:
        if not applied:
            self.metrics.duplicates_skipped += 1
            return
        self.metrics.records_processed += 1
        change = self._changes.get(position)
        if change is not None and change.is_ttl_expiry:
            self.metrics.ttl_expiries += 1

    def quarantined(self) -> None:
        self.metrics.records_quarantined += 1

    def foreign_marker(self) -> None:
        """A record's marker was written for another stream (it is then reported failed)."""
        self.metrics.foreign_markers += 1

    def committed_transaction(self) -> None:
        self.transactions += 1

    def bookkept(self, *, markers: int, entries: int, listed: int) -> None:
        """A commit wrote ``markers`` processed-markers and ``entries`` ledger entries listing
        ``listed`` records."""
        self.metrics.markers_written += markers
        self.metrics.ledger_entries_written += entries
        self.metrics.ledger_records_listed += listed

    def contended(self, meetings: int, conflicts: int, *, failed: bool) -> None:
        """A commit met other writers ``meetings`` times in a ledger lane and was cancelled
        ``conflicts`` times for a conflict; ``failed``: it stopped the batch for it."""
        self.metrics.ledger_meetings += meetings
        self.metrics.transaction_conflicts += conflicts
        self.metrics.contention_failures += int(failed)
