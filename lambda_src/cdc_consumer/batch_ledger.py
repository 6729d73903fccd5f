"""The ledger's part in one batch: what was applied already, and what each transaction lists.

One :class:`BatchLedger` per batch (and consumer). At the first record that needs exactly-once
bookkeeping it looks the batch up once: the heads of its lanes, the markers horizon
(:mod:`cdc_consumer.marker_horizon`) and the markers that may exist, in one consistent
BatchGetItem, then one Query per lane (:meth:`~cdc_consumer.ledger.LedgerStore.read`). A record
found there is a duplicate before anything is planned. Each transaction then carries the entry
and the head of its listed records' lanes (:func:`cdc_consumer.transactions.commit`), and before
each attempt the records the lanes now list are dropped: a record's "it is new" holds only under
the head version it was read at, which is the version the transaction's head update requires.
After a meeting (another writer committed in a lane), every lane of the batch is read again.

Which records are listed, and in which lane (a record's route says whether it has a place in a
lane: :meth:`~cdc_consumer.routes.route.Route.lane_position`):

- a DynamoDB stream record whose event names its shard (``shardId``: a mapping with a tumbling
  window, or a redrive's replay of a failed batch or a quarantine message that kept it) is listed
  in the lane of (consumer, stream, shard). If it may also have a per-record marker, the markers
  are looked up too: written by an older runtime before the ledger took over (the upgrade:
  :mod:`cdc_consumer.legacy_markers`), or by a shard-less writer (its creation time is at or
  before the markers horizon). In the second case it is written with a marker as well as listed,
  so a shard-less writer of it at the same moment meets it on the marker;
- a DynamoDB stream record without a shard keeps a per-record marker (no shared item, 2 write
  units a record in a transaction: docs/design.md, the ledger). Before writing one, the batch
  raises the markers horizon over its records, and looks them up in the lanes the registry
  (:mod:`cdc_consumer.lane_registry`) names, where a windowed delivery may have listed them;
- a record whose route gives it no place in a lane keeps a per-record marker, keyed on its
  change's ``eventID`` (its route says why); and so do snapshot rows of a backfill (no
  sequence number of a stream).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from cdc_consumer import defaults
from cdc_consumer.change import Change
from cdc_consumer.defaults import ID_ATTRIBUTE
from cdc_consumer.exceptions import UndecodableRecordError
from cdc_consumer.lane_registry import LaneRegistry
from cdc_consumer.ledger import SORT_ATTRIBUTE, Lane, LaneState, LedgerStore
from cdc_consumer.legacy_markers import LegacyMarkers, batch_get
from cdc_consumer.marker_horizon import MarkerHorizon
from cdc_consumer.record_writes import RecordWrites
from cdc_consumer.routes import route_of
from cdc_consumer.routes.route import LanePosition
from cdc_consumer.settings import Settings

Ref = tuple[Lane, int]
"""A record in the ledger: its lane (stream, shard) and its sequence number."""


def stream_number(record: Any) -> LanePosition | None:
    """A record's place in a lane as its route gives it (stream ARN, sequence number); None
    when it keeps a per-record marker."""
    return route_of(record).lane_position(record)


def reference(record: Any, shard: str | None) -> Ref | None:
    """The ledger reference of a record delivered from ``shard``; None for a record without a
    place in a lane, and for one whose shard is unknown."""
    found = stream_number(record)
    if found is None or not shard:
        return None
    return (found[0], shard), found[1]


class BatchLedger:
    """The ledger of one batch's records (see the module docstring)."""

    def __init__(
        self,
        store: LedgerStore,
        legacy: LegacyMarkers,
        registry: LaneRegistry,
        records: Sequence[Any],
        shard: str | None,
    ) -> None:
        self.store, self.legacy, self.registry = store, legacy, registry
        self.horizon = MarkerHorizon(store.client, store.table, store.consumer)
        self.records, self.shard = records, shard
        self._states: dict[Lane, LaneState] | None = None
        self._covered: set[str] = set()
        self._marked: set[str] = set()
        self._in_lanes: set[tuple[str | None, int]] = set()
        self._created: dict[int, int] = {}

    @classmethod
    def open(
        cls,
        settings: Settings,
        client: Any,
        clock: Callable[[], float],
        records: Sequence[Any],
        shard: str | None = None,
    ) -> BatchLedger | None:
        """The batch's ledger (``shard``: the event's), or None without a ledger table."""
        if settings.ledger_table is None:
            return None
        ttl = defaults.marker_ttl_seconds()
        table, consumer = settings.ledger_table, settings.consumer
        store = LedgerStore(client, table, consumer, ttl, clock)
        legacy = LegacyMarkers(client, settings.idempotency_table, table, consumer, clock)
        registry = LaneRegistry(client, table, consumer, ttl, clock)
        return cls(store, legacy, registry, records, shard)

    # --- deciding, record by record ---------------------------------------------------------

    def listing(self, change: Change) -> Ref | None:
        """Where ``change`` is listed (None: it keeps a per-record marker)."""
        return reference(change.raw, self.shard)

    def marked(self, change: Change) -> bool:
        """Whether a listed ``change`` also gets a marker: it may have one already."""
        self._look()
        return change.event_id in self._marked

    def applied(self, change: Change) -> bool:
        """Whether an entry lists the record, or a marker covers it."""
        states = self._look()
        ref = self.listing(change)
        if ref is not None:
            state = states.get(ref[0])
            listed = state is not None and state.is_applied(ref[1])
            return listed or change.event_id in self._covered
        return stream_number(change.raw) in self._in_lanes

    # --- the lookup ---------------------------------------------------------------------------

    def _look(self) -> dict[Lane, LaneState]:
        if self._states is None:
            changes = _changes(self.records)
            self._states = self._read(changes)
            self._find_in_lanes(changes)
        return self._states

    def _read(self, changes: list[Change]) -> dict[Lane, LaneState]:
        """The lanes' heads, the markers horizon and the markers an older runtime may have
        written, in one consistent BatchGetItem; the markers the horizon adds in a second one
        (only while it covers records of the batch); then one Query per lane (each head read
        before its Query: see :mod:`cdc_consumer.ledger`)."""
        lanes: dict[Lane, list[int]] = defaultdict(list)
        listed: list[Change] = []
        for change in changes:
            ref = self.listing(change)
            if ref is not None:
                lanes[ref[0]].append(ref[1])
                listed.append(change)
                self._created[ref[1]] = self._seconds(change.creation_time_us)
        if not lanes:
            return {}
        table = self.store.table
        heads = {lane: _key_of(self.store.head_key(lane)) for lane in lanes}
        older = [c for c in listed if self.legacy.may_have_marker(c)]
        found = batch_get(
            self.store.client,
            {
                table: [self.store.head_key(lane) for lane in lanes] + [self.horizon.key()],
                self.legacy.idempotency_table: self.legacy.keys(older),
            },
        )
        items = {_key_of(item): item for item in found.get(table, [])}
        until = MarkerHorizon.until(items.get(_key_of(self.horizon.key())))
        later = [c for c in listed if c not in older and _within(c, until)]
        markers = found.get(self.legacy.idempotency_table, [])
        if later:
            keys = {self.legacy.idempotency_table: self.legacy.keys(later)}
            markers += batch_get(self.store.client, keys)[self.legacy.idempotency_table]
        self._covered = self.legacy.covered(listed, markers)
        # Only the horizon's records are marked: markers of the upgrade's (an older runtime's,
        # within its margin) are looked up, as the upgrade always did (docs/design.md, the ledger).
        self._marked = {c.event_id for c in listed if _within(c, until)}
        return {
            lane: self.store.read(lane, numbers, items.get(heads[lane]))
            for lane, numbers in lanes.items()
        }

    def _find_in_lanes(self, changes: list[Change]) -> None:
        """Shard-less records: raise the markers horizon over them (before any marker of them
        is written), then look them up in the lanes of their stream the registry names."""
        streams: dict[str | None, dict[int, int]] = defaultdict(dict)
        for change in changes:
            found = stream_number(change.raw)
            if found is not None and self.listing(change) is None:
                streams[found[0]][found[1]] = self._seconds(change.creation_time_us)
        if not streams:
            return
        self.horizon.reach(max(t for created in streams.values() for t in created.values()))
        for stream, created in streams.items():
            for lane in self.registry.lanes(stream):
                self._in_lanes.update((stream, n) for n in self._lane_lists(lane, created))

    def _lane_lists(self, lane: Lane, created: dict[int, int]) -> set[int]:
        """Which of the numbers of ``created`` (number: creation time) ``lane`` lists: its head
        read first, its entries only when the creation times of its records overlap theirs."""
        [head] = batch_get(self.store.client, {self.store.table: [self.store.head_key(lane)]})[
            self.store.table
        ] or [None]
        if head is None:
            return set()
        probe = LaneState("", *lane)
        probe.read_head(head)
        if not probe.spans(min(created.values()), max(created.values())):
            return set()
        return self.store.read(lane, list(created), head).applied

    # --- writing (cdc_consumer.transactions.commit) --------------------------------------------

    def _state(self, lane: Lane) -> LaneState:
        states = self._look()
        if lane not in states:
            states[lane] = self.store.read(lane, [])
        return states[lane]

    def actions(self, records: Sequence[RecordWrites]) -> list[dict[str, Any]]:
        actions: list[dict[str, Any]] = []
        for lane, numbers in _by_lane(records).items():
            state = self._state(lane)
            if self.registry.due(state.registered):  # before the lane's entry can commit
                state.registered = self.registry.register(lane)
            actions += self.store.actions(state, numbers, self._times(numbers))
        return actions

    def committed(self, records: Sequence[RecordWrites]) -> None:
        for lane, numbers in _by_lane(records).items():
            self.store.committed(self._state(lane), numbers, self._times(numbers))

    def refresh(self, records: Sequence[RecordWrites]) -> list[RecordWrites]:
        """Read every lane of the batch again (another writer committed in one); the records of
        ``records`` the lanes now list."""
        states = self._look()
        for lane in states:
            refs = [reference(record, self.shard) for record in self.records]
            numbers = [ref[1] for ref in refs if ref is not None and ref[0] == lane]
            states[lane] = self.store.read(lane, numbers)
        return self.listed_now(records)

    def listed_now(self, records: Sequence[RecordWrites]) -> list[RecordWrites]:
        states = self._look()
        return [
            record
            for record in records
            if record.listed is not None
            and record.listed[0] in states
            and states[record.listed[0]].is_applied(record.listed[1])
        ]

    def _seconds(self, created_us: int | None) -> int:
        """A creation time in epoch seconds (rounded up); now for a record that has none."""
        if created_us is None:
            return int(self.store.clock())
        return -(-created_us // 1_000_000)

    def _times(self, numbers: list[int]) -> tuple[int, int] | None:
        times = [self._created[n] for n in numbers if n in self._created]
        return (min(times), max(times)) if times else None


def _within(change: Change, until: int | None) -> bool:
    """Whether ``change`` was created at or before the markers horizon ``until``."""
    if until is None:
        return False
    created = change.creation_time_us
    return created is None or created <= until * 1_000_000


def _key_of(item: Any) -> str:
    """A ledger item's key, comparable."""
    return json.dumps([item[ID_ATTRIBUTE], item[SORT_ATTRIBUTE]], sort_keys=True)


def _by_lane(records: Sequence[RecordWrites]) -> dict[Lane, list[int]]:
    lanes: dict[Lane, list[int]] = defaultdict(list)
    for record in records:
        if record.listed is not None:
            lanes[record.listed[0]].append(record.listed[1])
    return lanes


def _changes(records: Sequence[Any]) -> list[Change]:
    changes = []
    for record in records:
        try:
            changes.append(Change.from_record(record))
        except UndecodableRecordError:  # poison later; it has no marker to find
            continue
    return changes
