"""What one redrive run did: replayed, lost, failed and planned messages."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from cdc_consumer.redrive_shapes import RedriveCause

__all__ = [
    "FailedMessage",
    "LeaseHeld",
    "LostRange",
    "PlannedMessage",
    "RedriveReport",
    "RequarantinedRecord",
]


@dataclass(frozen=True)
class LostRange:
    """Records that can no longer be read: ``first..last`` of ``shard_id`` (both included)."""

    message_id: str
    shard_id: str
    first_sequence_number: str
    last_sequence_number: str
    record_count: int | None
    reason: str


@dataclass(frozen=True)
class FailedMessage:
    """A message redrive left in the queue, and why: ``reason`` for people, ``cause`` for code
    that decides (never match ``reason``'s text)."""

    message_id: str
    reason: str
    cause: RedriveCause


@dataclass(frozen=True)
class RequarantinedRecord:
    """A replayed record the consumer quarantined again: still poison, its fix is not in yet.

    ``message_id`` is the new quarantine message (it stays in the queue for the next run).
    """

    message_id: str
    sequence_number: str
    reason: str


@dataclass(frozen=True)
class LeaseHeld:
    """Another redrive of the consumer holds its lease: who, and until when (epoch seconds;
    0 when the holder could not be read). The run touched nothing; run it again later."""

    consumer_name: str
    owner: str
    expires_at: int

    @property
    def reason(self) -> str:
        until = datetime.fromtimestamp(self.expires_at, UTC).isoformat() if self.expires_at else "?"
        return (
            f"another redrive of consumer {self.consumer_name} holds the lease until {until}"
            f" (owner {self.owner}); nothing was replayed or deleted: run again once it ended"
        )


@dataclass(frozen=True)
class PlannedMessage:
    """What a dry run would replay for one message."""

    message_id: str
    shard_id: str | None
    first_sequence_number: str
    last_sequence_number: str
    record_count: int


@dataclass
class RedriveReport:
    """The outcome of one redrive run."""

    source: str
    #: The queue URL, or ``s3://bucket/prefix`` for an S3 on-failure destination.
    queue_url: str
    dry_run: bool = False
    messages_received: int = 0
    messages_deleted: int = 0
    #: Messages sent after the run started (e.g. re-quarantined by this replay): left for the
    #: next run so a run always ends.
    messages_deferred: int = 0
    records_replayed: int = 0
    #: Records of on-failure ranges that the mapping's filters exclude (not replayed).
    records_filtered: int = 0
    invocations: int = 0
    lost: list[LostRange] = field(default_factory=list)
    failed: list[FailedMessage] = field(default_factory=list)
    #: Messages (objects) of another consumer or stream, or naming neither: never replayed or
    #: deleted by this run, which therefore is not ok (someone must redrive them elsewhere).
    kept: list[FailedMessage] = field(default_factory=list)
    requarantined: list[RequarantinedRecord] = field(default_factory=list)
    planned: list[PlannedMessage] = field(default_factory=list)
    #: Messages (objects) of this consumer not replayed because an earlier change of one of
    #: their items is still pending (an earlier batch of the shard, a parent shard's batch, the
    #: other source's record): replaying them would apply a newer change first. Not ok.
    held: list[FailedMessage] = field(default_factory=list)
    #: Messages (objects) refused because they are older than the consumer's markers cover
    #: (:mod:`~cdc_consumer.redrive.marker_age`): neither replayed nor deleted. Not ok.
    refused: list[FailedMessage] = field(default_factory=list)
    #: What the run could not know and how it was conservative about it (e.g. a shard lineage
    #: DescribeStream no longer lists); for a person, does not make the run fail.
    notes: list[str] = field(default_factory=list)
    #: Another redrive of the consumer held its lease (redrive.lease): this run touched nothing
    #: (or, when it lost the lease midway, stopped). Not ok: run it again once the other ended.
    busy: LeaseHeld | None = None

    @property
    def lost_record_count(self) -> int:
        """Records lost: each range counts its batch size, or 1 when that is unknown."""
        return sum(lost.record_count or 1 for lost in self.lost)

    @property
    def ok(self) -> bool:
        """True when nothing was lost, failed, held back, kept as another's, or quarantined
        again, and no other redrive of the consumer held its lease."""
        return not (
            self.lost
            or self.failed
            or self.held
            or self.kept
            or self.requarantined
            or self.refused
            or self.busy
        )

    def to_log(self) -> dict[str, Any]:
        """The report as one structured log record."""
        document = asdict(self)
        document.update(event="redrive", ok=self.ok, lost_record_count=self.lost_record_count)
        return document

    def summary(self) -> str:
        """A few lines for a person."""
        verb = "would replay" if self.dry_run else "replayed"
        unit = "object" if self.queue_url.startswith("s3://") else "message"
        count = sum(p.record_count for p in self.planned) if self.dry_run else self.records_replayed
        lines = [
            f"redrive {self.source} {self.queue_url}: {self.messages_received} {unit}(s),"
            f" {verb} {count} record(s) in {self.invocations} invocation(s),"
            f" filtered out {self.records_filtered},"
            f" deleted {self.messages_deleted}, deferred {self.messages_deferred},"
            f" lost {self.lost_record_count} record(s), failed {len(self.failed)} {unit}(s),"
            f" held {len(self.held)}, refused {len(self.refused)} as older than the markers,"
            f" kept {len(self.kept)} not this consumer's,"
            f" re-quarantined {len(self.requarantined)} record(s)"
            f" -> {'ok' if self.ok else 'NOT OK'}"
        ]
        lines += [
            f"  planned {p.message_id}: shard {p.shard_id or '-'} sequence numbers"
            f" {p.first_sequence_number}..{p.last_sequence_number}, {p.record_count} record(s)"
            for p in self.planned
        ]
        lines += [
            f"  LOST {x.message_id}: shard {x.shard_id} sequence numbers"
            f" {x.first_sequence_number}..{x.last_sequence_number}: {x.reason}"
            for x in self.lost
        ]
        lines += [f"  FAILED {f.message_id}: {f.reason}" for f in self.failed]
        lines += [f"  HELD {h.message_id}: {h.reason}" for h in self.held]
        lines += [f"  REFUSED {r.message_id}: {r.reason}" for r in self.refused]
        lines += [f"  KEPT {k.message_id}: {k.reason}" for k in self.kept]
        lines += [
            f"  REQUARANTINED record {r.sequence_number} (message {r.message_id}): {r.reason}"
            for r in self.requarantined
        ]
        lines += [f"  BUSY {self.busy.reason}"] if self.busy is not None else []
        lines += [f"  NOTE {note}" for note in self.notes]
        return "\n".join(lines)
