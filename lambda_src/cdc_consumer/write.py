"""The write step: a plan's records written, alone first, then in transactions.

The third step of the write path (docs/design.md §4, the walk of one record). The batch hands
the :class:`Writer` a full plan (:mod:`cdc_consumer.plan`), or one that must be written before
anything that follows every earlier record (a quarantine, a failure, a side effect, the end):
first the records written alone (:mod:`cdc_consumer.alone`), then the transactions of the
records before the first of them that failed (:mod:`cdc_consumer.transactions`, where the
batch's ledger lists them and its meeting rule holds). What was written comes back as
:class:`Written`, which the account step reads (:mod:`cdc_consumer.account`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.alone import write_alone
from cdc_consumer.batch_ledger import BatchLedger
from cdc_consumer.contention import Contention
from cdc_consumer.exceptions import CdcConsumerError
from cdc_consumer.plan import Plan
from cdc_consumer.record_writes import RecordWrites
from cdc_consumer.transactions import CommitOutcome, commit


@dataclass
class Written:
    """What one write of a plan did: each record settled, applied now (True) or found
    applied already (False); the first record that failed, in stream order, with its error
    (nothing after it counts as applied); and what the transactions said (None: there were
    none to commit)."""

    settled: list[tuple[RecordWrites, bool]] = field(default_factory=list)
    failed: RecordWrites | None = None
    error: CdcConsumerError | None = None
    transactions: CommitOutcome | None = None


@dataclass
class Writer:
    """Writes the plans of one batch with its DynamoDB ``client``, its ``ledger`` (None:
    per-record markers; :mod:`cdc_consumer.batch_ledger`) and its patience with other writers
    (:mod:`cdc_consumer.contention`)."""

    client: Any
    ledger: BatchLedger | None = None
    contention: Contention = field(default_factory=Contention)

    def write(self, plan: Plan) -> Written:
        """Write ``plan`` (left empty): the records written alone, then the transactions of
        the records before the first of those that failed; a failure in the transactions is
        earlier still, so it is the answer instead."""
        single, grouped = plan.take()
        written = Written()
        if single:
            alone = write_alone(self.client, single, contention=self.contention)
            written.failed, written.error = alone.failed, alone.error
            written.settled += [(w, True) for w in alone.applied]
            written.settled += [(w, False) for w in alone.duplicates]
        cut = written.failed
        pending = [w for w in grouped if cut is None or w.position < cut.position]
        if pending:
            outcome = commit(self.client, pending, self.ledger, self.contention)
            written.transactions = outcome
            written.settled += [(w, True) for w in outcome.committed]
            written.settled += [(w, False) for w in outcome.duplicates]
            if outcome.failed is not None:
                written.failed, written.error = outcome.failed, outcome.error
        return written
