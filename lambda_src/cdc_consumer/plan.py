"""The write plan of a batch: which records are written alone, and which share a transaction.

The second step of the write path (docs/design.md §4, the walk of one record): the batch adds
each record's writes (:mod:`cdc_consumer.record_writes`) to the :class:`Plan` until one does
not fit; the write step (:mod:`cdc_consumer.write`) then writes what the plan holds, and a new
plan starts.

**The rule** (docs/design.md, "The write plan"): a record is written alone when every action of
it may be (:attr:`~cdc_consumer.sinks.protocol.ActionKind.writes_alone`: a version-guarded Put
or Update, idempotent by itself); every other record goes into the transaction group (its
marker, a merge, a swap or a plain action need one). Writing alone where it applies is always
the cheaper choice by the cost model the bench prices with: 1 write unit per KB per item
against 2 in a transaction, so the write units decide before requests or time are compared
(tests/bench/test_cost.py tries sizes and counts). An item is in one of the two only, so one
item's writes keep their order.

A :class:`TransactionGroup` holds consecutive records while they stay within DynamoDB's limits:
100 actions, 4 MB, and no item twice (mergeable actions of one item, hot aggregates, merge into
one instead), with two actions and a bounded listing per ledger lane.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.defaults import ALONE_PENDING_RECORDS
from cdc_consumer.ledger import Lane, Listing
from cdc_consumer.record_writes import ItemIdentity, RecordWrites
from cdc_consumer.service_limits import MAX_TRANSACTION_ACTIONS, MAX_TRANSACTION_BYTES
from cdc_consumer.sinks.protocol import kind_of

#: The actions a ledger lane adds to a transaction: its entry's Put and its head's Update.
LEDGER_ACTIONS = 2
#: The most bytes an entry and a head take in a transaction's request (an entry lists at most
#: 98 records, each in at most 19 bytes: a 129-digit difference).
MAX_ENTRY_BYTES = 4096


@dataclass
class TransactionGroup:
    """Consecutive records that will be committed in one transaction."""

    records: list[RecordWrites] = field(default_factory=list)
    actions: int = 0
    size: int = 0
    identities: set[ItemIdentity] = field(default_factory=set)
    #: Items so far touched only by mergeable actions, and their merge (hot aggregates).
    merged: dict[ItemIdentity, Any] = field(default_factory=dict)
    #: The ledger lanes of the listed records, with what they list: each adds its entry and its
    #: head, and an entry lists no more than :data:`~cdc_consumer.ledger.MAX_LISTING_BYTES` take.
    lanes: dict[Lane, Listing] = field(default_factory=dict)

    def fits(self, writes: RecordWrites) -> bool:
        """Whether ``writes`` can join without breaking a DynamoDB transaction limit. An item
        already in the group is allowed only where both sides are actions that merge; each
        ledger lane takes two actions (its entry and its head) and at most
        :data:`MAX_ENTRY_BYTES`, and its entry a bounded listing."""
        if not writes.items:  # a record without effect always fits
            return True
        shared = self._merges(writes)
        lanes = len(self.lanes.keys() | ({writes.listed[0]} if writes.listed else set()))
        listing = self.lanes.get(writes.listed[0]) if writes.listed else None
        return (
            shared is not None
            and (listing is None or writes.listed is None or listing.fits(writes.listed[1]))
            and self.actions + len(writes.items) - len(shared) + LEDGER_ACTIONS * lanes
            <= MAX_TRANSACTION_ACTIONS
            and self.size + writes.size + MAX_ENTRY_BYTES * lanes <= MAX_TRANSACTION_BYTES
        )

    def _merges(self, writes: RecordWrites) -> dict[ItemIdentity, Any] | None:
        """The merged actions of the items ``writes`` shares with the group; None when it
        shares an item that cannot be merged."""
        shared: dict[ItemIdentity, Any] = {}
        for identity in self.identities & writes.identities:
            earlier, later = self.merged.get(identity), writes.mergeable.get(identity)
            merged = merge(earlier, later)
            if merged is None:
                return None
            shared[identity] = merged
        return shared

    def add(self, writes: RecordWrites) -> None:
        self.records.append(writes)
        if not writes.items:
            return
        shared = self._merges(writes) or {}
        self.actions += len(writes.items) - len(shared)
        self.size += writes.size
        for identity in writes.identities - self.identities:
            if identity in writes.mergeable:
                self.merged[identity] = writes.mergeable[identity]
        self.merged.update(shared)
        self.identities.update(writes.identities)
        if writes.listed is not None:
            self.lanes.setdefault(writes.listed[0], Listing()).add(writes.listed[1])

    def take(self) -> list[RecordWrites]:
        """The records, leaving the group empty."""
        records = self.records
        self.records, self.actions, self.size, self.identities = [], 0, 0, set()
        self.merged, self.lanes = {}, {}
        return records

    def __bool__(self) -> bool:
        return bool(self.records)


def merge(earlier: Any, later: Any) -> Any:
    """``earlier`` then ``later`` (two actions of one item) as one action, or None."""
    if earlier is None or later is None:
        return None
    kind = kind_of(earlier)
    if kind.merge is None or kind_of(later) is not kind:
        return None
    return kind.merge(earlier, later)


def writes_alone(writes: RecordWrites) -> bool:
    """Whether the plan writes a record alone (the rule of the module docstring)."""
    return writes.alone and bool(writes.items)


@dataclass
class Plan:
    """The records waiting to be written: a transaction group and the records written alone.
    An item is in one of the two only, so one item's writes keep their order."""

    group: TransactionGroup = field(default_factory=TransactionGroup)
    single: list[RecordWrites] = field(default_factory=list)
    single_items: set[ItemIdentity] = field(default_factory=set)

    def fits(self, writes: RecordWrites) -> bool:
        """Whether ``writes`` can join without a write of the plan first."""
        if writes_alone(writes):
            return len(self.single) < ALONE_PENDING_RECORDS and not (
                writes.identities & self.group.identities
            )
        return self.group.fits(writes) and not (writes.identities & self.single_items)

    def add(self, writes: RecordWrites) -> None:
        if writes_alone(writes):
            self.single.append(writes)
            self.single_items.update(writes.identities)
        else:
            self.group.add(writes)

    def take(self) -> tuple[list[RecordWrites], list[RecordWrites]]:
        """The records written alone and those of the transaction group; the plan is empty."""
        single, self.single, self.single_items = self.single, [], set()
        return single, self.group.take()

    def __bool__(self) -> bool:
        return bool(self.single) or bool(self.group)
