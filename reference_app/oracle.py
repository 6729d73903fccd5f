"""The order-stats oracle: what the demo and the end-to-end tests check on the example's view.

- :func:`expected_view` recomputes the order-stats view from the orders table, independently of
  the handler's code, from the view's definition (reference_app/handlers/order_stats.py): per
  customer, ``count_<status>`` of its orders and ``paid_amount``, the total of its paid orders;
  orders the handler cannot read (poison) count nowhere.
- :func:`view_reconciled` compares it with the view table on the local pipeline.
- :func:`order_stats_wiring` finds the order-stats consumer there (cdc_local.accounting does
  the loss accounting, for any consumer).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc_consumer.decimals import DYNAMODB_CONTEXT

from cdc_local.accounting import ConsumerWiring, scan
from cdc_local.exceptions import LocalPipelineError
from cdc_local.runner import LocalPipeline
from reference_app.handlers.orders_schema import (
    COUNT_PREFIX,
    CUSTOMER_PREFIX,
    ORDER_PREFIX,
    ORDERS_CONSUMERS_HANDLER,
    PAID,
    PAID_AMOUNT,
    VIEW_TABLE_ENV,
)


def require_order_stats_consumer(pipeline: LocalPipeline) -> None:
    """Refuse a stack without the reference consumer before the demo writes anything (its
    wiring, :func:`order_stats_wiring`, can only be read once the pipeline runs)."""
    handlers = [spec.own_handler for spec in pipeline.stack.functions().values()]
    if ORDERS_CONSUMERS_HANDLER not in handlers:
        raise LocalPipelineError(
            f"the demo needs the reference consumer: no function in stack "
            f"{pipeline.stack.stack_name} whose handler is {ORDERS_CONSUMERS_HANDLER!r}"
        )


def order_stats_wiring(pipeline: LocalPipeline) -> ConsumerWiring:
    """The wiring of the mapping the order-stats consumer is behind (with the TTL archive, a
    consumer group: reference_app/handlers/orders_consumers.py) on the local pipeline."""
    return ConsumerWiring.of(pipeline, ORDERS_CONSUMERS_HANDLER)


def view_table(wiring: ConsumerWiring) -> str:
    """The order-stats view table's name, from the function's environment."""
    try:
        return wiring.function.environment[VIEW_TABLE_ENV]
    except KeyError:
        raise LocalPipelineError(
            f"function {wiring.function.name} has no {VIEW_TABLE_ENV}"
        ) from None


def contribution(item: Mapping[str, Any]) -> tuple[str, dict[str, Decimal]] | None:
    """(customer, {view attribute: value}) one order item (DynamoDB JSON) adds to the view."""
    if not item.get("pk", {}).get("S", "").startswith(ORDER_PREFIX):
        return None
    customer = item.get("customerId", {}).get("S")
    status = item.get("status", {}).get("S")
    amount = item.get("amount", {}).get("N")
    if not customer or not status or amount is None:
        return None  # poison: quarantined by the consumer, counted nowhere
    try:
        value = Decimal(amount)
    except InvalidOperation:
        return None
    values = {f"{COUNT_PREFIX}{status}": Decimal(1)}
    if status == PAID:
        values[PAID_AMOUNT] = value
    return customer, values


def expected_view(orders: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Decimal]]:
    """The view recomputed from the orders table's items: ``CUSTOMER#id -> {attr: value}``."""
    view: dict[str, dict[str, Decimal]] = {}
    for item in orders:
        found = contribution(item)
        if found is not None:
            customer, values = found
            totals = view.setdefault(CUSTOMER_PREFIX + customer, {})
            for name, value in values.items():
                totals[name] = DYNAMODB_CONTEXT.add(totals.get(name, Decimal(0)), value)
    return _without_zeros(view)


def actual_view(view_items: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Decimal]]:
    """The view table's items as ``pk -> {attr: value}`` (numbers only)."""
    view = {
        item["pk"]["S"]: {k: Decimal(v["N"]) for k, v in item.items() if "N" in v}
        for item in view_items
    }
    return _without_zeros(view)


def _without_zeros(view: Mapping[str, Mapping[str, Decimal]]) -> dict[str, dict[str, Decimal]]:
    # ADD leaves a count at 0 when its last order moves on; a recomputation has no such entry.
    cleaned = {pk: {k: v for k, v in values.items() if v != 0} for pk, values in view.items()}
    return {pk: values for pk, values in cleaned.items() if values}


def view_reconciled(pipeline: LocalPipeline, wiring: ConsumerWiring) -> bool:
    """Whether the view equals its recomputation from the orders table."""
    view = view_table(wiring)
    ddb = pipeline.client("dynamodb")
    return expected_view(scan(ddb, wiring.source_table)) == actual_view(scan(ddb, view))
