"""The backfill's messages (docs/backfill.md): the state machine's inputs and outputs.

ViewBackfill (``cdc_constructs``) provisions a state machine: a start step, then a Distributed Map
over the table's parallel-scan segments, each segment one or more invocations of the segment
function, which scans its segment and hands each item to the consumer function as a snapshot
change (:class:`SnapshotBatch`). One function serves both steps:
:data:`cdc_consumer.handler_paths.BACKFILL_HANDLER`, in the runtime layer. The local pipeline
runs the same handler in-process. Standard library only.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from cdc_consumer.message_fields import (
    ContractError,
    as_object,
    integer_field,
    optional_text_field,
    require_field,
    text_field,
)

__all__ = [
    "BACKFILL_EVENT_KEY",
    "BACKFILL_ID_MAX_LENGTH",
    "BACKFILL_ID_REFUSED_CHARACTERS",
    "BACKFILL_PERMANENT_ERRORS",
    "BACKFILL_REFUSED_ERROR",
    "MAX_PLANNED_SEGMENTS",
    "SEGMENT_BYTES",
    "SNAPSHOT_EVENT_SOURCE",
    "BackfillPlan",
    "BackfillRefusal",
    "BackfillRequest",
    "ConsumerProgress",
    "SegmentProgress",
    "SegmentResult",
    "SegmentTask",
    "SnapshotBatch",
    "backfill_id",
]


class BackfillRefusal(enum.StrEnum):
    """Why a backfill refused to start (``BackfillRefusedError.refusal``)."""

    NO_PROGRESS = "no-progress"
    """The consumer has recorded no progress yet: it may simply not have applied a change."""
    OTHER = "other"
    """Anything an operator must fix (the error's message says what)."""


MAX_PLANNED_SEGMENTS: Final = 10_000
"""The most segments one backfill plans: the plan's ``segments`` list passes through the state
machine's 256 KB payload (10,000 numbers take about 50 KB)."""

SEGMENT_BYTES: Final = 2 * 1024**3
"""A request without ``totalSegments`` gets one segment per this many bytes of the table
(``TableSizeBytes``; DynamoDB's parallel-scan guidance), within 1..MAX_PLANNED_SEGMENTS."""

SNAPSHOT_EVENT_SOURCE: Final = "cdc-constructs:backfill"
"""The ``eventSource`` of a snapshot record (a stream record's is ``aws:dynamodb``)."""

BACKFILL_EVENT_KEY: Final = "cdcBackfill"
"""The key of a consumer event that carries snapshot records (:class:`SnapshotBatch`); an
event source mapping's events never have it, so the runtime tells the two apart once per
batch."""

BACKFILL_REFUSED_ERROR: Final = "BackfillRefusedError"
"""The ``errorType`` of the segment function's refusals (bad input, a horizon the consumer has
not reached, a projection that cannot take snapshot rows): the name of the runtime's exception
class, which Step Functions matches to fail the backfill at once instead of retrying it."""

BACKFILL_PERMANENT_ERRORS: Final = (
    BACKFILL_REFUSED_ERROR,
    "AccessDeniedError",
    "ConfigurationError",
)
"""The segment function's ``errorType`` values no retry can fix, which the state machine never
retries: a refusal; a call its role may not make (``AccessDeniedError``); a function without
its settings (``ConfigurationError``). The names of the runtime's exception classes."""


@dataclass(frozen=True)
class BackfillRequest:
    """The execution input of a backfill (and the start step's input).

    ``backfill_id``: names the run; its progress records and its snapshot records' ids derive
    from it, so starting the same id again resumes it (and is a no-op for what was done).
    ``horizon``: epoch seconds; None lets the start step decide (the start time less the skew
    margin, or the consumer's recorded progress if that is earlier); a backfill id keeps the
    horizon it was first planned with. ``total_segments``: None lets the start step decide
    from the table's size when the backfill starts (:data:`SEGMENT_BYTES`)."""

    backfill_id: str
    total_segments: int | None
    horizon: int | None = None
    execution: str | None = None
    state_machine: str | None = None

    BACKFILL_ID: ClassVar[str] = "backfillId"
    TOTAL_SEGMENTS: ClassVar[str] = "totalSegments"
    HORIZON: ClassVar[str] = "horizon"
    EXECUTION: ClassVar[str] = "execution"
    """The execution's ARN (``$$.Execution.Id``), set by the state machine: the start step
    refuses a second execution of a backfill while another one runs it."""
    STATE_MACHINE: ClassVar[str] = "stateMachine"
    """The state machine's ARN (``$$.StateMachine.Id``): whose running executions are listed."""

    def to_dict(self) -> dict[str, Any]:
        document = {
            self.BACKFILL_ID: self.backfill_id,
            self.TOTAL_SEGMENTS: self.total_segments,
            self.HORIZON: self.horizon,
        }
        if self.execution is not None:
            document[self.EXECUTION] = self.execution
        if self.state_machine is not None:
            document[self.STATE_MACHINE] = self.state_machine
        return document

    @classmethod
    def from_dict(cls, document: Any) -> BackfillRequest:
        what = "backfill request"
        document = as_object(document, what)
        return cls(
            backfill_id=backfill_id(text_field(document, cls.BACKFILL_ID, what)),
            total_segments=integer_field(document, cls.TOTAL_SEGMENTS, what, None),
            horizon=integer_field(document, cls.HORIZON, what, None),
            execution=optional_text_field(document, cls.EXECUTION, what),
            state_machine=optional_text_field(document, cls.STATE_MACHINE, what),
        )


BACKFILL_ID_MAX_LENGTH: Final = 80
"""A backfill id is at most 80 characters: a Step Functions execution name's limit (the default
id is the execution's name)."""

BACKFILL_ID_REFUSED_CHARACTERS: Final = frozenset(' <>{}[]?*"#%\\^|~`$&,;:/')
"""Characters Step Functions refuses in an execution name (besides whitespace and control
characters), refused in a backfill id too: the id names executions, progress records and
snapshot records' ids."""


def backfill_id(value: str) -> str:
    """``value`` if it is a backfill id Step Functions would accept as an execution name
    (1..80 characters, none of :data:`BACKFILL_ID_REFUSED_CHARACTERS`, no whitespace or control
    characters); else :class:`ContractError` naming the problem."""
    refused = sorted(
        {c for c in value if c in BACKFILL_ID_REFUSED_CHARACTERS or c.isspace() or ord(c) < 32}
        | {c for c in value if 0x7F <= ord(c) <= 0x9F}
    )
    if refused or not 0 < len(value) <= BACKFILL_ID_MAX_LENGTH:
        raise ContractError(
            f"backfill id {value!r} is not one Step Functions accepts as an execution name: "
            f"1..{BACKFILL_ID_MAX_LENGTH} characters, got {len(value)}"
            + (f", with {''.join(refused)!r} refused" if refused else "")
            + "; use letters, digits, '-' and '_'"
        )
    return value


@dataclass(frozen=True)
class BackfillPlan:
    """The start step's output: what every segment runs with. ``segments``: 0..total-1, the
    Distributed Map's items (:meth:`tasks` builds their inputs)."""

    backfill_id: str
    total_segments: int
    horizon: int
    consumer: str
    table: str

    SEGMENTS: ClassVar[str] = "segments"

    def to_dict(self) -> dict[str, Any]:
        return {
            BackfillRequest.BACKFILL_ID: self.backfill_id,
            BackfillRequest.TOTAL_SEGMENTS: self.total_segments,
            BackfillRequest.HORIZON: self.horizon,
            "consumer": self.consumer,
            "table": self.table,
            self.SEGMENTS: list(range(self.total_segments)),
        }

    @classmethod
    def from_dict(cls, document: Any) -> BackfillPlan:
        what = "backfill plan"
        document = as_object(document, what)
        return cls(
            backfill_id=text_field(document, BackfillRequest.BACKFILL_ID, what),
            total_segments=integer_field(document, BackfillRequest.TOTAL_SEGMENTS, what),
            horizon=integer_field(document, BackfillRequest.HORIZON, what),
            consumer=text_field(document, "consumer", what),
            table=text_field(document, "table", what),
        )

    def tasks(self) -> list[SegmentTask]:
        """Each segment's first invocation input."""
        return [
            SegmentTask(self.backfill_id, segment, self.total_segments, self.horizon)
            for segment in range(self.total_segments)
        ]


@dataclass(frozen=True)
class SegmentTask:
    """One segment invocation's input: the Map's item selector builds it from the plan and
    ``$$.Map.Item.Value``; a segment that returned ``done: false`` is invoked again with its
    :class:`SegmentResult` (a valid SegmentTask). ``resume_key``: the Scan's
    ``ExclusiveStartKey`` (DynamoDB JSON); None: the progress record says (or the start)."""

    backfill_id: str
    segment: int
    total_segments: int
    horizon: int
    resume_key: Mapping[str, Any] | None = None

    SEGMENT: ClassVar[str] = "segment"
    RESUME_KEY: ClassVar[str] = "resumeKey"

    def to_dict(self) -> dict[str, Any]:
        return {
            BackfillRequest.BACKFILL_ID: self.backfill_id,
            self.SEGMENT: self.segment,
            BackfillRequest.TOTAL_SEGMENTS: self.total_segments,
            BackfillRequest.HORIZON: self.horizon,
            self.RESUME_KEY: dict(self.resume_key) if self.resume_key is not None else None,
        }

    @classmethod
    def from_dict(cls, document: Any) -> SegmentTask:
        what = "segment task"
        document = as_object(document, what)
        resume = document.get(cls.RESUME_KEY)
        if resume is not None and not isinstance(resume, Mapping):
            raise ContractError(f"{what}: {cls.RESUME_KEY} must be an object or null")
        return cls(
            backfill_id=text_field(document, BackfillRequest.BACKFILL_ID, what),
            segment=integer_field(document, cls.SEGMENT, what),
            total_segments=integer_field(document, BackfillRequest.TOTAL_SEGMENTS, what),
            horizon=integer_field(document, BackfillRequest.HORIZON, what),
            resume_key=resume,
        )

    @staticmethod
    def is_task(document: Any) -> bool:
        """Whether an input is a segment task (else a :class:`BackfillRequest`)."""
        return isinstance(document, Mapping) and SegmentTask.SEGMENT in document


@dataclass(frozen=True)
class SegmentResult:
    """One segment invocation's output. ``done``: the segment is scanned to its end; else
    invoke again with this document (it is a :class:`SegmentTask`). ``items`` / ``pages`` /
    ``quarantined``: the segment's totals so far (all its invocations)."""

    task: SegmentTask
    done: bool
    items: int
    pages: int
    quarantined: int = 0

    DONE: ClassVar[str] = "done"
    ITEMS: ClassVar[str] = "items"
    PAGES: ClassVar[str] = "pages"
    QUARANTINED: ClassVar[str] = "quarantined"

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.task.to_dict(),
            self.DONE: self.done,
            self.ITEMS: self.items,
            self.PAGES: self.pages,
            self.QUARANTINED: self.quarantined,
        }

    @classmethod
    def from_dict(cls, document: Any) -> SegmentResult:
        what = "segment result"
        document = as_object(document, what)
        done = require_field(document, cls.DONE, what)
        if not isinstance(done, bool):
            raise ContractError(f"{what}: {cls.DONE} must be true or false, got {done!r}")
        return cls(
            task=SegmentTask.from_dict(document),
            done=done,
            items=integer_field(document, cls.ITEMS, what),
            pages=integer_field(document, cls.PAGES, what),
            quarantined=integer_field(document, cls.QUARANTINED, what, 0),
        )


@dataclass(frozen=True)
class SegmentProgress:
    """A segment's progress record in the idempotency table (id :meth:`record_id`), written
    after each page the consumer applied, so a failed or timed-out invocation resumes after the
    last applied page. ``expiration``: the markers' lifetime (docs/backfill.md)."""

    resume_key: Mapping[str, Any] | None
    done: bool
    items: int
    pages: int
    quarantined: int = 0

    RESUME_KEY: ClassVar[str] = "resumeKey"
    """Attribute: the next page's ExclusiveStartKey, JSON text of DynamoDB JSON (absent: start)."""

    @staticmethod
    def record_id(consumer: str, backfill_id: str, segment: int, total_segments: int) -> str:
        return f"{consumer}#backfill#{backfill_id}#{segment}/{total_segments}"


@dataclass(frozen=True)
class ConsumerProgress:
    """How far a consumer has applied its stream (with :data:`CONSUMER_PROGRESS_ENV`): the
    idempotency-table item :meth:`record_id`, attribute :attr:`APPLIED_UNTIL` the newest
    ``ApproximateCreationDateTime`` (epoch microseconds) among the records it has settled.
    Written at most once per :attr:`INTERVAL_SECONDS` per container, only forward."""

    consumer: str
    applied_until_us: int
    first_applied_us: int | None = None
    """The oldest creation time among the first records it recorded (None: recorded before
    this attribute existed): a horizon before it asks for changes the consumer never read."""

    APPLIED_UNTIL: ClassVar[str] = "appliedUntilUs"
    FIRST_APPLIED: ClassVar[str] = "firstAppliedUs"
    INTERVAL_SECONDS: ClassVar[int] = 5

    @staticmethod
    def record_id(consumer: str) -> str:
        return f"{consumer}#progress"


@dataclass(frozen=True)
class SnapshotBatch:
    """The ``cdcBackfill`` part of a consumer event carrying snapshot records (the event's
    ``Records`` are then snapshot records: ``eventName`` INSERT, no ``userIdentity``,
    ``eventSource`` :data:`SNAPSHOT_EVENT_SOURCE`). ``consumer``: the consumer backfilled; a
    consumer group hands the batch to that member only. ``probe``: no records; the consumer
    answers whether its projections take snapshot rows (raising ``SnapshotRefusedError`` when
    one does not) and writes nothing."""

    backfill_id: str
    horizon: int
    segment: int | None = None
    probe: bool = False
    consumer: str | None = None

    CONSUMER: ClassVar[str] = "consumer"

    def to_dict(self) -> dict[str, Any]:
        return {
            BackfillRequest.BACKFILL_ID: self.backfill_id,
            BackfillRequest.HORIZON: self.horizon,
            SegmentTask.SEGMENT: self.segment,
            "probe": self.probe,
            self.CONSUMER: self.consumer,
        }

    @classmethod
    def from_dict(cls, document: Any) -> SnapshotBatch:
        what = f"{BACKFILL_EVENT_KEY} of a consumer event"
        document = as_object(document, what)
        consumer = document.get(cls.CONSUMER)
        return cls(
            backfill_id=text_field(document, BackfillRequest.BACKFILL_ID, what),
            horizon=integer_field(document, BackfillRequest.HORIZON, what),
            segment=integer_field(document, SegmentTask.SEGMENT, what, None),
            probe=bool(document.get("probe", False)),
            consumer=consumer if isinstance(consumer, str) and consumer else None,
        )

    @staticmethod
    def of(event: Any) -> SnapshotBatch | None:
        """The snapshot part of a consumer event; None for a stream event (one dict lookup)."""
        part = event.get(BACKFILL_EVENT_KEY) if isinstance(event, Mapping) else None
        return None if part is None else SnapshotBatch.from_dict(part)
