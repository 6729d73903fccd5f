"""What every failure source gives the redrive's one driver (:mod:`~cdc_consumer.redrive.driver`):
the entries to replay in order, and for each how it is held back, read, deleted and kept.

A failure source is one place failed records are kept, one module each in
:mod:`cdc_consumer.redrive.sources` (an S3 bucket's objects, an on-failure queue's pointers,
the quarantine queue's records), with a module of the same name in ``cdc_constructs.
failure_kinds`` (what is provisioned and granted) and ``cdc_local.destinations`` (how the local
pipeline writes it): docs/design.md, "Adding a failure destination".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from cdc_consumer.redrive_shapes import RedriveCause

__all__ = ["Batch", "Entry", "FailureSource", "Hold"]

Hold = tuple[RedriveCause, str]
"""Why an entry is not replayed this run: the typed cause and the sentence for people."""


@dataclass(frozen=True)
class Entry:
    """One thing a source asks to replay: a message or an object (``id``, as reported), with
    whatever the source needs to come back to it (``handle``)."""

    id: str
    handle: Any = None


@dataclass(frozen=True)
class Batch:
    """The records an entry holds, and where they are in the stream."""

    records: list[dict[str, Any]]
    shard_id: str | None
    first: str
    last: str
    #: The failure's own timestamp (an invocation record's, a quarantine message's).
    failed_at: str | None = None
    #: Whether the mapping's filters apply (an on-failure range covers every record between its
    #: sequence numbers; a quarantined record was delivered, so it is not filtered again).
    filtered: bool = True


class FailureSource(Protocol):
    """A source for one run: the driver asks it, in this order, for each entry."""

    def entries(self, limit: int | None) -> Iterator[Entry]:
        """The entries to replay, in the order they must replay (at most ``limit``)."""
        ...

    def hold(self, entry: Entry) -> Hold | None:
        """Why ``entry`` must wait before it is even read (an earlier one stays), or None."""
        ...

    def read(self, entry: Entry) -> Batch | None:
        """Its records; None when they cannot be replayed (reported by the source: another's,
        malformed, lost, unreadable)."""
        ...

    def hold_records(self, entry: Entry, batch: Batch) -> Hold | None:
        """Why its records must wait (an earlier change of one of their items), or None."""
        ...

    def delete(self, entry: Entry) -> str | None:
        """Delete it, its records all replayed; why that failed, or None."""
        ...

    def keep(self, entry: Entry, batch: Batch | None, *, blocking: bool = True) -> None:
        """It stays (held, refused, unreadable, failed; or planned by a dry run, not
        ``blocking``): what follows must not overtake a blocking one."""
        ...

    def interrupt(self, entry: Entry) -> None:
        """Time ran out before ``entry``: it and the rest stay for the next run."""
        ...

    def close(self) -> None:
        """The run is over: make what was received and kept visible again."""
        ...
