"""The account step: what became of each record, counted, and where the batch goes next.

The last step of the write path (docs/design.md §4, the walk of one record). It reads what the
write step did (:class:`~cdc_consumer.write.Written`) into the batch's
:class:`~cdc_consumer.tally.Tally` (records applied or duplicate, transactions, markers, ledger
entries, meetings with other writers) and answers with a :data:`~cdc_consumer.outcomes.Step`:
None (go on), :class:`~cdc_consumer.outcomes.Next` after poison found while writing (it is
quarantined) or :class:`~cdc_consumer.outcomes.Stop` at a failing record. The batch's other
ways out (a poison or failing decision, the deadline) are accounted here too, so the tally and
the outcomes are reached from this one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc_consumer.exceptions import CdcConsumerError, ForeignMarkerError, PermanentError
from cdc_consumer.outcomes import Next, Outcomes, Step, Stop
from cdc_consumer.tally import Tally
from cdc_consumer.write import Written


@dataclass
class Account:
    """Accounts for the records of one batch (see the module docstring)."""

    tally: Tally
    outcomes: Outcomes

    def written(self, written: Written) -> Step | None:
        """Count what a write did; the step its first failure calls for (None: go on). A
        record after that failure is not counted: it is reported or taken again."""
        tally, failed = self.tally, written.failed
        outcome = written.transactions
        if outcome is not None:
            tally.committed_transaction()
            tally.bookkept(markers=outcome.markers, entries=outcome.entries, listed=outcome.listed)
            tally.contended(outcome.meetings, outcome.conflicts, failed=outcome.contended)
        for writes, applied in written.settled:
            # A quarantined record is counted when its message was sent.
            if (failed is None or writes.position < failed.position) and not writes.quarantined:
                tally.projected(writes.position, applied=applied)
        return None if failed is None else self.failed_write(failed.position, written.error)

    def failed_write(self, position: int, error: CdcConsumerError | None) -> Step:
        """The step for a record whose write failed: poison is quarantined and the batch goes
        on after it; a marker of another stream and anything else stop at the record."""
        if isinstance(error, PermanentError):
            return self.quarantined(position, error)
        if isinstance(error, ForeignMarkerError):
            return self.outcomes.foreign_marker(position, error)
        return self.outcomes.fail(position, error)

    def quarantined(self, position: int, error: Exception) -> Step:
        """Quarantine the record and go on after it (a failed send stops at it)."""
        return self.outcomes.quarantine(position, error) or Next(position + 1)

    def failed(self, position: int, error: Exception | None, **fields: Any) -> Stop:
        """Stop at the record: it is reported to Lambda and delivered again."""
        return self.outcomes.fail(position, error, **fields)
