"""The order workload: reproducible, exactly the changes asked for, each one write."""

from __future__ import annotations

from collections import Counter

import pytest

from reference_app.workload import OrderWorkload


def test_the_same_seed_gives_the_same_changes_and_the_counts_asked_for() -> None:
    first = list(OrderWorkload(changes=1000, orders=50, poison=3, seed=4).plan())
    again = list(OrderWorkload(changes=1000, orders=50, poison=3, seed=4, now=0).plan())
    assert [(c.kind, c.order_id) for c in first] == [(c.kind, c.order_id) for c in again]
    kinds = Counter(c.kind for c in first)
    assert len(first) == 1000 and kinds["poison"] == 3 and kinds["create"] >= 50
    assert {"status", "amend", "expire", "delete"} <= set(kinds)


def test_changes_touch_only_orders_that_exist() -> None:
    alive: set[str] = set()
    for change in OrderWorkload(changes=2000, orders=20, poison=0, seed=1).plan():
        if change.kind == "create":
            alive.add(change.order_id)
        elif change.kind != "poison":
            assert change.order_id in alive
            if change.kind in ("expire", "delete"):
                alive.remove(change.order_id)


def test_too_few_changes_for_the_orders_is_an_error() -> None:
    with pytest.raises(ValueError, match="changes=10 cannot cover"):
        OrderWorkload(changes=10, orders=20)
