"""The two ways a record's effect is made, one strategy each.

- :class:`ProjectionMode`: the record's writes join a transaction group with its
  processed-marker; the group commits when the next record does not fit, and before anything
  that must come after every earlier record (a quarantine, a failure, a side effect, the end).
- :class:`SideEffectMode`: each side effect is claimed, called, and completed (see
  :mod:`cdc_consumer.side_effects`).

Both answer with a :data:`~cdc_consumer.outcomes.Step` (or None: nothing to report) and
settle their records in the :class:`~cdc_consumer.ledger.Ledger`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer import logs
from cdc_consumer.change import Change
from cdc_consumer.exceptions import ForeignMarkerError, PermanentError, TransientError
from cdc_consumer.ledger import Ledger
from cdc_consumer.outcomes import Next, Outcomes, Step
from cdc_consumer.side_effects import Claim, SideEffectClaims
from cdc_consumer.transactions import RecordWrites, TransactionGroup, commit

SideEffect = Callable[[Change], None]
"""A function that performs an external call for a change."""


@dataclass
class ProjectionMode:
    """Groups consecutive records' writes into transactions and commits them."""

    client: Callable[[], Any]
    ledger: Ledger
    outcomes: Outcomes
    group: TransactionGroup = field(default_factory=TransactionGroup)

    def add(self, writes: RecordWrites) -> Step | None:
        """Add a record's writes, committing the group first when they do not fit."""
        if not self.group.fits(writes):
            step = self.commit()
            if step is not None:
                return step
        self.group.add(writes)
        return None

    def commit(self) -> Step | None:
        """Commit the pending group. Poison found there is quarantined and the batch goes on
        after it (:class:`Next`); a transient failure stops at the failing record."""
        if not self.group:
            return None
        pending = self.group.take()
        self.ledger.committed_transaction()
        outcome = commit(self.client(), pending)
        for writes in outcome.committed:
            if not writes.quarantined:  # counted as quarantined when its message was sent
                self.ledger.projected(writes.position, applied=True)
        for writes in outcome.duplicates:
            if not writes.quarantined:
                self.ledger.projected(writes.position, applied=False)
        if outcome.failed is None:
            return None
        position = outcome.failed.position
        if isinstance(outcome.error, PermanentError):
            return self.outcomes.quarantine(position, outcome.error) or Next(position + 1)
        if isinstance(outcome.error, ForeignMarkerError):
            return self.outcomes.foreign_marker(position, outcome.error)
        return self.outcomes.fail(position, outcome.error)


@dataclass
class SideEffectMode:
    """Runs a record's side effects, each once, guarded by its claim."""

    side_effects: Sequence[tuple[str, SideEffect]]
    claims: SideEffectClaims
    consumer: str
    ledger: Ledger
    outcomes: Outcomes
    remaining_ms: Callable[[], int | None]

    def run(self, position: int, change: Change) -> Step:
        ran = False
        for name, side_effect in self.side_effects:
            claim_id = f"{self.consumer}#{change.event_id}#{name}"
            try:
                claim = self.claims.claim(claim_id, self.remaining_ms(), change.source_arn)
                if claim is Claim.ALREADY_COMPLETED:
                    continue
                self._call(claim_id, side_effect, change)
                ran = True
                self.claims.complete(claim_id)
            except PermanentError as error:
                return self.outcomes.quarantine(position, error) or Next(position + 1)
            except ForeignMarkerError as error:
                return self.outcomes.foreign_marker(position, error)
            except Exception as error:
                return self.outcomes.fail(position, error)
        self.ledger.side_effects_done(position, ran=ran)
        return Next(position + 1)

    def _call(self, claim_id: str, side_effect: SideEffect, change: Change) -> None:
        """Call the side effect; on any error release its claim (so a retry may run it
        again) and raise the error."""
        try:
            side_effect(change)
        except Exception:
            try:
                self.claims.release(claim_id)
            except TransientError as release_error:
                logs.log(
                    "WARNING",
                    "side effect claim not released",
                    consumer=self.consumer,
                    claimId=claim_id,
                    error=logs.describe_error(release_error),
                )
            raise
