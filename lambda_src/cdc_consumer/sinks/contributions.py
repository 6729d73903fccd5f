"""Contributions: a delta projection (counts, sums) that a backfill can feed (docs/backfill.md).

A projection that applies the difference between a change's OLD and NEW images cannot take a
snapshot row (a row is a state, not a difference), and cannot take a change twice or out of
order. :class:`Contributions` keeps, for each source item, the *contribution* its current
state makes to the view (``(table, key, {attribute: number})`` shares, from your
``contribution(image)`` function) together with the version of the change or row it came from.
Each change or snapshot row then *replaces* its item's contribution:

* newer than the stored version: the view gets ``new - stored`` (UpdateItem ``ADD``, as hot
  aggregates, merged across records), and the stored contribution becomes the new one, in one
  transaction; the write is a *swap*, conditioned on the version it read, so a concurrent
  writer of the same item (the stream consumer and a backfill segment at once) makes it fail
  and retry rather than both apply;
* not newer: nothing is written (stale: a redelivery, a row older than a change already applied),
  except the replay of a record that was quarantined (its image could not be read): its swap
  took the item's contribution out and is marked ``unreadable``, so the same version replayed
  by the redrive through a fixed projection is applied, not taken for a duplicate;
* a snapshot row that contributes exactly what is stored: nothing is written either (a second
  rebuild over an unchanged view writes no item of the view nor of the contributions).

The view is then a function of the items' latest states, whatever order and however often
changes and rows arrive, and a rerun of a backfill is a no-op. A REMOVE (TTL expiry included)
leaves an empty contribution as a tombstone, which expires after the markers' lifetime (no older
change can be replayed later than that: docs/design.md, markers outlive every replay window).

Contributions are items of the idempotency table (``{name}#contribution#{key}``; attributes
``cdc_version``, ``shares``), read in one ``BatchGetItem`` per batch (``start_batch``) and
consistently; a change of an item the batch did not prefetch reads it with ``GetItem``. Price
against a plain delta projection: the contribution write replaces the processed-marker
(the swap makes the record idempotent), so write units stay alike; one read per batch is added.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal, DecimalException
from typing import Any

import boto3
from boto3.dynamodb.types import TypeSerializer

from cdc_consumer import decimals, defaults
from cdc_consumer.change import Change
from cdc_consumer.exceptions import ConfigurationError, PermanentError
from cdc_consumer.sinks.aggregates import Number, update_aggregate
from cdc_consumer.sinks.protocol import ActionKind, AlreadyApplied, OnConditionFailed
from cdc_consumer.versions import VERSION_ATTRIBUTE
from cdc_consumer.wire import deserialize_image, to_wire

__all__ = ["SWAP", "Contributions", "Share", "SwapAction"]

#: The attribute name placeholder of a swap's expected version.
SWAP_PLACEHOLDER = "#cdcExpected"

#: A *swap*: the contribution's Put, conditioned on the version it replaces. Committed with the
#: view's ADDs, it makes its record idempotent (once applied, the version it expects is gone:
#: no processed-marker); its failed condition means another writer replaced that version
#: meanwhile (a backfill's row and a stream change of one item at once): transient, the record
#: is retried and reads the contribution again.
SWAP = ActionKind("swap", guards_record=True, on_condition_failed=OnConditionFailed.CONTENDED)


class SwapAction(dict):  # type: ignore[type-arg]
    """A contribution's swap (a plain dict to boto3) and the key of the item it writes."""

    item_key: Mapping[str, Any] | None = None
    sink_kind = SWAP


Share = tuple[str, Mapping[str, Any], Mapping[str, Number]]
"""What an item's state adds to one view item: (table, key as Python values, {attribute: n})."""

#: The attribute holding a contribution's shares (JSON text).
SHARES_ATTRIBUTE = "shares"
#: Set (BOOL true) on a contribution whose version's record was quarantined, unread.
UNREADABLE_ATTRIBUTE = "unreadable"
#: BatchGetItem reads at most 100 keys per request.
BATCH_GET_KEYS = 100

_serializer = TypeSerializer()

Stored = tuple[str | None, dict[tuple[str, str, str], Decimal], bool]
"""(version, {(table, key JSON, attribute): amount}, whether that version's record was
quarantined unread) of an item's stored contribution."""


class Contributions:
    """A backfillable delta projection (see the module docstring).

    :param name: namespaces the contribution items (give each projection its own, e.g. the
        consumer's name; a rebuild into a new view uses a new name).
    :param contribution: ``image -> shares`` for one source item's current state (an image
        is a dict of Python values); ``[]`` when it adds nothing. Raise
        :class:`PermanentError` for an image it cannot read: the record is quarantined and the
        item's earlier contribution is taken out of the view (it contributes nothing now).
    :param select: ``change -> bool``; changes it rejects are ignored (no write). Default: all.
    :param table_name: where contributions are kept. Default: the idempotency table
        (``IDEMPOTENCY_TABLE_NAME``, read at each batch), which the consumer writes already.
    :param dynamodb_client: default ``boto3.client("dynamodb")`` on first use.
    :param clock: epoch seconds, for the tombstones' expiration; default ``time.time``.
    """

    takes_snapshots = True

    def __init__(
        self,
        name: str,
        contribution: Callable[[dict[str, Any] | None], Iterable[Share]],
        *,
        select: Callable[[Change], bool] | None = None,
        table_name: str | None = None,
        dynamodb_client: Any = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(name, str) or not name or "#" in name:
            raise ConfigurationError(f"Contributions needs a name without '#', got {name!r}")
        self.name = name
        self.contribution = contribution
        self.select = select
        self.table_name = table_name
        self.clock = clock
        self._client = dynamodb_client
        self._local = threading.local()  # the batch's cache: in-process pipelines run threads
        self.__name__ = f"contributions[{name}]"

    # --- the batch's contributions ----------------------------------------------------------

    def start_batch(self, records: list[Any]) -> None:
        """Forget the last batch's reads and read this batch's contributions in one request
        (per 100 items) where the records carry their keys (stream and snapshot records). A
        failed read is left to each record's own (its failure then stops the batch there)."""
        cache: dict[str, Stored] = {}
        self._local.cache = cache
        ids = sorted({self.item_id(keys) for keys in map(_record_keys, records) if keys})
        try:
            table = self.table()
            for start in range(0, len(ids), BATCH_GET_KEYS):
                self._read_into(cache, table, ids[start : start + BATCH_GET_KEYS])
        except Exception:
            return

    def _read_into(self, cache: dict[str, Stored], table: str, ids: list[str]) -> None:
        request: Any = {table: {"Keys": [{"id": {"S": i}} for i in ids], "ConsistentRead": True}}
        for _ in range(3):  # keys still unprocessed after that are read one by one
            response = self.client.batch_get_item(RequestItems=request)
            for item in response.get("Responses", {}).get(table, []):
                cache[item["id"]["S"]] = _stored(item)
            request = response.get("UnprocessedKeys") or {}
            if not request:
                break
        for item_id in ids:
            if item_id not in cache and not _pending(request, table, item_id):
                cache[item_id] = (None, {}, False)

    def stored(self, item_id: str) -> Stored:
        cache: dict[str, Stored] | None = getattr(self._local, "cache", None)
        if cache is None:
            cache = self._local.cache = {}
        if item_id not in cache:
            response = self.client.get_item(
                TableName=self.table(), Key={"id": {"S": item_id}}, ConsistentRead=True
            )
            cache[item_id] = _stored(response["Item"]) if "Item" in response else (None, {}, False)
        return cache[item_id]

    # --- one change -------------------------------------------------------------------------

    def __call__(self, change: Change) -> list[dict[str, Any]]:
        """The swap of the item's contribution and the view's ``ADD`` of the difference."""
        if self.select is not None and not self.select(change):
            return []
        item_id = self.item_id(_serialized(change.keys))
        version = change.version
        stored_version, stored, unreadable_before = self.stored(item_id)
        if _stale(stored_version, version, unreadable_before):
            return AlreadyApplied()  # what the view holds is as new or newer
        unreadable: PermanentError | None = None
        try:
            new = (
                {}
                if change.event_name == "REMOVE"
                else _amounts(self.contribution(change.new_image))
            )
        except PermanentError as error:
            new, unreadable = {}, error
        if _unchanged_row(change, stored_version, stored, new, unreadable or unreadable_before):
            return []  # a rebuild over an unchanged view writes nothing
        swap = self._swap(item_id, version, stored_version, new, change.event_name == "REMOVE")
        if unreadable is not None:
            swap["Put"]["Item"][UNREADABLE_ATTRIBUTE] = {"BOOL": True}
        actions: list[dict[str, Any]] = [swap, *_additions(new, stored)]
        self._local.cache[item_id] = (version, new, unreadable is not None)
        if unreadable is not None:
            raise PermanentError(
                f"{unreadable} (the item's earlier contribution is taken out of the view)",
                actions=actions,
            ) from unreadable
        return actions

    def _swap(
        self,
        item_id: str,
        version: str,
        expected: str | None,
        shares: dict[tuple[str, str, str], Decimal],
        removed: bool,
    ) -> SwapAction:
        encoded = json.dumps([[t, k, a, str(n)] for (t, k, a), n in sorted(shares.items())])
        item = {
            "id": {"S": item_id},
            VERSION_ATTRIBUTE: {"S": version},
            SHARES_ATTRIBUTE: {"S": encoded},
        }
        if removed:  # a tombstone, kept as long as an older change can be replayed
            expiration = int(self.clock()) + defaults.marker_ttl_seconds()
            item[defaults.EXPIRATION_ATTRIBUTE] = {"N": str(expiration)}
        body: dict[str, Any] = {
            "TableName": self.table(),
            "Item": item,
            "ExpressionAttributeNames": {SWAP_PLACEHOLDER: VERSION_ATTRIBUTE},
        }
        if expected is None:
            body["ConditionExpression"] = f"attribute_not_exists({SWAP_PLACEHOLDER})"
        else:
            body["ConditionExpression"] = f"{SWAP_PLACEHOLDER} = :cdcExpected"
            body["ExpressionAttributeValues"] = {":cdcExpected": {"S": expected}}
        action = SwapAction({"Put": body})
        action.item_key = {"id": {"S": item_id}}
        return action

    def merge_key(self, change: Change) -> str | None:
        """The view items a snapshot row adds to, as one string: a backfill's page is grouped
        by it before it is cut into transactions, so each view item's deltas of the page merge
        into about one ``ADD`` (None: the row adds nothing, or its image cannot be read).

        :param change: a snapshot row of the backfill (its ``new_image`` is the item as read);
            the engine calls this only for rows, before deciding them, so a row the
            contribution function cannot read is left to the decision step to quarantine.
        """
        if (self.select is not None and not self.select(change)) or change.new_image is None:
            return None
        try:
            amounts = _amounts(self.contribution(change.new_image))
        except Exception:  # decided again, in turn: quarantined there if it is poison
            return None
        return json.dumps(sorted({(table, key) for table, key, _ in amounts}))

    # --- names --------------------------------------------------------------------------------

    def item_id(self, keys: Mapping[str, Any]) -> str:
        """The contribution item's id for a source item's key.

        :param keys: the source item's primary key in DynamoDB JSON (a change's raw ``Keys``,
            ``{"pk": {"S": "ITEM#1"}}``), serialized with sorted names so that one item
            always has one contribution item, whatever the order of its key attributes.
        """
        return f"{self.name}#contribution#{json.dumps(keys, sort_keys=True)}"

    def table(self) -> str:
        # The contract's shapes load with the first batch, not the handler's import (the
        # streaming path's cold start: docs/design.md §4).
        from cdc_consumer.environment_variables import IDEMPOTENCY_TABLE_ENV

        table = self.table_name or os.environ.get(IDEMPOTENCY_TABLE_ENV)
        if not table:
            # Not the record's fault: transient, so the batch stops instead of quarantining.
            raise RuntimeError(f"{IDEMPOTENCY_TABLE_ENV} is not set: the contributions' table")
        return table

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = boto3.client("dynamodb", config=defaults.CLIENT_CONFIG)
        return self._client


def _record_keys(record: Any) -> Mapping[str, Any] | None:
    stream = record.get("dynamodb") if isinstance(record, Mapping) else None
    keys = stream.get("Keys") if isinstance(stream, Mapping) else None
    return keys if isinstance(keys, Mapping) and keys else None


def _serialized(keys: Mapping[str, Any]) -> dict[str, Any]:
    """A key as DynamoDB JSON in wire form (binary as base64 text, as records carry it)."""
    return to_wire({name: _serializer.serialize(value) for name, value in keys.items()})


def _pending(unprocessed: Any, table: str, item_id: str) -> bool:
    keys = unprocessed.get(table, {}).get("Keys", []) if unprocessed else []
    return any(key.get("id", {}).get("S") == item_id for key in keys)


def _stale(stored: str | None, version: str, unreadable: bool) -> bool:
    """Whether a change of ``version`` is no newer than the stored contribution: a redelivery,
    or older. The same version again is not stale when its record was quarantined unread:
    that is the redrive replaying it (through a fixed projection, or to be quarantined again)."""
    if stored is None:
        return False
    return stored > version or (stored == version and not unreadable)


def _unchanged_row(
    change: Change, stored_version: str | None, stored: Any, new: Any, unreadable: Any
) -> bool:
    """A snapshot row whose item contributes what its stored contribution already holds (a
    second rebuild, the same backfill run again): nothing to write. The stored version stays
    below the row's; a change between the two is one the stream delivers in the item's order,
    followed by the item's later changes, so the view still ends at the item's latest state."""
    return change.is_snapshot and stored_version is not None and not unreadable and new == stored


def _stored(item: Mapping[str, Any]) -> Stored:
    version = item.get(VERSION_ATTRIBUTE, {}).get("S")
    shares = json.loads(item.get(SHARES_ATTRIBUTE, {}).get("S", "[]"))
    unreadable = bool(item.get(UNREADABLE_ATTRIBUTE, {}).get("BOOL", False))
    return version, {(t, k, a): Decimal(n) for t, k, a, n in shares}, unreadable


def _amounts(shares: Iterable[Share]) -> dict[tuple[str, str, str], Decimal]:
    """The shares as {(table, key JSON, attribute): amount}, summed; zeros left out."""
    amounts: dict[tuple[str, str, str], Decimal] = {}
    for table, key, values in shares:
        key_json = json.dumps(_serialized(key), sort_keys=True)
        for attribute, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
                raise PermanentError(
                    f"a contribution's {attribute!r} must be an int or Decimal, got {value!r}"
                )
            slot = (table, key_json, attribute)
            amounts[slot] = _exact(decimals.add, amounts.get(slot, Decimal(0)), value, attribute)
    return {slot: amount for slot, amount in amounts.items() if amount != 0}


def _exact(
    operation: Callable[[Decimal | int, Decimal | int], Decimal],
    first: Decimal | int,
    second: Decimal | int,
    attribute: str,
) -> Decimal:
    """A sum or difference of contributions in DynamoDB's number context (38 digits, exact):
    one the view could not hold exactly is the record's fault, not rounded."""
    try:
        return operation(first, second)
    except DecimalException as error:
        raise PermanentError(
            f"a contribution's {attribute!r}: {first} and {second} combine to more than "
            f"DynamoDB's 38 significant digits (or beyond its range); keep amounts within "
            f"38 digits"
        ) from error


def _additions(
    new: dict[tuple[str, str, str], Decimal], old: dict[tuple[str, str, str], Decimal]
) -> list[dict[str, Any]]:
    """One ``ADD`` aggregate per view item for ``new - old``."""
    by_item: dict[tuple[str, str], dict[str, Decimal]] = {}
    for slot in new.keys() | old.keys():
        delta = _exact(decimals.subtract, new.get(slot, Decimal(0)), old.get(slot, 0), slot[2])
        if delta != 0:
            table, key_json, attribute = slot
            by_item.setdefault((table, key_json), {})[attribute] = delta
    return [
        update_aggregate(table, deserialize_image(json.loads(key_json)), add=adds)
        for (table, key_json), adds in sorted(by_item.items())
    ]
