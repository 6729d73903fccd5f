"""The ledger's part in one batch: what was applied already, and what each transaction lists.

One :class:`BatchLedger` per batch (and consumer): at the first record that needs exactly-once
bookkeeping it looks the batch up once per lane (:meth:`~cdc_consumer.ledger.LedgerStore.read`:
one GetItem and one Query) and, during an upgrade, the old markers once
(:class:`~cdc_consumer.legacy_markers.LegacyMarkers`: one BatchGetItem); a record found there
is a duplicate before anything is planned. Each transaction then carries the entry and the head
of its listed records' lanes (:func:`cdc_consumer.transactions.commit`); when another writer
committed in the lane meanwhile, the lane is read again and the records it now lists are
duplicates.

The ledger is used for a DynamoDB stream's records whenever the function has a ledger table,
whatever the mapping's parallelization factor: a consumer whose records were applied under one
bookkeeping must find them under the other, and markers never look at the ledger, so a change
of the factor that switched between the two applied records twice (found by the model test:
applied under the ledger, redelivered with a factor of 5). With a factor above 1 the shard's
lanes meet in the stream's head, as busy shards do (docs/design.md, the ledger: the price).
Elsewhere the records keep per-record markers:

- the Kinesis route: one DynamoDB change may be in the Kinesis stream twice, under two
  sequence numbers (AWS documents it), so only its DynamoDB ``eventID`` (the marker's key)
  tells the second from a new change;
- snapshot rows of a backfill: they have no sequence number.
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
from cdc_consumer.ledger import SORT_ATTRIBUTE, LaneState, LedgerStore
from cdc_consumer.legacy_markers import LegacyMarkers, batch_get
from cdc_consumer.settings import Settings
from cdc_consumer.transactions import RecordWrites

#: ``eventSource`` of a record Lambda delivers from a DynamoDB stream.
DYNAMODB_EVENT_SOURCE = "aws:dynamodb"

Ref = tuple[str | None, int]
"""A record in the ledger: its stream (``eventSourceARN``) and its sequence number."""


def reference(record: Any) -> Ref | None:
    """The ledger reference of a raw DynamoDB stream record; None for any other record."""
    if not isinstance(record, dict) or record.get("eventSource") != DYNAMODB_EVENT_SOURCE:
        return None
    stream = record.get("dynamodb")
    number = stream.get("SequenceNumber") if isinstance(stream, dict) else None
    if not isinstance(number, str) or not number.isdigit():
        return None
    arn = record.get("eventSourceARN")
    return (arn if isinstance(arn, str) else None), int(number)


class BatchLedger:
    """The ledger of one batch's records (see the module docstring)."""

    def __init__(
        self, store: LedgerStore, legacy: LegacyMarkers | None, records: Sequence[Any]
    ) -> None:
        self.store = store
        self.legacy = legacy
        self.records = records
        self._states: dict[str | None, LaneState] | None = None
        self._covered: set[str] = set()

    @classmethod
    def open(
        cls, settings: Settings, client: Any, clock: Callable[[], float], records: Sequence[Any]
    ) -> BatchLedger | None:
        """The batch's ledger, or None where per-record markers stay (module docstring)."""
        if settings.ledger_table is None:
            return None
        ttl = defaults.marker_ttl_seconds()
        store = LedgerStore(client, settings.ledger_table, settings.consumer, ttl, clock)
        legacy = LegacyMarkers(
            client, settings.idempotency_table, settings.ledger_table, settings.consumer, clock
        )
        return cls(store, legacy, records)

    def applied(self, ref: Ref, change: Change) -> bool:
        """Whether an entry lists the record, or an old marker covers it."""
        if self._states is None:
            self._states = self._read()
        state = self._states.get(ref[0])
        return (state is not None and state.is_applied(ref[1])) or change.event_id in self._covered

    def _read(self) -> dict[str | None, LaneState]:
        """The lanes' heads and the old markers in one consistent BatchGetItem, then one Query
        per lane (each head read before its Query: see :mod:`cdc_consumer.ledger`)."""
        lanes: dict[str | None, list[int]] = defaultdict(list)
        records = []
        for record in self.records:
            ref = reference(record)
            if ref is not None:
                lanes[ref[0]].append(ref[1])
                records.append(record)
        changes = _changes(records)
        keys = {self.store.table: [self.store.head_key(stream) for stream in lanes]}
        if self.legacy is not None:
            keys[self.legacy.idempotency_table] = self.legacy.keys(changes)
        found = batch_get(self.store.client, keys)
        if self.legacy is not None:
            markers = found.get(self.legacy.idempotency_table, [])
            self._covered = self.legacy.covered(changes, markers)
        heads = {_key_of(self.store.head_key(stream)): stream for stream in lanes}
        read: dict[str | None, Any] = dict.fromkeys(lanes)
        for item in found.get(self.store.table, []):
            read[heads[_key_of(item)]] = item
        return {s: self.store.read(s, numbers, read[s]) for s, numbers in lanes.items()}

    def _state(self, stream: str | None) -> LaneState:
        if self._states is None:
            self._states = {}
        if stream not in self._states:
            self._states[stream] = self.store.read(stream, [])
        return self._states[stream]

    def actions(self, records: Sequence[RecordWrites]) -> list[dict[str, Any]]:
        actions: list[dict[str, Any]] = []
        for stream, numbers in _by_lane(records).items():
            actions += self.store.actions(self._state(stream), numbers)
        return actions

    def committed(self, records: Sequence[RecordWrites]) -> None:
        for stream, numbers in _by_lane(records).items():
            self.store.committed(self._state(stream), numbers)

    def refresh(self, records: Sequence[RecordWrites]) -> list[RecordWrites]:
        lanes = _by_lane(records)
        for stream in lanes:
            numbers = [ref[1] for r in self.records if (ref := reference(r)) and ref[0] == stream]
            assert self._states is not None
            self._states[stream] = self.store.read(stream, numbers)
        return [
            record
            for record in records
            if record.listed is not None
            and self._state(record.listed[0]).is_applied(record.listed[1])
        ]


def _key_of(item: Any) -> str:
    """A ledger item's key, comparable."""
    return json.dumps([item[ID_ATTRIBUTE], item[SORT_ATTRIBUTE]], sort_keys=True)


def _by_lane(records: Sequence[RecordWrites]) -> dict[str | None, list[int]]:
    lanes: dict[str | None, list[int]] = defaultdict(list)
    for record in records:
        if record.listed is not None:
            lanes[record.listed[0]].append(record.listed[1])
    return lanes


def _changes(records: list[Any]) -> list[Change]:
    changes = []
    for record in records:
        try:
            changes.append(Change.from_record(record))
        except UndecodableRecordError:  # poison later; it has no marker to find
            continue
    return changes
