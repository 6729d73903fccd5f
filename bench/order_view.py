"""The order-stats view: what it should hold, and whether a view table holds exactly that.

Per customer: the number of orders in each status and the total amount of paid orders. The
expected view is recomputed from the orders table's final state, independently of any consumer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

_deserializer = TypeDeserializer()

#: customerId → {"count:<status>": n, "paidTotal": amount}; zero entries are left out, so a
#: customer whose orders were all removed has no entry (a view item of zeros equals no item).
View = dict[str, dict[str, Decimal]]


@dataclass(frozen=True)
class ViewSchema:
    """Where a view keeps its figures: item key ``key_prefix + customerId``, one
    ``count_attribute.format(status=...)`` per status and ``paid_total``."""

    key: str = "pk"
    key_prefix: str = "CUSTOMER#"
    count_attribute: str = "count_{status}"
    paid_total: str = "paid_amount"


#: The reference handler's view (lambda_src/handlers/order_stats.py); the Powertools baseline
#: (bench/baseline/powertools_order_stats.py) writes the same.
ORDER_STATS_SCHEMA = ViewSchema()


def contribution(order: Mapping[str, Any] | None) -> dict[str, Decimal]:
    """What one order image adds to its customer's figures (empty for no image)."""
    if not order:
        return {}
    figures = {f"count:{order['status']}": Decimal(1)}
    if order["status"] == "paid":
        figures["paidTotal"] = Decimal(order["amount"])
    return figures


def expected_view(orders: Iterable[Mapping[str, Any]]) -> View:
    """The view recomputed from the orders' final state."""
    view: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for order in orders:
        for name, value in contribution(order).items():
            view[order["customerId"]][name] += value
    return _without_zeros(view)


def read_view(items: Iterable[Mapping[str, Any]], schema: ViewSchema) -> View:
    """View table items (DynamoDB JSON) in the neutral form of :func:`expected_view`."""
    view: dict[str, dict[str, Decimal]] = {}
    prefix, _, suffix = schema.count_attribute.partition("{status}")
    for raw in items:
        item = {name: _deserializer.deserialize(value) for name, value in raw.items()}
        figures: dict[str, Decimal] = {}
        for name, value in item.items():
            if name == schema.key or not isinstance(value, Decimal):
                continue
            if name == schema.paid_total:
                figures["paidTotal"] = value
            elif name.startswith(prefix) and name.endswith(suffix):
                status = name[len(prefix) : len(name) - len(suffix)]
                figures[f"count:{status}"] = value
        view[str(item[schema.key]).removeprefix(schema.key_prefix)] = figures
    return _without_zeros(view)


def _without_zeros(view: Mapping[str, Mapping[str, Decimal]]) -> View:
    cleaned = {
        customer: {name: value for name, value in figures.items() if value != 0}
        for customer, figures in view.items()
    }
    return {customer: figures for customer, figures in cleaned.items() if figures}


@dataclass
class Comparison:
    """How a view differs from the expected one."""

    exact: bool
    customers: int
    wrong_customers: int
    examples: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "exact": self.exact,
            "customers": self.customers,
            "wrong_customers": self.wrong_customers,
            "examples": self.examples,
        }


def compare(actual: View, expected: View) -> Comparison:
    """Per customer, the figures that differ (up to 3 examples)."""
    wrong = sorted(c for c in set(actual) | set(expected) if actual.get(c) != expected.get(c))
    examples = [
        {
            "customer": c,
            "expected": {k: str(v) for k, v in expected.get(c, {}).items()},
            "actual": {k: str(v) for k, v in actual.get(c, {}).items()},
        }
        for c in wrong[:3]
    ]
    return Comparison(not wrong, len(expected), len(wrong), examples)
