"""Helpers for order-stats tests: the reference handler wired to test resources, and the view
recomputed from scratch from a final orders table."""

from __future__ import annotations

import importlib
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from decimal import Decimal, localcontext
from pathlib import Path
from types import ModuleType
from typing import Any

from cdc_consumer.decimals import DYNAMODB_CONTEXT
from cdc_consumer.testing import TableStream

import reference_app
from cdc_local.endpoint import patched_environ
from tests.cdc_consumer.fixtures import Resources

HANDLERS_DIR = Path(reference_app.__file__).resolve().parent / "handlers"


def handler_module(name: str) -> ModuleType:
    """A module of the example's handlers imported as Lambda imports it: its code asset's
    directory on sys.path, so ``order_stats`` imports ``orders_schema`` beside it."""
    if str(HANDLERS_DIR) not in sys.path:
        sys.path.insert(0, str(HANDLERS_DIR))
    return importlib.import_module(name)


@contextmanager
def order_stats_environment(resources: Resources, consumer: str = "order-stats") -> Iterator[Any]:
    """The environment the StreamConsumer construct gives the function; yields the module."""
    order_stats = handler_module("order_stats")

    with patched_environ(
        {
            "CDC_CONSUMER_NAME": consumer,
            "IDEMPOTENCY_TABLE_NAME": resources.idempotency_table,
            "QUARANTINE_QUEUE_URL": resources.queue_url,
            "VIEW_TABLE_NAME": resources.view_table,
        }
    ):
        yield order_stats


def readable(order: dict[str, Any]) -> bool:
    """Whether the handler can read the order: customerId and status non-empty strings, amount
    a number (written independently of the handler's own check, so the tests can catch it)."""
    customer, status, amount = (order.get(name) for name in ("customerId", "status", "amount"))
    return (
        isinstance(customer, str)
        and customer != ""
        and isinstance(status, str)
        and status != ""
        and isinstance(amount, (int, Decimal))
        and not isinstance(amount, bool)
    )


def recompute(orders: Iterable[dict[str, Any]]) -> dict[str, dict[str, Decimal]]:
    """The view from scratch: per customer, orders per status and the paid total (zeros left
    out, as the comparison ignores them), over the orders whose current image is readable."""
    view: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for order in orders:
        if not str(order.get("pk", "")).startswith("ORDER#") or not readable(order):
            continue
        entry = view[f"CUSTOMER#{order['customerId']}"]
        entry[f"count_{order['status']}"] += 1
        if order["status"] == "paid":
            with localcontext(DYNAMODB_CONTEXT):  # DynamoDB's 38 digits, exactly
                entry["paid_amount"] += Decimal(order["amount"])
    return {
        customer: {name: value for name, value in entry.items() if value != 0}
        for customer, entry in view.items()
        if any(value != 0 for value in entry.values())
    }


def new_orders_stream() -> TableStream:
    return TableStream(keys=("pk",))
