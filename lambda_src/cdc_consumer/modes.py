"""The two ways a record's effect is made, one strategy each.

- :class:`ProjectionMode`: the record's writes join a transaction group with its
  processed-marker; the group commits when the next record does not fit, and before anything
  that must come after every earlier record (a quarantine, a failure, a side effect, the end).
- :class:`SideEffectMode`: each side effect is claimed, called, and completed (see
  :mod:`cdc_consumer.side_effects`).

Both answer with a :data:`~cdc_consumer.outcomes.Step` (or None: nothing to report) and
settle their records in the :class:`~cdc_consumer.tally.Tally`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer import logs
from cdc_consumer.change import Change
from cdc_consumer.defaults import CLAIM_TAKEOVER_SLACK_MS
from cdc_consumer.exceptions import (
    ForeignMarkerError,
    MissingImageError,
    PermanentError,
    SideEffectInProgressError,
    TransientError,
)
from cdc_consumer.outcomes import Next, Outcomes, Step
from cdc_consumer.side_effects import Claim, SideEffectClaims
from cdc_consumer.tally import Tally
from cdc_consumer.transactions import RecordWrites, TransactionGroup, commit

SideEffect = Callable[[Change], None]
"""A function that performs an external call for a change."""


@dataclass
class ProjectionMode:
    """Groups consecutive records' writes into transactions and commits them."""

    client: Callable[[], Any]
    tally: Tally
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
        self.tally.committed_transaction()
        outcome = commit(self.client(), pending)
        for writes in outcome.committed:
            if not writes.quarantined:  # counted as quarantined when its message was sent
                self.tally.projected(writes.position, applied=True)
        for writes in outcome.duplicates:
            if not writes.quarantined:
                self.tally.projected(writes.position, applied=False)
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
    """Runs a record's side effects, each once, guarded by its claim.

    ``timeout_ms``: the side-effect timeout, how long a claim stays in progress (see
    :mod:`cdc_consumer.side_effects` for the rule and its cost). ``time_left_ms()``: the
    invocation's remaining time less the safety margin (None without a Lambda context).
    """

    side_effects: Sequence[tuple[str, SideEffect]]
    claims: SideEffectClaims
    consumer: str
    tally: Tally
    outcomes: Outcomes
    timeout_ms: Callable[[], int]
    remaining_ms: Callable[[], int | None]
    time_left_ms: Callable[[], int | None]
    clock: Callable[[], float]
    sleep: Callable[[float], None]

    def run(self, position: int, change: Change) -> Step:
        ran = False
        for name, side_effect in self.side_effects:
            claim_id = f"{self.consumer}#{change.event_id}#{name}"
            try:
                if self._claim(claim_id, change) is Claim.ALREADY_COMPLETED:
                    continue
                self._call(claim_id, side_effect, change)
                ran = True
                self.claims.complete(claim_id)
            except PermanentError as error:
                return self.outcomes.quarantine(position, error) or Next(position + 1)
            except ForeignMarkerError as error:
                return self.outcomes.foreign_marker(position, error)
            except MissingImageError as error:  # it read an image the stream never carries
                raise error.read_by(f"side effect {name!r}") from None
            except Exception as error:
                return self.outcomes.fail(position, error)
        self.tally.side_effects_done(position, ran=ran)
        return Next(position + 1)

    def window_ms(self) -> int:
        """How long a claim taken now stays in progress: the side-effect timeout, or the
        invocation's remaining time when that is shorter."""
        remaining = self.remaining_ms()
        timeout = self.timeout_ms()
        return timeout if remaining is None else max(0, min(timeout, remaining))

    def _claim(self, claim_id: str, change: Change) -> Claim:
        """Claim; on a claim in progress elsewhere, wait for it to expire and take it over when
        this invocation can afford the wait, else raise :class:`SideEffectInProgressError`."""
        try:
            return self.claims.claim(claim_id, self.window_ms(), change.source_arn)
        except SideEffectInProgressError as busy:
            wait_ms = self._affordable_wait(busy.until_ms)
            if wait_ms is None:
                raise
            logs.log(
                "INFO",
                "waiting for a side effect claim to expire",
                consumer=self.consumer,
                claimId=claim_id,
                waitMs=wait_ms,
            )
            self.sleep(wait_ms / 1000)
            return self.claims.claim(claim_id, self.window_ms(), change.source_arn)

    def _affordable_wait(self, until_ms: int | None) -> int | None:
        """Milliseconds to wait for a claim expiring at ``until_ms``, or None when waiting does
        not fit: a claim longer than our timeout (another configuration's), or not enough time
        left to wait and then run the side effect within its timeout before the margin."""
        if until_ms is None:
            return None
        timeout = self.timeout_ms()
        wait = max(0, until_ms - int(self.clock() * 1000)) + CLAIM_TAKEOVER_SLACK_MS
        left = self.time_left_ms()
        if wait > timeout + CLAIM_TAKEOVER_SLACK_MS or (left is not None and left - wait < timeout):
            return None
        return wait

    def _call(self, claim_id: str, side_effect: SideEffect, change: Change) -> None:
        """Call the side effect; on any error release its claim (so a retry may run it
        again) and raise the error. A call that outlived its claim is logged: a retry may
        have taken the claim over and run it again."""
        window = self.window_ms()
        started = self.clock()
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
        took_ms = round((self.clock() - started) * 1000)
        if took_ms > window:
            logs.log(
                "WARNING",
                "side effect overran its timeout",
                consumer=self.consumer,
                claimId=claim_id,
                tookMs=took_ms,
                timeoutMs=window,
            )
