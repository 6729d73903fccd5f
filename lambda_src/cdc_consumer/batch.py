"""One batch, in order, stopping at the first failure: the loop behind ``StreamProcessor.handle``.

The loop is the write path read top to bottom (docs/design.md §4, the walk of one record): each
record is decided (:mod:`cdc_consumer.decide`), its writes join the plan
(:mod:`cdc_consumer.plan`), a plan that is full or must come first is written
(:mod:`cdc_consumer.write`), and what became of the records is accounted
(:mod:`cdc_consumer.account`). Each step returns to the loop; none calls another back.
Whatever must come after every earlier record (a quarantine, a failure, a side effect, the
deadline, the end of the batch) comes after :meth:`BatchRun.flush`, the one place that writes
the pending plan first: a failure found there is earlier in the stream, so it wins.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cdc_consumer.account import Account
from cdc_consumer.batch_ledger import BatchLedger
from cdc_consumer.change import Change
from cdc_consumer.claims import SideEffectClaims, SideEffectMode
from cdc_consumer.contention import Contention
from cdc_consumer.deadline import Deadline, LambdaContext
from cdc_consumer.decide import (
    Apply,
    Bookkeeping,
    Compensate,
    Decider,
    Decision,
    Misconfigured,
    Poison,
    Projection,
    Reads,
    Transient,
)
from cdc_consumer.outcomes import DONE, Next, Outcomes, Step, Stop, sequence_number
from cdc_consumer.plan import Plan
from cdc_consumer.record_writes import RecordWrites
from cdc_consumer.settings import Settings
from cdc_consumer.sinks.protocol import SideEffect
from cdc_consumer.tally import Tally
from cdc_consumer.write import Writer

__all__ = ["BatchRun", "GroupTurn", "LambdaContext", "Registry"]


class Registry(Protocol):
    """What a batch needs of its :class:`~cdc_consumer.processor.StreamProcessor`."""

    projections: list[Projection]
    side_effects: list[tuple[str, SideEffect]]
    reads: list[Reads]
    safety_margin_ms: int | None
    side_effect_timeout_ms: int | None
    clock: Callable[[], float]
    sleep: Callable[[float], None]

    @property
    def dynamodb(self) -> Any: ...

    @property
    def sqs(self) -> Any: ...


@dataclass(frozen=True)
class GroupTurn:
    """What a consumer group member's turn shares with the members before it in one
    invocation: the function's timeout as read at the group's start (each member's margin and
    side-effect timeout follow it, not the time left when its turn comes), and whether records
    were taken before (then a member with less than the margin left at its first record
    reports that record, where the group stopped, instead of failing the invocation)."""

    timeout_ms: int | None
    taken_before: bool


@dataclass
class BatchRun:
    """The state of one ``handle`` call over ``records``: the steps of the write path, each an
    object the loop calls in turn (``writer`` is None without projections, ``side_effects``
    without side effects)."""

    records: Sequence[Any]
    decider: Decider
    account: Account
    deadline: Deadline
    writer: Writer | None
    side_effects: SideEffectMode | None
    plan: Plan = field(default_factory=Plan)

    @classmethod
    def assemble(
        cls,
        registry: Registry,
        settings: Settings,
        context: LambdaContext | None,
        records: Sequence[Any],
        tally: Tally,
        turn: GroupTurn | None = None,
        decode: Callable[[Any], Change] = Change.from_record,
        shard: str | None = None,
    ) -> BatchRun:
        """The loop over ``records``, with the steps ``registry`` uses (``turn``: a consumer
        group member's; ``decode`` makes a record's Change, a snapshot batch's a
        :class:`SnapshotChange`; ``shard``: the shard the event names, if any)."""
        outcomes = Outcomes(
            settings.consumer, settings.quarantine_queue_url, records, tally, registry, shard
        )
        deadline = Deadline(context, registry.safety_margin_ms)
        if turn is not None:
            deadline.timeout_ms, deadline.taken_before = turn.timeout_ms, turn.taken_before
        writer = side_effects = ledger = None
        if registry.projections:
            ledger = BatchLedger.open(settings, registry.dynamodb, registry.clock, records, shard)
            contention = Contention(registry.clock, registry.sleep, deadline=deadline)
            writer = Writer(registry.dynamodb, ledger, contention)
        if registry.side_effects:
            side_effects = SideEffectMode(
                registry.side_effects,
                SideEffectClaims(registry.dynamodb, settings.idempotency_table, registry.clock),
                settings.consumer,
                tally,
                outcomes,
                deadline,
                registry.side_effect_timeout_ms,
                registry.clock,
                registry.sleep,
            )
        bookkeeping = Bookkeeping(
            settings.idempotency_table, settings.consumer, registry.clock, ledger
        )
        decider = Decider(registry.projections, bookkeeping, registry.reads, decode)
        account = Account(tally, outcomes)
        return cls(records, decider, account, deadline, writer, side_effects)

    def run(self) -> str | None:
        """Process the records; the sequence number to report, or None when all are settled."""
        position = 0
        while True:
            step = self.advance(position)
            if step is None:  # the common case: on to the next record (no Next to make)
                position += 1
            elif type(step) is Next:
                position = step.position
            else:
                break
        return sequence_number(self.records[step.position]) if isinstance(step, Stop) else None

    def advance(self, position: int) -> Step | None:
        """Take the record at ``position``; None: go on with the next one."""
        if position >= len(self.records):
            return self.flush() or DONE
        near, remaining = self.deadline.near()
        if near and position == 0 and not self.deadline.taken_before:
            # No record taken: a function error, not a partial failure.
            raise self.deadline.error(remaining)
        if near:
            return self.flush() or self.account.failed(
                position,
                None,
                reason="deadline",
                remainingMs=remaining,
                safetyMarginMs=self.deadline.margin_ms,
            )
        decision = self.decider.decide(position, self.records[position])  # decide
        if decision.change is not None:
            self.account.tally.saw(position, decision.change)
        if type(decision) is Apply:  # the common case first
            return self.apply(position, decision)
        return self.carry_out(position, decision)

    def carry_out(self, position: int, decision: Decision) -> Step | None:
        """A decision other than :class:`Apply`: each comes after every earlier record's
        writes."""
        if isinstance(decision, Poison):
            return self.flush() or self.account.quarantined(position, decision.error)
        if isinstance(decision, Transient):
            return self.flush() or self.account.failed(position, decision.error)
        if isinstance(decision, Compensate):
            return self.flush() or self.compensate(position, decision)
        if isinstance(decision, Misconfigured):
            step = self.flush()
            if step is not None:
                return step
            raise decision.error
        return self.apply(position, decision)

    def apply(self, position: int, decision: Apply) -> Step | None:
        """Plan the record's writes, then run its side effects after every write before it."""
        if self.writer is not None and decision.writes is not None:
            step = self.plan_writes(decision.writes)
            if step is not None:
                return step
        if self.side_effects is None:
            return None
        return self.flush() or self.side_effects.run(position, decision.change)

    def plan_writes(self, writes: RecordWrites) -> Step | None:
        """Add a record's writes to the plan, writing the plan first when they do not fit."""
        if not self.plan.fits(writes):  # plan
            step = self.flush()
            if step is not None:
                return step
        self.plan.add(writes)
        return None

    def compensate(self, position: int, decision: Compensate) -> Step:
        """Quarantine a poison record, then plan its marker with the compensating actions its
        projection's error carries (its OLD image's contribution taken back, say).

        Order: everything before the record is written (:meth:`flush`), then the quarantine
        message is sent, then the marker and actions join the plan like any record's (and
        commit with it, exactly once: a redelivery finds the marker and writes nothing). The
        message goes FIRST because a quarantine report must never be lost: the view changes
        for a poison record only once its report is in the queue, and if the send fails
        nothing of the record is committed, so it is reported to Lambda and retried from the
        same state. The price is a second message for the same record when it is delivered
        again (a later transient failure, a redelivery after success): at-least-once, which
        the queue's readers (redrive, operators) must tolerate anyway.
        """
        stop = self.account.outcomes.quarantine(position, decision.error)
        if stop is not None:
            return stop
        return self.plan_writes(decision.writes) or Next(position + 1)

    def flush(self) -> Step | None:
        """Write the pending plan and account for it (write, account); None: every record
        before the current one is settled."""
        if self.writer is None or not self.plan:
            return None
        written = self.writer.write(self.plan)  # write
        return self.account.written(written)  # account
