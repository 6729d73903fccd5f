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
difference is written with UpdateItem ``ADD``, built by ``cdc_consumer.sinks.aggregates.increment``:
ADD commutes, so several records' updates share one transaction with their processed-markers
and each is applied exactly once, and the runtime may merge consecutive records' increments of
one customer into one action (a hot aggregate) instead of cutting the transaction there.

The view equals the recomputation from the orders table over the orders whose current image
this handler can read. An image it cannot read has no customerId, no status or a non-numeric
amount; a record whose NEW image is such an image is poison: it raises PermanentError and is
quarantined whole (the data problem must surface). If its OLD image was readable, the order
was counted, and its contribution must leave the view since the order's current image is no
longer readable: the PermanentError then carries the UpdateItem ``ADD`` actions removing the
OLD contribution, which the runtime commits with the record's marker after sending the
quarantine message (exactly once, however often the record is delivered).

So an OLD image this handler cannot read contributes nothing, and that is right in both ways
such an image can have reached the view: it came in unreadable and was quarantined without
effect (never counted), or it replaced a readable image and that record's compensation
already removed the earlier contribution. When the order is fixed (a readable NEW image) it is
counted again from zero; when it is deleted while unreadable there is nothing left to remove.
"""

from __future__ import annotations

import os
from collections import defaultdict
from decimal import Decimal, DecimalException
from typing import Any

from cdc_consumer import Change, Contributions, PermanentError, StreamProcessor
from cdc_consumer.decimals import DYNAMODB_CONTEXT
from cdc_consumer.sinks.aggregates import increment
from orders_schema import (
    COUNT_PREFIX,
    CUSTOMER_PREFIX,
    ORDER_PREFIX,
    ORDER_STATS_CONSUMER,
    PAID,
    PAID_AMOUNT,
    VIEW_TABLE_ENV,
)

# Consumer name, tables and queue come from the environment the StreamConsumer construct sets
# (CDC_CONSUMER_NAME, IDEMPOTENCY_TABLE_NAME, QUARANTINE_QUEUE_URL).
processor = StreamProcessor()


def count_attribute(status: str) -> str:
    """The view attribute counting orders in ``status``."""
    return f"{COUNT_PREFIX}{status}"


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


Contribution = tuple[str, dict[str, Decimal]]


def _old_contribution(image: dict[str, Any] | None) -> Contribution | None:
    try:
        return contribution(image)
    except PermanentError:
        # Not in the view: either it was never counted (it came in unreadable and its record
        # was quarantined without effect) or the record that made it the current image was
        # quarantined with compensation, which took the earlier contribution out.
        return None


def is_order(change: Change) -> bool:
    """Whether the change is of an order item (pk "ORDER#..."); other items are ignored."""
    return str(change.keys.get("pk", "")).startswith(ORDER_PREFIX)


def view_deltas(change: Change) -> dict[str, dict[str, Decimal]]:
    """customerId -> {view attribute: delta} for a change of an order; empty if no effect.

    Raises PermanentError (without compensation) when the NEW image cannot be read.
    """
    if not is_order(change):
        return {}
    return _deltas(contribution(change.new_image), _old_contribution(change.old_image))


def _deltas(new: Contribution | None, old: Contribution | None) -> dict[str, dict[str, Decimal]]:
    """new - old per customer, in DynamoDB's number context (38 exact digits, not Python's 28)."""
    deltas: dict[str, defaultdict[str, Decimal]] = {}
    for side, combine in ((new, DYNAMODB_CONTEXT.add), (old, DYNAMODB_CONTEXT.subtract)):
        if side is None:
            continue
        customer, values = side
        bucket = deltas.setdefault(customer, defaultdict(Decimal))
        for attribute, value in values.items():
            try:
                bucket[attribute] = combine(bucket[attribute], value)
            except DecimalException as error:
                raise PermanentError(
                    f"customer {customer!r}: {attribute} {value} moves the view by more than "
                    f"DynamoDB's 38 significant digits hold"
                ) from error
    return {
        customer: {name: value for name, value in values.items() if value != 0}
        for customer, values in deltas.items()
        if any(value != 0 for value in values.values())
    }


@processor.projection(reads=["NewImage", "OldImage"])  # a change's delta needs both
def order_stats(change: Change) -> list[dict[str, Any]]:
    """One UpdateItem ``ADD`` per customer whose statistics the change moves.

    A NEW image that cannot be read raises PermanentError (the record is quarantined),
    carrying the actions that take a readable OLD image's contribution out of the view.
    """
    if not is_order(change):
        return []
    old = _old_contribution(change.old_image)
    try:
        new = contribution(change.new_image)
    except PermanentError as unreadable:
        if old is None:
            raise
        raise PermanentError(
            f"{unreadable} (its previous image's contribution is taken out of the view)",
            actions=_updates(_deltas(None, old)),
        ) from unreadable
    return _updates(_deltas(new, old))


def _updates(deltas: dict[str, dict[str, Decimal]]) -> list[dict[str, Any]]:
    """One :func:`~cdc_consumer.sinks.aggregates.increment` per customer: consecutive records'
    increments of one customer merge into one action inside the transaction."""
    if not deltas:
        return []
    table = _view_table()
    return [
        increment(table, {"pk": CUSTOMER_PREFIX + customer}, values)
        for customer, values in sorted(deltas.items())
    ]


def _view_table() -> str:
    table = os.environ.get(VIEW_TABLE_ENV)
    if not table:
        # Not the record's fault: a transient error, so the batch stops instead of quarantining.
        raise RuntimeError(f"{VIEW_TABLE_ENV} is not set: the order-stats view table name")
    return table


def order_shares(image: dict[str, Any] | None) -> list[tuple[str, dict[str, str], Any]]:
    """What one order's current image adds to the view: its customer's counts and total
    (PermanentError for an image it cannot read, as :func:`contribution`)."""
    found = contribution(image)
    if found is None:
        return []
    customer, values = found
    return [(_view_table(), {"pk": CUSTOMER_PREFIX + customer}, values)]


#: The same statistics kept as each order's contribution, replaced by version
#: (cdc_consumer.Contributions): a backfill can feed it snapshot rows, and changes may come
#: twice or out of order. The reference stack's order-stats member runs this one; the Kinesis
#: example's processor above keeps the plain delta projection.
backfillable_order_stats = Contributions(ORDER_STATS_CONSUMER, order_shares, select=is_order)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point (handler string ``order_stats.handler``)."""
    return processor.handle(event, context)
