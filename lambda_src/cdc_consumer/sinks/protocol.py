"""The sink protocol: what the engine needs of a sink, and of each action a sink returns.

A *sink* is what a projection writes to: a view table kept by version (:class:`LatestImage`),
a delta view fed by contributions (:class:`Contributions`), hot aggregates, an outbox, a
search index... The engine (intake, decision, plan, write) knows sinks only through this
module:

- **per sink** (:class:`Sink`): its actions for a change (``sink(change)``: a list of
  TransactWriteItems actions in boto3's client shape); whether it takes a backfill's snapshot
  rows (``takes_snapshots``, default False); the images it reads (``reads``, default none
  declared; ``reads=`` at registration wins: :func:`declared_reads`);
  ``start_batch(records)``, called before a batch is decided (a sink reading state for the
  whole batch in one request); ``merge_key(change)``, the view items a snapshot
  row's actions merge on (a backfill's page is grouped by it before it is cut into
  transactions, so one view item's deltas travel as one action);
- **a side effect** (:data:`SideEffect`) is the other kind of sink: a callable
  ``change -> None`` making an external call (a webhook, a search index), registered with
  ``@processor.side_effect``; the engine runs it after every earlier record's writes are
  committed and guards each call with a claim (:mod:`cdc_consumer.claims`).
- **per action** (:class:`ActionKind`, found by :func:`kind_of`): whether the action guards
  itself (idempotent by a version it carries, so its record needs no processed-marker), whether
  it makes its whole record idempotent (a swap), whether it may be written alone with a
  conditional ``PutItem`` / ``DeleteItem`` instead of in a transaction, what its failed
  condition means (:class:`OnConditionFailed`), and how two actions of one item merge; and,
  for a ``Put``, its item's key (``item_key``, DynamoDB JSON: :func:`item_key`), without
  which the engine cannot tell two Puts of one item apart (an ``Update``, ``Delete`` or
  ``ConditionCheck`` names its ``Key``).

An action says its kind with a ``sink_kind`` attribute (a ``dict`` subclass, as
:class:`~cdc_consumer.sinks.aggregates.Aggregate` and
:class:`~cdc_consumer.sinks.guarded.GuardedAction` are); a plain ``dict`` is :data:`PLAIN`:
written in a transaction with its record's marker, never merged, a failed condition refusing
the record. Adding a sink is one module defining its actions' kind: the engine names none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from cdc_consumer.change import Change

__all__ = [
    "PLAIN",
    "ActionKind",
    "AlreadyApplied",
    "OnConditionFailed",
    "SideEffect",
    "Sink",
    "batch_hook",
    "declared_reads",
    "item_key",
    "kind_of",
    "merge_key",
    "takes_snapshots",
]


class Sink(Protocol):
    """A projection: ``change -> list of TransactWriteItems actions`` (``[]``: nothing to
    write; :class:`AlreadyApplied`: nothing to write, the change's effect is already there).
    Optional attributes, read with defaults by the processor: ``takes_snapshots`` (bool),
    ``reads`` (image names), ``start_batch(records)``, ``merge_key(change)``."""

    def __call__(self, change: Change) -> list[Mapping[str, Any]]: ...


SideEffect = Callable[["Change"], None]
"""A side effect: a callable making an external call for a change (``None``: done; an
exception: the claim is released and the record fails, or, for a
:class:`~cdc_consumer.exceptions.PermanentError`, is quarantined). Run at least once and, unless
an invocation dies between the call and its claim's completion, exactly once
(:mod:`cdc_consumer.claims`)."""


class OnConditionFailed(Enum):
    """What a failed condition on an action means."""

    #: The record is refused (permanent: it is quarantined); the default.
    REFUSED = "refused"
    #: The item holds this version or a newer one: the action is a no-op (a duplicate).
    STALE = "stale"
    #: Another writer replaced what the action expected: transient, the record is retried.
    CONTENDED = "contended"


class ActionKind:
    """How the engine treats the actions of one kind (see the module docstring).

    :param name: for logs and errors.
    :param guards_itself: the action is idempotent by itself (a version guard): applied twice,
        the second is a failed condition, read as ``on_condition_failed``.
    :param guards_record: committed with its record's other actions, it makes the whole record
        idempotent (a swap: once applied, the version it expects is gone), so the record needs
        no processed-marker.
    :param writes_alone: it may be written by a single conditional ``PutItem`` / ``DeleteItem``
        / ``UpdateItem`` instead of a transaction (1 write unit per KB against 2): only for an
        action that guards itself and needs nothing written with it.
    :param on_condition_failed: what its failed condition means.
    :param merge: ``(earlier, later) -> action | None``: two actions of one item as one action
        with the effect of both in that order, or None when they cannot merge (default: never).
    """

    __slots__ = (
        "guards_itself",
        "guards_record",
        "merge",
        "name",
        "on_condition_failed",
        "writes_alone",
    )

    def __init__(
        self,
        name: str,
        *,
        guards_itself: bool = False,
        guards_record: bool = False,
        writes_alone: bool = False,
        on_condition_failed: OnConditionFailed = OnConditionFailed.REFUSED,
        merge: Callable[[Any, Any], Any] | None = None,
    ) -> None:
        if writes_alone and not guards_itself:
            raise ValueError(
                f"action kind {name!r}: writes_alone needs guards_itself (a write outside a "
                "transaction must be idempotent by itself)"
            )
        self.name = name
        self.guards_itself = guards_itself or guards_record
        self.guards_record = guards_record
        self.on_condition_failed = on_condition_failed
        self.merge = merge
        self.writes_alone = writes_alone

    def __repr__(self) -> str:
        return f"ActionKind({self.name!r})"


#: Every action that does not say its kind.
PLAIN = ActionKind("plain")


def kind_of(action: Any) -> ActionKind:
    """The kind of ``action``: its ``sink_kind``, else :data:`PLAIN`."""
    kind = getattr(action, "sink_kind", None)
    return kind if isinstance(kind, ActionKind) else PLAIN


class AlreadyApplied(list):  # type: ignore[type-arg]
    """What a sink returns for a change whose effect it already holds (a redelivery, or a
    change no newer than the one it applied): nothing to write, and the record counts as a
    duplicate (``DuplicatesSkipped``), not as processed. An empty ``list``, so code reading a
    sink's result as a list is unaffected; a plain ``[]`` means "nothing to write" without
    that knowledge (the record counts as processed)."""

    def __init__(self) -> None:
        super().__init__()


def declared_reads(sink: Any) -> tuple[str, ...]:
    """The images a sink reads (its ``reads``: ``"NewImage"`` and/or ``"OldImage"``; default
    none declared), as registering it without ``reads=`` takes them.

    :param sink: the function or object registered as a projection or side effect.
    """
    reads = getattr(sink, "reads", ())
    if isinstance(reads, str):
        return (reads,)
    return tuple(reads) if isinstance(reads, (list, tuple, set, frozenset)) else ()


def item_key(action: Any) -> Mapping[str, Any] | None:
    """A ``Put`` action's item key in DynamoDB JSON (its ``item_key``), when it says it: the
    engine cannot read a key from a Put's item without the table's key schema, and needs it to
    keep two writes of one item out of one transaction and in one lane when written alone.

    :param action: an action a sink returned (a ``dict`` subclass may carry ``item_key``).
    """
    key = getattr(action, "item_key", None)
    return key if isinstance(key, Mapping) else None


def takes_snapshots(sink: Any) -> bool:
    """Whether a sink takes a backfill's snapshot rows (its ``takes_snapshots``; default no)."""
    return bool(getattr(sink, "takes_snapshots", False))


def batch_hook(sink: Any) -> Callable[[list[Any]], None] | None:
    """A sink's ``start_batch(records)``, when it has one."""
    hook = getattr(sink, "start_batch", None)
    return hook if callable(hook) else None


def merge_key(sink: Any) -> Callable[[Change], str | None] | None:
    """A sink's ``merge_key(change)``, when it has one: a string naming the view items the
    change's actions merge on (None: none)."""
    key = getattr(sink, "merge_key", None)
    return key if callable(key) else None
