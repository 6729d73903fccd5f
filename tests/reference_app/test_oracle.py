"""The order-stats oracle the demo and end-to-end tests compare the view with."""

from __future__ import annotations

from decimal import Decimal

from reference_app.oracle import actual_view, expected_view


def order(pk: str, customer: str, status: str, amount: str, amount_type: str = "N") -> dict:
    return {
        "pk": {"S": pk},
        "customerId": {"S": customer},
        "status": {"S": status},
        "amount": {amount_type: amount},
    }


def test_the_view_counts_orders_per_status_and_sums_paid_amounts_per_customer() -> None:
    orders = [
        order("ORDER#1", "c1", "paid", "10.5"),
        order("ORDER#2", "c1", "paid", "4"),
        order("ORDER#3", "c1", "pending", "7"),
        order("ORDER#4", "c2", "cancelled", "1"),
        order("ORDER#poison-1", "c2", "pending", "ten", amount_type="S"),  # quarantined
        order("OTHER#5", "c3", "paid", "100"),  # not an order: ignored
    ]
    assert expected_view(orders) == {
        "CUSTOMER#c1": {
            "count_paid": Decimal(2),
            "paid_amount": Decimal("14.5"),
            "count_pending": 1,
        },
        "CUSTOMER#c2": {"count_cancelled": Decimal(1)},
    }


def test_zero_counters_left_by_updates_do_not_count_as_differences() -> None:
    view_items = [
        {"pk": {"S": "CUSTOMER#c1"}, "count_paid": {"N": "0"}, "count_pending": {"N": "2"}},
        {"pk": {"S": "CUSTOMER#c2"}, "count_paid": {"N": "0"}},
    ]
    assert actual_view(view_items) == {"CUSTOMER#c1": {"count_pending": Decimal(2)}}
