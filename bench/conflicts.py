"""DynamoDB's answer to overlapping in-flight transactions on one item, which moto never gives.

DynamoDB documents that a ``TransactWriteItems`` touching an item that another ongoing
``TransactWriteItems`` touches is cancelled (``TransactionCanceledException``, reason
``TransactionConflict`` at that item's action), and that a ``PutItem``, ``UpdateItem`` or
``DeleteItem`` of an item an ongoing transaction touches is refused
(``TransactionConflictException``). It publishes no window: how long an item counts as held.
moto runs one request at a time and never answers either way.

The model (:class:`InFlight`), in modelled time (bench/modelled_time.py):

- a transaction that commits holds each item it names from the moment it is sent for its whole
  modelled round trip (bench/cost.py: 25 ms for 5 items, 32 ms for 25, about 50 ms for 100) -
  the pessimistic reading: DynamoDB holds an item from its prepare to its commit, which is
  within the round trip;
- a transaction sent while one of its items is held by another shard's transaction is
  cancelled, with ``TransactionConflict`` at each such action and ``None`` at the others, and is
  not sent to moto (it changes nothing); it costs its round trip and its write units
  (bench/cost.py charges a cancelled transaction in full); it holds nothing;
- a single-item write to a held item is refused with ``TransactionConflictException``; single
  writes hold nothing (DynamoDB lists no case where one cancels a transaction);
- a transaction cancelled by moto (a failed condition) holds nothing either; reads never
  conflict, and ``TransactGetItems`` (which neither consumer sends) is not modelled.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: (table, the key's attributes as canonical JSON): one item.
ItemKey = tuple[str, str]
#: Single-item writes that an ongoing transaction on their item refuses.
SINGLE_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
TRANSACTION = "TransactWriteItems"
CONFLICT_REASON = "TransactionConflict"
CONFLICT_MESSAGE = "Transaction is ongoing for the item"


def item_key(table: str, key: Mapping[str, Any]) -> ItemKey:
    return table, json.dumps(key, sort_keys=True)


@dataclass(frozen=True)
class KeySchemas:
    """Each table's key attribute names (to find an item's key in a Put's whole item)."""

    keys: Mapping[str, tuple[str, ...]]

    @classmethod
    def of(cls, client: Any) -> KeySchemas:
        """The key schemas of every table ``client`` (boto3 DynamoDB) lists."""
        keys = {}
        for table in client.list_tables()["TableNames"]:
            schema = client.describe_table(TableName=table)["Table"]["KeySchema"]
            keys[table] = tuple(part["AttributeName"] for part in schema)
        return cls(keys)

    def written(self, operation: str, params: Mapping[str, Any]) -> list[ItemKey]:
        """The item each action of a transaction writes (in order), or the item of a single
        write; empty for any other request."""
        if operation == TRANSACTION:
            return [self._action_item(action) for action in params.get("TransactItems", [])]
        if operation in SINGLE_WRITES:
            return [self._item(params)]
        return []

    def _action_item(self, action: Mapping[str, Any]) -> ItemKey:
        ((_kind, body),) = action.items()
        return self._item(body)

    def _item(self, body: Mapping[str, Any]) -> ItemKey:
        table = body["TableName"]
        if "Key" in body:
            return item_key(table, body["Key"])
        item = body["Item"]
        return item_key(table, {name: item[name] for name in self.keys[table]})


@dataclass(frozen=True)
class Hold:
    """An item held by a shard's transaction over modelled ``[start, end)``."""

    start: float
    end: float
    shard: int


class InFlight:
    """The items committed transactions hold, in modelled time (module docstring).

    Checked in the order of modelled send times (the scheduler's), so a hold that ended before
    the time checked can be forgotten.
    """

    def __init__(self) -> None:
        self._held: dict[ItemKey, list[Hold]] = {}

    def conflicting(self, items: Sequence[ItemKey], at: float, shard: int) -> list[int]:
        """The indexes of ``items`` another shard's transaction holds at ``at``."""
        found = []
        for index, item in enumerate(items):
            holds = self._held.get(item)
            if not holds:
                continue
            holds[:] = [hold for hold in holds if hold.end > at]
            if any(hold.start <= at and hold.shard != shard for hold in holds):
                found.append(index)
        return found

    def hold(self, items: Sequence[ItemKey], start: float, end: float, shard: int) -> None:
        for item in items:
            self._held.setdefault(item, []).append(Hold(start, end, shard))


def cancelled(actions: int, conflicting: Sequence[int]) -> dict[str, Any]:
    """The parsed answer of a transaction cancelled for conflicts at ``conflicting``."""
    reasons = [
        {"Code": CONFLICT_REASON, "Message": CONFLICT_MESSAGE}
        if index in conflicting
        else {"Code": "None"}
        for index in range(actions)
    ]
    codes = ", ".join(reason["Code"] for reason in reasons)
    return {
        "Error": {
            "Code": "TransactionCanceledException",
            "Message": "Transaction cancelled, please refer cancellation reasons for specific "
            f"reasons [{codes}]",
        },
        "CancellationReasons": reasons,
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }


def refused() -> dict[str, Any]:
    """The parsed answer of a single-item write to an item a transaction holds."""
    return {
        "Error": {"Code": "TransactionConflictException", "Message": CONFLICT_MESSAGE},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
