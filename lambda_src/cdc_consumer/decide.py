"""The decide step: decode a record, run its projections, and say what to do with it.

The first step of the write path (docs/design.md §4, the walk of one record). :meth:`Decider.decide`
writes nothing: it turns one stream record into one :data:`Decision`, with the record's writes
(:class:`~cdc_consumer.record_writes.RecordWrites`) paired by the batch's :class:`Bookkeeping`
with a processed-marker or a listing in the batch's ledger (a record the ledger lists already is
a duplicate with nothing to write). The batch loop carries the decision out in order:

- :class:`Apply`: the change and, in projection mode, its transaction writes (marker first);
- :class:`Compensate`: poison whose projection asked for compensating writes (quarantine it,
  then commit them exactly once);
- :class:`Poison`: quarantine the record whole;
- :class:`Transient`: stop at the record and report it;
- :class:`Misconfigured`: the consumer cannot apply any such record (its stream lacks an image
  a projection reads): fail the invocation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cdc_consumer import defaults
from cdc_consumer.change import Change
from cdc_consumer.defaults import IMAGES_OF_VIEW_TYPE
from cdc_consumer.exceptions import (
    InvalidActionError,
    MissingImageError,
    PermanentError,
    UndecodableRecordError,
    projection_reader,
)
from cdc_consumer.record_writes import RecordWrites, action_list, marker_action
from cdc_consumer.sinks.protocol import AlreadyApplied

if TYPE_CHECKING:
    from cdc_consumer.batch_ledger import BatchLedger

Projection = Callable[[Change], Sequence[Mapping[str, Any]]]
"""A function from a change to its TransactWriteItems actions (boto3 client shape)."""


class _Decided:
    """A decision's fields, read-only by convention. Plain slotted classes, not dataclasses:
    one is made per record, and a frozen dataclass costs several times more to make (and to
    import)."""

    __slots__: tuple[str, ...] = ()

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


class Apply(_Decided):
    """Apply the change: commit ``writes`` (projection mode; None without projections), then
    run the side effects."""

    __slots__ = ("change", "writes")

    def __init__(self, change: Change, writes: RecordWrites | None) -> None:
        self.change = change
        self.writes = writes


class Compensate(_Decided):
    """Quarantine the record for ``error``, then commit ``writes``: its marker and the
    compensating actions the projection's :class:`PermanentError` carried."""

    __slots__ = ("change", "error", "writes")

    def __init__(self, change: Change, writes: RecordWrites, error: PermanentError) -> None:
        self.change = change
        self.writes = writes
        self.error = error


class Poison(_Decided):
    """Quarantine the record whole: processing it again would fail again (``change`` is None
    when the record could not be decoded)."""

    __slots__ = ("change", "error")

    def __init__(self, error: Exception, change: Change | None = None) -> None:
        self.error = error
        self.change = change


class Transient(_Decided):
    """Stop at the record and report it: a retry may succeed."""

    __slots__ = ("change", "error")

    def __init__(self, error: Exception, change: Change | None = None) -> None:
        self.error = error
        self.change = change


class Misconfigured(_Decided):
    """Fail the invocation: no record like this one can be applied by this consumer."""

    __slots__ = ("change", "error")

    def __init__(self, error: MissingImageError, change: Change) -> None:
        self.error = error
        self.change = change


Decision = Apply | Compensate | Poison | Transient | Misconfigured

Reads = tuple[str, frozenset[str]]
"""A reader's name (projection or side effect) and the images it declared it reads."""


class Bookkeeping:
    """How one batch keeps its records' writes exactly-once: a processed-marker on the
    idempotency ``table`` (``consumer``'s), or, with the batch's ``ledger``, a listing in its
    transaction's ledger entry (docs/design.md §12)."""

    __slots__ = ("clock", "consumer", "ledger", "marker_ttl", "table")

    def __init__(
        self,
        table: str,
        consumer: str,
        clock: Callable[[], float],
        ledger: BatchLedger | None = None,
    ) -> None:
        self.table, self.consumer, self.clock, self.ledger = table, consumer, clock, ledger
        self.marker_ttl = defaults.marker_ttl_seconds()  # read once per batch

    def writes(
        self, position: int, change: Change, actions: Any, quarantined: bool
    ) -> RecordWrites:
        """The record's writes: ``actions`` paired with its marker or its ledger listing (see
        :meth:`RecordWrites.build`, which raises :class:`InvalidActionError`); a record the
        ledger finds applied is a duplicate with nothing to write."""
        if isinstance(actions, AlreadyApplied):  # the sink holds its effect: a duplicate
            return RecordWrites(position, [], [], frozenset(), 0, quarantined, duplicate=True)
        if type(actions) is list and not actions:  # nothing to write: no marker either
            return RecordWrites(position, [], [], frozenset(), 0, quarantined)
        marker = marker_action(
            self.table,
            f"{self.consumer}#{change.event_id}",
            int(self.clock()) + self.marker_ttl,
            change.source_arn,
        )
        ledger = self.ledger
        if ledger is None:
            return RecordWrites.build(
                position, marker, actions, self.table, quarantined=quarantined
            )
        ref = ledger.listing(change)
        marked = ref is not None and ledger.marked(change)
        writes = RecordWrites.build(
            position,
            marker,
            actions,
            self.table,
            quarantined=quarantined,
            listed=ref,
            marked=marked,
        )
        # Writes that guard themselves (no marker, not listed) are not the ledger's to judge: a
        # listed compensation of the record's quarantine must not skip its fixed replay.
        kept = writes.listed is not None or (writes.marker and bool(writes.items))
        if not kept or not ledger.applied(change):
            return writes
        return RecordWrites(position, [], [], frozenset(), 0, quarantined, duplicate=True)


class Decider:
    """Decides records for one invocation.

    ``bookkeeping`` pairs a record's actions with its processed-marker or ledger listing.
    ``reads``: the images each projection and side effect declared it reads. ``decode``: a
    record's Change (default :meth:`Change.from_record`).
    """

    __slots__ = ("bookkeeping", "decode", "projections", "reads")

    def __init__(
        self,
        projections: Sequence[Projection],
        bookkeeping: Bookkeeping,
        reads: Sequence[Reads] = (),
        decode: Callable[[Any], Change] = Change.from_record,
    ) -> None:
        self.projections = projections
        self.bookkeeping = bookkeeping
        self.reads = reads
        self.decode = decode

    def decide(self, position: int, record: Any) -> Decision:
        try:
            change = self.decode(record)
        except UndecodableRecordError as error:
            return Poison(error)
        if self.reads:
            missing = self.missing_image(change)
            if missing is not None:
                return Misconfigured(missing, change)
        if not self.projections:
            return Apply(change, None)
        try:
            actions: list[Any] = []
            already = 0  # projections that hold the change's effect (AlreadyApplied)
            for projection in self.projections:
                returned = projection(change)
                already += isinstance(returned, AlreadyApplied)
                # A list, as projections return: no need to check it is a sequence.
                actions.extend(returned if type(returned) is list else action_list(returned))
            if already == len(self.projections):
                actions = AlreadyApplied()
            return Apply(change, self.bookkeeping.writes(position, change, actions, False))
        except PermanentError as error:
            return self._permanent(position, change, error)
        except MissingImageError as error:  # it read an image the stream never carries
            return Misconfigured(error.read_by(projection_reader(projection)), change)
        except Exception as error:  # user code: anything but PermanentError is transient
            return Transient(error, change)

    def _permanent(self, position: int, change: Change, error: PermanentError) -> Decision:
        if not error.actions:
            return Poison(error, change)
        try:
            writes = self.bookkeeping.writes(position, change, error.actions, True)
        except InvalidActionError as invalid:
            # The compensation itself is unusable: quarantine without it, naming both.
            return Poison(
                InvalidActionError(f"{error}; and its compensating actions are invalid: {invalid}"),
                change,
            )
        return Compensate(change, writes, error)

    def missing_image(self, change: Change) -> MissingImageError | None:
        """The error for the first reader whose declared images the record's view type lacks.

        Judged by the view type, not by the images present: an INSERT has no old image on any
        stream (legitimately None), but a NEW_IMAGE stream never has one, so a reader of old
        images cannot work there at all. A record that states no view type is not judged.
        """
        carried = IMAGES_OF_VIEW_TYPE.get(change.view_type or "")
        if carried is None:
            return None
        for reader, images in self.reads:
            lacking = sorted(images - carried)
            if lacking:
                assert change.view_type is not None
                return MissingImageError(change.sequence_number, change.view_type, lacking, reader)
        return None
