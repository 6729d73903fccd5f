"""Whether a consumer's order-stats view holds exactly what it should.

The view's definition (per customer, ``count_<status>`` of its orders and ``paid_amount``, the
total of its paid orders) and its recomputation from the orders table are
:mod:`reference_app.oracle`'s, which the end-to-end tests use too; the reference handler
(reference_app/handlers/order_stats.py) and the Powertools baseline
(bench/baseline/powertools_order_stats.py) both write that view. This module only says how a
view differs from the expected one, for the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

#: ``CUSTOMER#<customerId>`` -> {view attribute: value}, zero entries left out (as
#: reference_app.oracle.expected_view and actual_view return it).
View = Mapping[str, Mapping[str, Decimal]]


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


def compare_replica(
    replica_items: list[dict[str, Any]], final_orders: Mapping[str, Mapping[str, Any]]
) -> Comparison:
    """A latest-image replica (DynamoDB JSON items; tombstones and the version attribute left
    out) against the orders table's final state: per order, whether the images are equal."""
    from boto3.dynamodb.types import TypeDeserializer

    deserializer = TypeDeserializer()
    live: dict[str, dict[str, Any]] = {}
    for item in replica_items:
        plain = {name: deserializer.deserialize(value) for name, value in item.items()}
        if plain.pop("cdc_deleted", False):
            continue
        plain.pop("cdc_version", None)
        live[plain["pk"]] = plain
    wrong = sorted(k for k in set(live) | set(final_orders) if live.get(k) != final_orders.get(k))
    examples = [
        {"order": k, "expected": str(final_orders.get(k)), "actual": str(live.get(k))}
        for k in wrong[:3]
    ]
    return Comparison(not wrong, len(final_orders), len(wrong), examples)
