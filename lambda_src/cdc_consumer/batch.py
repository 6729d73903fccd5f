"""One batch, in order, stopping at the first failure: the loop behind ``StreamProcessor.handle``.

Each record is decided (:mod:`cdc_consumer.decision`), then carried out by the strategy of
each registered mode (:mod:`cdc_consumer.modes`); the :class:`~cdc_consumer.tally.Tally`
counts what became of it. Whatever must come after every earlier record (a quarantine, a
failure, a side effect, the deadline, the end of the batch) goes through
:meth:`BatchRun.after_pending`, the one place that commits the pending transaction first:
a failure found there is earlier in the stream, so it wins.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cdc_consumer import defaults
from cdc_consumer.batch_ledger import BatchLedger
from cdc_consumer.change import Change
from cdc_consumer.claims import SideEffectClaims, SideEffectMode
from cdc_consumer.contention import Contention
from cdc_consumer.decision import (
    Apply,
    Compensate,
    Decider,
    Decision,
    Misconfigured,
    Poison,
    Projection,
    Reads,
    Transient,
)
from cdc_consumer.exceptions import DeadlineError
from cdc_consumer.modes import ProjectionMode
from cdc_consumer.outcomes import DONE, Next, Outcomes, Step, Stop, sequence_number
from cdc_consumer.settings import Settings
from cdc_consumer.sinks.protocol import AlreadyApplied, SideEffect
from cdc_consumer.tally import Tally
from cdc_consumer.transactions import RecordWrites, marker_action


class LambdaContext(Protocol):
    """The part of Lambda's context object the processor uses."""

    def get_remaining_time_in_millis(self) -> int: ...


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


@dataclass
class Deadline:
    """The invocation's remaining time against the safety margin.

    Unless ``fixed_margin_ms`` is given, the margin follows the function's timeout
    (:func:`cdc_consumer.defaults.safety_margin_ms`), read as the time remaining at the first
    check, which comes first thing in ``handle``: Lambda does not tell a function its
    configured timeout, and at that point the remaining time is that timeout less the
    handler's own preamble (milliseconds).
    """

    remaining: Callable[[], int | None]
    fixed_margin_ms: int | None = None
    margin_ms: int | None = None
    #: The remaining time at the first check: the function's timeout, as far as we can tell
    #: (a consumer group's member is given the group's: see :class:`GroupTurn`).
    timeout_ms: int | None = None
    #: Whether the invocation took records before this batch's first (a group member's turn
    #: after others): then a deadline at the first record is a partial stop, not an error.
    taken_before: bool = False

    def near(self) -> tuple[bool, int | None]:
        """Whether less than the margin is left, and the remaining milliseconds."""
        remaining = self.remaining()
        if remaining is None:
            return False, None
        if self.margin_ms is None:
            self.timeout_ms = remaining if self.timeout_ms is None else self.timeout_ms
            self.margin_ms = (
                defaults.safety_margin_ms(self.timeout_ms)
                if self.fixed_margin_ms is None
                else self.fixed_margin_ms
            )
        return remaining < self.margin_ms, remaining

    def time_left_ms(self) -> int | None:
        """The remaining time less the margin (None without a Lambda context)."""
        _, remaining = self.near()
        return None if remaining is None else remaining - (self.margin_ms or 0)

    def error(self, remaining: int | None) -> DeadlineError:
        return DeadlineError(
            f"the invocation had {remaining} ms left at its first record, less than the safety "
            f"margin of {self.margin_ms} ms, so it could take no record. The margin is a fifth "
            f"of the function's timeout, between {defaults.MIN_SAFETY_MARGIN_MS} and "
            f"{defaults.MAX_SAFETY_MARGIN_MS} ms, and {defaults.MIN_RECORD_TIME_MS} ms must "
            "remain for records after it: give the function a timeout of at least "
            f"{defaults.MIN_FUNCTION_TIMEOUT_SECONDS} s (Lambda's default is 3 s)"
        )


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
    """The state of one ``handle`` call over ``records``."""

    records: Sequence[Any]
    decider: Decider
    tally: Tally
    outcomes: Outcomes
    deadline: Deadline
    projection: ProjectionMode | None
    side_effects: SideEffectMode | None

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
        """The loop over ``records``, with one strategy per mode ``registry`` uses (``turn``: a
        consumer group member's; ``decode`` makes a record's Change, a snapshot batch's a
        :class:`SnapshotChange`; ``shard``: the shard the event names, if any)."""
        outcomes = Outcomes(
            settings.consumer,
            settings.quarantine_queue_url,
            records,
            tally,
            lambda: registry.sqs,
            shard,
        )

        def remaining_ms() -> int | None:
            return None if context is None else int(context.get_remaining_time_in_millis())

        deadline = Deadline(remaining_ms, registry.safety_margin_ms)
        if turn is not None:
            deadline.timeout_ms, deadline.taken_before = turn.timeout_ms, turn.taken_before

        projection = side_effects = ledger = None
        if registry.projections:
            ledger = BatchLedger.open(settings, registry.dynamodb, registry.clock, records, shard)
            projection = _projection_mode(registry, tally, outcomes, ledger, deadline)
        if registry.side_effects:
            side_effects = _side_effect_mode(registry, settings, tally, outcomes, deadline)
        return cls(
            records=records,
            decider=Decider(
                registry.projections,
                _writes_for(settings, registry.clock, ledger),
                registry.reads,
                decode,
            ),
            tally=tally,
            outcomes=outcomes,
            deadline=deadline,
            projection=projection,
            side_effects=side_effects,
        )

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
            return self.after_pending(lambda: DONE)
        near, remaining = self.deadline.near()
        if near and position == 0 and not self.deadline.taken_before:
            # No record taken: a function error, not a partial failure.
            raise self.deadline.error(remaining)
        if near:
            return self.after_pending(
                lambda: self.outcomes.fail(
                    position,
                    None,
                    reason="deadline",
                    remainingMs=remaining,
                    safetyMarginMs=self.deadline.margin_ms,
                )
            )
        return self.carry_out(position, self.decider.decide(position, self.records[position]))

    def carry_out(self, position: int, decision: Decision) -> Step | None:
        if decision.change is not None:
            self.tally.saw(position, decision.change)
        if type(decision) is Apply:  # the common case first
            return self.apply(position, decision)
        if isinstance(decision, Poison):
            return self.after_pending(lambda: self.quarantine_and_go_on(position, decision.error))
        if isinstance(decision, Transient):
            return self.after_pending(lambda: self.outcomes.fail(position, decision.error))
        if isinstance(decision, Compensate):
            return self.after_pending(lambda: self.compensate(position, decision))
        if isinstance(decision, Misconfigured):
            return self.after_pending(lambda: _raise(decision.error))
        return self.apply(position, decision)

    def apply(self, position: int, decision: Apply) -> Step | None:
        if self.projection is not None and decision.writes is not None:
            step = self.projection.add(decision.writes)
            if step is not None:
                return step
        if self.side_effects is None:
            return None
        side_effects = self.side_effects
        return self.after_pending(lambda: side_effects.run(position, decision.change))

    def compensate(self, position: int, decision: Compensate) -> Step:
        """Quarantine a poison record, then commit its marker with the compensating actions
        its projection's error carries (its OLD image's contribution taken back, say).

        Order: everything before the record is committed (:meth:`after_pending`), then the
        quarantine message is sent, then the marker and actions join the transaction group
        like any record's (and commit with it, exactly once: a redelivery finds the marker and
        writes nothing). The message goes FIRST because a quarantine report must never be
        lost: the view changes for a poison record only once its report is in the queue, and
        if the send fails nothing of the record is committed, so it is reported to Lambda and
        retried from the same state. The price is a second message for the same record when
        it is delivered again (a later transient failure, a redelivery after success):
        at-least-once, which the queue's readers (redrive, operators) must tolerate anyway.
        """
        stop = self.outcomes.quarantine(position, decision.error)
        if stop is not None:
            return stop
        assert self.projection is not None  # only projections compensate
        return self.projection.add(decision.writes) or Next(position + 1)

    def quarantine_and_go_on(self, position: int, error: Exception) -> Step:
        return self.outcomes.quarantine(position, error) or Next(position + 1)

    def after_pending(self, then: Callable[[], Step]) -> Step:
        """Commit the pending transaction, then do ``then``; a failure in the commit is earlier
        in the stream than anything ``then`` would do, so it is the answer instead."""
        if self.projection is not None:
            step = self.projection.commit()
            if step is not None:
                return step
        return then()


def _side_effect_mode(
    registry: Registry, settings: Settings, tally: Tally, outcomes: Outcomes, deadline: Deadline
) -> SideEffectMode:
    """The side-effect mode of a batch: claims, and timeouts that follow the deadline's."""

    def side_effect_timeout_ms() -> int:
        if registry.side_effect_timeout_ms is not None:
            return registry.side_effect_timeout_ms
        return defaults.side_effect_timeout_ms(deadline.timeout_ms)

    return SideEffectMode(
        registry.side_effects,
        SideEffectClaims(registry.dynamodb, settings.idempotency_table, registry.clock),
        settings.consumer,
        tally,
        outcomes,
        timeout_ms=side_effect_timeout_ms,
        remaining_ms=deadline.remaining,
        time_left_ms=deadline.time_left_ms,
        clock=registry.clock,
        sleep=registry.sleep,
    )


def _projection_mode(
    registry: Registry,
    tally: Tally,
    outcomes: Outcomes,
    ledger: BatchLedger | None,
    deadline: Deadline,
) -> ProjectionMode:
    """The projection mode of a batch: its ledger, and its patience with other writers up to the
    invocation's deadline (:mod:`cdc_consumer.contention`)."""

    def seconds_left() -> float | None:
        milliseconds = deadline.time_left_ms()
        return None if milliseconds is None else milliseconds / 1000

    contention = Contention(registry.clock, registry.sleep, time_left=seconds_left)
    return ProjectionMode(
        lambda: registry.dynamodb, tally, outcomes, ledger=ledger, contention=contention
    )


def _writes_for(
    settings: Settings, clock: Callable[[], float], ledger: BatchLedger | None
) -> Callable[[int, Change, Any, bool], RecordWrites]:
    """What pairs a record's actions with its processed-marker (:meth:`RecordWrites.build`),
    or, with the batch's ``ledger``, lists it in its transaction's ledger entry (a record the
    ledger finds applied is a duplicate with nothing to write)."""
    table, consumer = settings.idempotency_table, settings.consumer
    marker_ttl = defaults.marker_ttl_seconds()  # read once per batch

    def writes_for(position: int, change: Change, actions: Any, quarantined: bool) -> Any:
        if isinstance(actions, AlreadyApplied):  # the sink holds its effect: a duplicate
            return RecordWrites(position, [], [], frozenset(), 0, quarantined, duplicate=True)
        if type(actions) is list and not actions:  # nothing to write: no marker either
            return RecordWrites(position, [], [], frozenset(), 0, quarantined)
        marker = marker_action(
            table, f"{consumer}#{change.event_id}", int(clock()) + marker_ttl, change.source_arn
        )
        if ledger is None:
            return RecordWrites.build(position, marker, actions, table, quarantined=quarantined)
        ref = ledger.listing(change)
        marked = ref is not None and ledger.marked(change)
        writes = RecordWrites.build(
            position, marker, actions, table, quarantined=quarantined, listed=ref, marked=marked
        )
        # Writes that guard themselves (no marker, not listed) are not the ledger's to judge: a
        # listed compensation of the record's quarantine must not skip its fixed replay.
        kept = writes.listed is not None or (writes.marker and bool(writes.items))
        if not kept or not ledger.applied(change):
            return writes
        return RecordWrites(position, [], [], frozenset(), 0, quarantined, duplicate=True)

    return writes_for


def _raise(error: Exception) -> Step:
    raise error
