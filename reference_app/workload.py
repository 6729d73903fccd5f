"""A reproducible order workload for the reference stack's orders table.

Orders are created (pending), then changed at random: paid, cancelled, shipped, amended (a new
amount), deleted by a user, or given a TTL in the past (``expireAt``) for the TTL sweeper to
delete. A few *poison* writes put an order the order-stats handler cannot read (its amount is not
a Number): the consumer must quarantine those records. Every change is exactly one write, so one
stream record. The same seed gives the same changes, in the same order.

The item shape is the reference handler's (``reference_app/handlers/order_stats.py``):
``pk = "ORDER#<id>"``, ``customerId`` S, ``status`` S, ``amount`` N, ``expireAt`` N (optional).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from reference_app.handlers.orders_schema import ORDER_PREFIX

STATUSES = ("pending", "paid", "cancelled", "shipped")

#: The kinds of change, with their weights once every order exists. Expiries and deletes end an
#: order's life, so they are rare: most orders live through many changes.
CHANGE_WEIGHTS = {"status": 70, "amend": 28, "expire": 1, "delete": 1}


@dataclass(frozen=True)
class OrderChange:
    """One write to the orders table: ``put`` (``item``), ``update`` (``set``) or ``delete``."""

    kind: str
    order_id: str
    operation: str
    item: dict[str, Any] = field(default_factory=dict)
    set: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> dict[str, Any]:
        return {"pk": {"S": ORDER_PREFIX + self.order_id}}


@dataclass
class OrderWorkload:
    """``changes`` writes on ``orders`` orders (``poison`` of them poison), from ``seed``.

    Defaults: 5,000 changes on 200 orders, 20 customers, 3 poison writes, seed 0 - the issue's
    fault-injection scenario.
    """

    changes: int = 5000
    orders: int = 200
    customers: int = 20
    poison: int = 3
    seed: int = 0
    now: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if self.changes < self.orders + self.poison:
            raise ValueError(
                f"changes={self.changes} cannot cover creating {self.orders} orders and "
                f"{self.poison} poison writes; give changes >= orders + poison"
            )

    def plan(self) -> Iterator[OrderChange]:
        """The changes, in the order they are to be written."""
        rng = random.Random(self.seed)
        live: dict[str, dict[str, Any]] = {}
        creates = [f"{n:05d}" for n in range(self.orders)]
        poison_at = set(rng.sample(range(self.orders, self.changes), self.poison))
        poison_number = 0
        for index in range(self.changes):
            if index in poison_at:
                poison_number += 1
                order_id = f"poison-{poison_number}"
                item: dict[str, Any] = {
                    "customerId": "customer-poison",
                    "status": "pending",
                    "amount": "ten",
                }
                yield OrderChange("poison", order_id, "put", item=_typed(order_id, item))
            elif index < self.orders or not live:
                order_id = creates[index] if index < self.orders else f"{index:05d}"
                item = {
                    "customerId": f"customer-{rng.randrange(self.customers):03d}",
                    "status": "pending",
                    "amount": rng.randrange(5, 500),
                }
                live[order_id] = item
                yield OrderChange("create", order_id, "put", item=_typed(order_id, item))
            else:
                yield self._change(rng, live)

    def _change(self, rng: random.Random, live: dict[str, dict[str, Any]]) -> OrderChange:
        order_id = rng.choice(sorted(live))
        kind = rng.choices(list(CHANGE_WEIGHTS), weights=list(CHANGE_WEIGHTS.values()))[0]
        order = live[order_id]
        if kind == "status":
            status = rng.choice([s for s in STATUSES if s != order["status"]])
            order["status"] = status
            return OrderChange("status", order_id, "update", set={"status": {"S": status}})
        if kind == "amend":
            amount = order["amount"] + rng.randrange(1, 50)
            order["amount"] = amount
            return OrderChange("amend", order_id, "update", set={"amount": {"N": str(amount)}})
        del live[order_id]
        if kind == "expire":
            expiry = int(self.now) - rng.randrange(60, 3600)
            return OrderChange("expire", order_id, "update", set={"expireAt": {"N": str(expiry)}})
        return OrderChange("delete", order_id, "delete")


def apply(ddb: Any, table_name: str, change: OrderChange) -> None:
    """Write ``change`` to the orders table with the ``dynamodb`` client ``ddb``."""
    if change.operation == "put":
        ddb.put_item(TableName=table_name, Item=change.item)
    elif change.operation == "update":
        names = {f"#a{i}": name for i, name in enumerate(change.set)}
        values = {f":v{i}": value for i, value in enumerate(change.set.values())}
        ddb.update_item(
            TableName=table_name,
            Key=change.key,
            UpdateExpression="SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(names))),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
    else:
        ddb.delete_item(TableName=table_name, Key=change.key)


def write_while_running(
    pipeline: Any,
    table_name: str,
    workload: OrderWorkload,
    writes_per_turn: int,
    on_write: Callable[[int], None] | None = None,
) -> None:
    """Write ``workload`` to the orders table ``table_name`` while ``pipeline`` (a
    :class:`cdc_local.runner.LocalPipeline`) takes a turn every ``writes_per_turn`` writes, so
    the consumers keep up with a live table instead of meeting one long backlog.
    ``on_write(count)`` is called after each write (progress)."""
    ddb = pipeline.client("dynamodb")
    for index, change in enumerate(workload.plan(), start=1):
        apply(ddb, table_name, change)
        if index % writes_per_turn == 0:
            pipeline.poll()
        if on_write is not None:
            on_write(index)


def _typed(order_id: str, item: dict[str, Any]) -> dict[str, Any]:
    amount = item["amount"]
    return {
        "pk": {"S": ORDER_PREFIX + order_id},
        "customerId": {"S": item["customerId"]},
        "status": {"S": item["status"]},
        "amount": {"N": str(amount)} if isinstance(amount, int) else {"S": str(amount)},
    }
