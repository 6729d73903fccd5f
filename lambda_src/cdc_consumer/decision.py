"""The per-record decision: decode a record, run its projections, and say what to do with it.

:func:`decide` touches nothing outside the process (no DynamoDB, no queue): it turns one stream
record into one :data:`Decision`, which the batch loop carries out in order:

- :class:`Apply`: the change and, in projection mode, its transaction writes (marker first);
- :class:`Compensate`: poison whose projection asked for compensating writes (quarantine it,
  then commit them exactly once);
- :class:`Poison`: quarantine the record whole;
- :class:`Transient`: stop at the record and report it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_consumer.change import Change
from cdc_consumer.exceptions import InvalidActionError, PermanentError, UndecodableRecordError
from cdc_consumer.transactions import RecordWrites, action_list

Projection = Callable[[Change], Sequence[Mapping[str, Any]]]
"""A function from a change to its TransactWriteItems actions (boto3 client shape)."""


@dataclass(frozen=True)
class Apply:
    """Apply the change: commit ``writes`` (projection mode; None without projections), then
    run the side effects."""

    change: Change
    writes: RecordWrites | None


@dataclass(frozen=True)
class Compensate:
    """Quarantine the record for ``error``, then commit ``writes``: its marker and the
    compensating actions the projection's :class:`PermanentError` carried."""

    change: Change
    writes: RecordWrites
    error: PermanentError


@dataclass(frozen=True)
class Poison:
    """Quarantine the record whole: processing it again would fail again."""

    error: Exception
    change: Change | None = None  # None when the record could not be decoded


@dataclass(frozen=True)
class Transient:
    """Stop at the record and report it: a retry may succeed."""

    error: Exception
    change: Change | None = None


Decision = Apply | Compensate | Poison | Transient


@dataclass(frozen=True)
class Decider:
    """Decides records for one invocation.

    ``writes_for(position, change, actions, quarantined)`` pairs a record's actions with its
    processed-marker (see :meth:`RecordWrites.build`); it raises :class:`InvalidActionError`.
    """

    projections: Sequence[Projection]
    writes_for: Callable[[int, Change, Any, bool], RecordWrites]

    def decide(self, position: int, record: Any) -> Decision:
        try:
            change = Change.from_record(record)
        except UndecodableRecordError as error:
            return Poison(error)
        if not self.projections:
            return Apply(change, None)
        try:
            actions: list[Any] = []
            for projection in self.projections:
                actions.extend(action_list(projection(change)))
            return Apply(change, self.writes_for(position, change, actions, False))
        except PermanentError as error:
            return self._permanent(position, change, error)
        except Exception as error:  # user code: anything but PermanentError is transient
            return Transient(error, change)

    def _permanent(self, position: int, change: Change, error: PermanentError) -> Decision:
        if not error.actions:
            return Poison(error, change)
        try:
            writes = self.writes_for(position, change, error.actions, True)
        except InvalidActionError as invalid:
            # The compensation itself is unusable: quarantine without it, naming both.
            return Poison(
                InvalidActionError(f"{error}; and its compensating actions are invalid: {invalid}"),
                change,
            )
        return Compensate(change, writes, error)
