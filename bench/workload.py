"""The benchmark workload: order changes, as DynamoDB Streams records in the Lambda event shape.

An order moves INSERT ``pending`` → MODIFY (amount changes, ``paid``, ``cancelled``) → sometimes
REMOVE (half of them TTL expiries). Each order's changes keep their order in the stream (DynamoDB
Streams' per-item guarantee); orders are interleaved at random across the stream (no order across
items). Everything is derived from one seed, so two runs see the same records.

The records are built here rather than read from moto's stream because moto's stream differs
from DynamoDB's (docs/design.md §6), and because the Lambda event shape (eventSourceARN, awsRegion,
userIdentity of TTL deletions) is what both consumers under test receive. Not
reference_app.workload: it writes changes to a table for the local pipeline to stream. Not
cdc_consumer.testing.TableStream: its eventIDs are random, and here they must repeat run to run.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from cdc_consumer.testing import serialize, stream_record

from reference_app.handlers.orders_schema import CUSTOMER_PREFIX, ORDER_PREFIX

#: The workload issue 7 names: 2,000 changes on 200 orders.
DEFAULT_CHANGES = 2_000
DEFAULT_ORDERS = 200
#: Customers the orders belong to. 100 customers for 200 orders: most view items are touched by
#: several orders, as in a real shop, so the projection meets same-item collisions in a batch.
DEFAULT_CUSTOMERS = 100
DEFAULT_SEED = 7

REGION = "us-east-1"
ACCOUNT = "123456789012"
ORDERS_TABLE = "orders"
STREAM_LABEL = "2026-11-29T00:00:00.000"
STREAM_ARN = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{ORDERS_TABLE}/stream/{STREAM_LABEL}"
#: First sequence number; all sequence numbers have the same number of digits so they sort as
#: strings and as numbers alike.
FIRST_SEQUENCE = 4_421_584_500_000_000_017_450_439_091
FIRST_CREATION_TIME = 1_796_000_000  # epoch seconds (2026-11-30)

__all__ = [
    "CUSTOMER_PREFIX",
    "WHOLE_STREAM",
    "Shard",
    "Workload",
    "clone_records",
    "order_workload",
    "same_item_workload",
    "serialize",
]


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` shards of one stream, for a workload of that shard alone.

    Its orders are named with :attr:`prefix`: an item's changes are in one shard (its
    partition's), so no two shards carry changes of one order. Its customers (the view's items)
    carry the prefix too: a shop with many customers, where two shards rarely move one customer
    at once (a hot item several shards share is given by name: :func:`same_item_workload`).
    Its records take every ``count``-th position of the stream (:meth:`position`), so sequence
    numbers and eventIDs are unique stream-wide, as DynamoDB Streams numbers them, and the
    shards' numbers interleave.
    """

    index: int = 0
    count: int = 1

    @property
    def prefix(self) -> str:
        """What this shard's order and customer ids start with ("" for a whole stream)."""
        return f"s{self.index:02d}-" if self.count > 1 else ""

    @property
    def shard_id(self) -> str:
        """The shard's id as Lambda's event names it (``shardId-`` and 20 digits, then its
        creation time and a random part; the form stays, the digits are this bench's)."""
        return f"shardId-{self.index + 1:020d}-0b5e5c1d"

    def position(self, index: int) -> int:
        """The stream position of the shard's ``index``-th record."""
        return index * self.count + self.index

    def seed(self, seed: int) -> int:
        """The shard's own random seed (``seed`` itself for the first shard)."""
        return seed + 7_919 * self.index


#: A workload that is the whole stream (one shard, no prefix): the other sections' workloads.
WHOLE_STREAM = Shard()


@dataclass(frozen=True)
class Change:
    """One change of one order, before it becomes a stream record."""

    order_id: str  # the orders table's key, "ORDER#<id>"
    event_name: str  # INSERT | MODIFY | REMOVE
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    ttl_expiry: bool = False


@dataclass
class Workload:
    """Stream records in stream order, and the orders table's final state."""

    records: list[dict[str, Any]]
    final_orders: dict[str, dict[str, Any]]
    seed: int
    orders: int
    customers: int
    counts: dict[str, int] = field(default_factory=dict)

    def first(self, count: int) -> Workload:
        """The workload of its first ``count`` records: the orders table as they leave it."""
        from boto3.dynamodb.types import TypeDeserializer

        deserializer = TypeDeserializer()
        records = self.records[:count]
        orders: dict[str, dict[str, Any]] = {}
        for record in records:
            key = record["dynamodb"]["Keys"]["pk"]["S"]
            image = record["dynamodb"].get("NewImage")
            if image is None:
                orders.pop(key, None)
            else:
                orders[key] = {k: deserializer.deserialize(v) for k, v in image.items()}
        return Workload(records, orders, self.seed, self.orders, self.customers)

    def batches(self, size: int) -> Iterator[list[dict[str, Any]]]:
        """The records cut into Lambda batches of ``size``."""
        for start in range(0, len(self.records), size):
            yield self.records[start : start + size]


def _amount(rng: random.Random) -> Decimal:
    return Decimal(rng.randrange(500, 50_000)) / 100


def _order_changes(rng: random.Random, order_id: str, customer_id: str, n: int) -> list[Change]:
    """``n`` changes of one order, starting with its INSERT as ``pending``."""
    current: dict[str, Any] = {
        "pk": ORDER_PREFIX + order_id,
        "customerId": customer_id,
        "status": "pending",
        "amount": _amount(rng),
    }
    order_id = current["pk"]
    changes = [Change(order_id, "INSERT", None, dict(current))]
    for position in range(1, n):
        last = position == n - 1
        if last and rng.random() < 0.25:
            ttl = rng.random() < 0.5
            changes.append(Change(order_id, "REMOVE", dict(current), None, ttl_expiry=ttl))
            return changes
        new = dict(current)
        roll = rng.random()
        if current["status"] == "pending" and roll < 0.35:
            new["status"] = "paid"
        elif current["status"] in ("pending", "paid") and roll < 0.45:
            new["status"] = "cancelled"
        elif current["status"] == "cancelled" and roll < 0.3:
            new["status"] = "pending"  # re-opened
        else:
            new["amount"] = _amount(rng)  # every MODIFY changes what the view counts
            if new["amount"] == current["amount"]:
                new["amount"] += Decimal("0.01")
        changes.append(Change(order_id, "MODIFY", dict(current), new))
        current = new
    return changes


def _split(total: int, parts: int, rng: random.Random) -> list[int]:
    """``total`` split into ``parts`` positive counts around the mean, deterministically."""
    mean = total // parts
    counts = [mean] * parts
    for _ in range(total - mean * parts):
        counts[rng.randrange(parts)] += 1
    # Shuffle some weight between orders so they do not all have the same length.
    for _ in range(parts):
        a, b = rng.randrange(parts), rng.randrange(parts)
        move = rng.randrange(0, max(1, counts[a] // 3))
        if counts[a] - move >= 2:
            counts[a] -= move
            counts[b] += move
    return counts


def _interleave(rng: random.Random, per_order: Sequence[list[Change]]) -> list[Change]:
    """A random merge of the orders' change lists that keeps each order's own order."""
    queues = [list(reversed(changes)) for changes in per_order]
    slots = [i for i, changes in enumerate(per_order) for _ in changes]
    rng.shuffle(slots)
    return [queues[i].pop() for i in slots]


def to_stream_record(change: Change, index: int, creation_time: int) -> dict[str, Any]:
    """One change as AWS Lambda delivers a DynamoDB Streams record (NEW_AND_OLD_IMAGES).

    Built with the runtime's public test helper (cdc_consumer.testing.stream_record); the
    eventID is derived from the index instead of random, so runs are repeatable.
    """
    return stream_record(
        change.event_name,
        {"pk": change.order_id},
        new_image=change.new,
        old_image=change.old,
        sequence_number=FIRST_SEQUENCE + index * 100,
        event_id=f"{index:08x}{(index * 2654435761) % 2**32:08x}0b5e5c1d2e3f4a5b",
        ttl_expiry=change.ttl_expiry,
        source_arn=STREAM_ARN,
        approximate_creation_time=float(creation_time),
        region=REGION,
    )


def _final_state(changes: Sequence[Change]) -> dict[str, dict[str, Any]]:
    state: dict[str, dict[str, Any]] = {}
    for change in changes:
        if change.new is None:
            state.pop(change.order_id, None)
        else:
            state[change.order_id] = dict(change.new)
    return state


def _build(
    changes: list[Change], seed: int, orders: int, customers: int, shard: Shard = WHOLE_STREAM
) -> Workload:
    # 10 changes a second in each shard (a shard's window cuts its batches at the same records
    # however many shards the stream has).
    records = [
        to_stream_record(change, shard.position(index), FIRST_CREATION_TIME + index // 10)
        for index, change in enumerate(changes)
    ]
    counts: dict[str, int] = {}
    for change in changes:
        name = "TTL REMOVE" if change.ttl_expiry else change.event_name
        counts[name] = counts.get(name, 0) + 1
    return Workload(records, _final_state(changes), seed, orders, customers, counts)


def order_workload(
    changes: int = DEFAULT_CHANGES,
    orders: int = DEFAULT_ORDERS,
    customers: int = DEFAULT_CUSTOMERS,
    seed: int = DEFAULT_SEED,
    shard: Shard = WHOLE_STREAM,
) -> Workload:
    """``changes`` changes on ``orders`` orders of ``customers`` customers, interleaved (of
    ``shard`` alone: its own orders and customers)."""
    if changes < orders:
        raise ValueError(
            f"changes={changes} is fewer than orders={orders}: every order needs its INSERT; "
            "give at least one change per order"
        )
    rng = random.Random(shard.seed(seed))
    lengths = _split(changes, orders, rng)
    prefix = shard.prefix
    per_order = [
        _order_changes(
            rng, f"{prefix}order-{i:05d}", f"customer-{prefix}{rng.randrange(customers):04d}", n
        )
        for i, n in enumerate(lengths)
    ]
    return _build(_interleave(rng, per_order), seed, len(per_order), customers, shard)


def same_item_workload(
    records: int,
    same_fraction: float,
    seed: int = DEFAULT_SEED,
    shard: Shard = WHOLE_STREAM,
    hot_customer: str | None = None,
) -> Workload:
    """``records`` INSERTs of distinct orders; ``same_fraction`` of them for one customer.

    The other records each belong to a customer of their own, so they touch distinct view items.
    ``same_fraction=0`` is the distinct-keys case the ≤ 0.05 requests/record target of
    docs/design.md §4 is stated for. The hot customer's records are spread evenly through the
    stream. ``shard``: the records of that shard alone (its own orders and customers);
    ``hot_customer``: the hot customer's id, default ``customer-hot`` with the shard's prefix
    (give one id to several shards for a hot item they share).
    """
    if not 0.0 <= same_fraction <= 1.0:
        raise ValueError(f"same_fraction={same_fraction} is outside [0, 1]; give a fraction")
    rng = random.Random(shard.seed(seed))
    hot = round(records * same_fraction)
    hot_positions = {round(i * records / hot) for i in range(hot)} if hot else set()
    prefix = shard.prefix
    hot_customer = hot_customer or f"customer-{prefix}hot"
    changes = []
    for i in range(records):
        customer = hot_customer if i in hot_positions else f"customer-{prefix}{i:06d}"
        key = f"{ORDER_PREFIX}{prefix}order-{i:06d}"
        order: dict[str, Any] = {
            "pk": key,
            "customerId": customer,
            "status": "pending",
            "amount": _amount(rng),
        }
        changes.append(Change(key, "INSERT", None, order))
    return _build(changes, seed, records, records - hot + (1 if hot else 0), shard)


def clone_records(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Deep copies, so a consumer that mutates its event cannot change the next run's input."""
    return copy.deepcopy(list(records))
