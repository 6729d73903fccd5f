"""The OrderPaid fan-out's filters, matched as Lambda and Pipes match them: an order is
published once, when it becomes paid, whether it was created paid or paid later."""

from __future__ import annotations

from cdc_consumer.filter_patterns import FilterCriteria
from cdc_consumer.testing import stream_record

from reference_app.stack import ORDER_PAID_FILTERS

ORDER = {"pk": "o1", "customerId": "c1", "amount": 42}


def _published(event_name: str, new: dict | None, old: dict | None = None) -> bool:
    record = stream_record(
        event_name, {"pk": "o1"}, new_image=new, old_image=old, sequence_number=1
    )
    return FilterCriteria(list(ORDER_PAID_FILTERS)).matches(record)


def test_an_order_created_already_paid_is_published() -> None:
    assert _published("INSERT", {**ORDER, "status": "paid"})


def test_an_order_that_becomes_paid_is_published() -> None:
    assert _published("MODIFY", {**ORDER, "status": "paid"}, {**ORDER, "status": "pending"})
    assert _published("MODIFY", {**ORDER, "status": "paid"}, dict(ORDER))  # no status before


def test_an_order_not_paid_or_already_paid_is_not_published() -> None:
    assert not _published("INSERT", {**ORDER, "status": "pending"})
    assert not _published("MODIFY", {**ORDER, "status": "paid"}, {**ORDER, "status": "paid"})
    assert not _published("REMOVE", None, {**ORDER, "status": "paid"})


def test_an_order_without_the_fields_the_event_carries_is_not_published() -> None:
    assert not _published("INSERT", {"pk": "o1", "status": "paid", "customerId": "c1"})
