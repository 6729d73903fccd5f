"""The write stage of the batch's pipeline (decide -> plan -> write): projection mode.

:class:`ProjectionMode` adds each record's writes to the :class:`~cdc_consumer.plan.Plan`;
the plan is written when the next record does not fit, and before anything that must come
after every earlier record (a quarantine, a failure, a side effect, the end): first the
records written alone (:mod:`cdc_consumer.alone`), then the transactions of the records before
the first of them that failed (:mod:`cdc_consumer.transactions`). It answers with a
:data:`~cdc_consumer.outcomes.Step` (or None: nothing to report) and settles the records in
the :class:`~cdc_consumer.tally.Tally`. Side effects, the other way a record's effect is made,
are run under claims (:mod:`cdc_consumer.claims`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.alone import write_alone
from cdc_consumer.contention import Contention
from cdc_consumer.exceptions import CdcConsumerError, ForeignMarkerError, PermanentError
from cdc_consumer.outcomes import Next, Outcomes, Step
from cdc_consumer.plan import Plan
from cdc_consumer.tally import Tally
from cdc_consumer.transactions import RecordWrites, TransactionLedger, commit


@dataclass
class ProjectionMode:
    """Plans consecutive records' writes and writes each plan (see the module docstring)."""

    client: Callable[[], Any]
    tally: Tally
    outcomes: Outcomes
    plan: Plan = field(default_factory=Plan)
    #: The batch's ledger (None: per-record markers): see :mod:`cdc_consumer.batch_ledger`.
    ledger: TransactionLedger | None = None
    #: The batch's patience with other writers on its items (:mod:`cdc_consumer.contention`).
    contention: Contention = field(default_factory=Contention)

    def add(self, writes: RecordWrites) -> Step | None:
        """Add a record's writes, writing the plan first when they do not fit."""
        if not self.plan.fits(writes):
            step = self.commit()
            if step is not None:
                return step
        self.plan.add(writes)
        return None

    def commit(self) -> Step | None:
        """Write the plan: the records written alone, then the transactions of the records
        before the first of those that failed. Records before the first failure (in stream
        order) are settled; poison found there is quarantined and the batch goes on after it
        (:class:`Next`); a transient failure stops at the failing record."""
        if not self.plan:
            return None
        single, grouped = self.plan.take()
        failed: RecordWrites | None = None
        error: CdcConsumerError | None = None
        settled: list[tuple[RecordWrites, bool]] = []
        if single:
            alone = write_alone(self.client(), single, contention=self.contention)
            failed, error = alone.failed, alone.error
            settled += [(w, True) for w in alone.applied] + [(w, False) for w in alone.duplicates]
        pending = [w for w in grouped if failed is None or w.position < failed.position]
        if pending:
            self.tally.committed_transaction()
            outcome = commit(self.client(), pending, self.ledger, self.contention)
            self.tally.bookkept(
                markers=outcome.markers, entries=outcome.entries, listed=outcome.listed
            )
            self.tally.contended(outcome.meetings, outcome.conflicts, failed=outcome.contended)
            settled += [(w, True) for w in outcome.committed]
            settled += [(w, False) for w in outcome.duplicates]
            if outcome.failed is not None:
                failed, error = outcome.failed, outcome.error  # earlier: cut before the other
        for writes, applied in settled:
            # A quarantined record is counted when its message was sent.
            if (failed is None or writes.position < failed.position) and not writes.quarantined:
                self.tally.projected(writes.position, applied=applied)
        return None if failed is None else self._failed(failed.position, error)

    def _failed(self, position: int, error: CdcConsumerError | None) -> Step:
        if isinstance(error, PermanentError):
            return self.outcomes.quarantine(position, error) or Next(position + 1)
        if isinstance(error, ForeignMarkerError):
            return self.outcomes.foreign_marker(position, error)
        return self.outcomes.fail(position, error)
