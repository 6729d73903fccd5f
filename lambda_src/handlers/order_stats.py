"""Reference handler: per-customer order statistics, kept exactly once from the orders stream.

Orders table (the source; partition key ``pk`` S, TTL attribute ``expireAt``)::

    pk          S   "ORDER#<orderId>"   items whose pk does not start with "ORDER#" are ignored
    customerId  S   non-empty
    status      S   e.g. pending | paid | cancelled | shipped (any non-empty string)
    amount      N   the order total
    expireAt    N   optional, epoch seconds: DynamoDB's TTL deletes the order after it

View table (``VIEW_TABLE_NAME``; partition key ``pk`` S), one item per customer::

    pk             S   "CUSTOMER#<customerId>"
    count_<status> N   orders of that customer currently in that status
    paid_amount    N   total amount of the customer's orders in status "paid"

Each change adds the difference between the order's contribution in its NEW image and in its
OLD image (INSERT: new only; REMOVE, TTL expiry included: old only; MODIFY: both, so a status
or amount change moves counts and totals, and a change of customer moves the order). The
difference is written with UpdateItem ``ADD``, which commutes, so several records' updates can
share one transaction with their processed-markers and each is applied exactly once.

A NEW image this handler cannot interpret (no customerId, no status, a non-numeric amount)
raises PermanentError: the record is quarantined. An OLD image it cannot interpret
contributes nothing, because when it arrived as a NEW image it was quarantined, not counted.
"""

from __future__ import annotations

import os
from collections import defaultdict
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeSerializer
from cdc_consumer import Change, PermanentError, StreamProcessor

ORDER_PREFIX = "ORDER#"
CUSTOMER_PREFIX = "CUSTOMER#"
PAID = "paid"
PAID_AMOUNT = "paid_amount"
VIEW_TABLE_ENV = "VIEW_TABLE_NAME"

_serializer = TypeSerializer()

# Consumer name, tables and queue come from the environment the StreamConsumer construct sets
# (CDC_CONSUMER_NAME, IDEMPOTENCY_TABLE_NAME, QUARANTINE_QUEUE_URL).
processor = StreamProcessor()


def count_attribute(status: str) -> str:
    """The view attribute counting orders in ``status``."""
    return f"count_{status}"


def contribution(image: dict[str, Any] | None) -> tuple[str, dict[str, Decimal]] | None:
    """(customerId, {view attribute: amount}) an order image adds to the view, or None.

    Raises PermanentError naming the attribute when ``image`` is an order that cannot be read.
    """
    if image is None:
        return None
    customer = image.get("customerId")
    status = image.get("status")
    amount = image.get("amount")
    if not isinstance(customer, str) or not customer:
        raise PermanentError(
            f"order {image.get('pk')!r}: customerId must be a non-empty string, got {customer!r}"
        )
    if not isinstance(status, str) or not status:
        raise PermanentError(
            f"order {image.get('pk')!r}: status must be a non-empty string, got {status!r}"
        )
    if isinstance(amount, bool) or not isinstance(amount, (Decimal, int)):
        raise PermanentError(f"order {image.get('pk')!r}: amount must be a Number, got {amount!r}")
    values = {count_attribute(status): Decimal(1)}
    if status == PAID:
        values[PAID_AMOUNT] = Decimal(amount)
    return customer, values


def _old_contribution(image: dict[str, Any] | None) -> tuple[str, dict[str, Decimal]] | None:
    try:
        return contribution(image)
    except PermanentError:
        return None  # never counted: its record was quarantined when it was the NEW image


def view_deltas(change: Change) -> dict[str, dict[str, Decimal]]:
    """customerId -> {view attribute: delta} for a change of an order; empty if no effect."""
    if not str(change.keys.get("pk", "")).startswith(ORDER_PREFIX):
        return {}
    new = contribution(change.new_image)
    old = _old_contribution(change.old_image)
    deltas: dict[str, defaultdict[str, Decimal]] = {}
    for side, sign in ((new, 1), (old, -1)):
        if side is None:
            continue
        customer, values = side
        bucket = deltas.setdefault(customer, defaultdict(Decimal))
        for attribute, value in values.items():
            bucket[attribute] += sign * value
    return {
        customer: {name: value for name, value in values.items() if value != 0}
        for customer, values in deltas.items()
        if any(value != 0 for value in values.values())
    }


@processor.projection
def order_stats(change: Change) -> list[dict[str, Any]]:
    """One UpdateItem ``ADD`` per customer whose statistics the change moves."""
    deltas = view_deltas(change)
    if not deltas:
        return []
    table = os.environ.get(VIEW_TABLE_ENV)
    if not table:
        # Not the record's fault: a transient error, so the batch stops instead of quarantining.
        raise RuntimeError(f"{VIEW_TABLE_ENV} is not set: the order-stats view table name")
    actions = []
    for customer, values in sorted(deltas.items()):
        names = {f"#a{index}": name for index, name in enumerate(sorted(values))}
        actions.append(
            {
                "Update": {
                    "TableName": table,
                    "Key": {"pk": {"S": CUSTOMER_PREFIX + customer}},
                    "UpdateExpression": "ADD "
                    + ", ".join(f"{alias} :v{alias[2:]}" for alias in names),
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": {
                        f":v{alias[2:]}": _serializer.serialize(values[name])
                        for alias, name in names.items()
                    },
                }
            }
        )
    return actions


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point (handler string ``order_stats.handler``)."""
    return processor.handle(event, context)
