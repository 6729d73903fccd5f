"""The backfill's cost model (bench/backfill_model.py): write units per backfilled item from
the page size P and the view items V a page touches, about 2 + 2 V/P (issue 29, "Backfill
rides on it"), and the target bench/RESULTS.md checks against the bench's measurement."""

from __future__ import annotations

from typing import Any

import pytest

from bench import report
from bench.backfill_model import fan_in_table, view_items_per_page, wru_per_item


def test_a_page_writes_each_rows_contribution_and_one_add_per_view_item() -> None:
    # 1,000 rows of 200 view items: 1,200 actions in 13 transactions of at most 100, each
    # cut splitting at most one view item's rows: 12 more ADDs.
    assert wru_per_item(1_000, 200) == pytest.approx(2 * (1_000 + 200 + 12) / 1_000)
    # One view item: a contribution a row and about one ADD a transaction.
    assert wru_per_item(100, 1) == pytest.approx(2 * (100 + 1 + 1) / 100)
    # Nothing merges when every row has its own view item (at most: a cut may split a row
    # from its ADD).
    assert 4.0 <= wru_per_item(100, 100) <= 4.04


def test_view_items_touched_by_a_page_of_rows_in_hash_order() -> None:
    assert view_items_per_page(1_000, 1) == pytest.approx(1)
    assert view_items_per_page(100, 200) == pytest.approx(78.8, abs=0.1)  # the bench, before
    assert view_items_per_page(1_000, 200) == pytest.approx(198.7, abs=0.1)
    assert view_items_per_page(1_000, None) == 1_000


def test_the_fan_in_table_meets_the_target_on_the_bench_and_shows_where_it_cannot() -> None:
    table = fan_in_table(200, (100, 1_000))
    bench = next(row for row in table if row.get("view_items") == 200)
    assert bench["wru_per_item"][100] == pytest.approx(3.60)
    assert bench["wru_per_item"][1_000] <= 2.5
    one_each = next(row for row in table if "view_items" in row and row["view_items"] is None)
    assert one_each["wru_per_item"][1_000] > 4  # fan-in 1: nothing to merge
    grouped = next(row for row in table if row.get("grouped_fan_in") == 10)
    assert grouped["wru_per_item"][100] < 2.5  # rows scanned together merge at any page


def _results(wru: float) -> dict[str, Any]:
    row = {"segments": 1, "wru_per_item": wru}
    return {"backfill": {"items": 2_000, "customers": 200, "page_size": 1_000, "backfill": [row]}}


def test_the_targets_table_checks_the_backfills_write_units() -> None:
    (met,) = [t for t in report.targets(_results(2.413)) if t["target"].startswith("backfill")]
    (missed,) = [t for t in report.targets(_results(4.01)) if t["target"].startswith("backfill")]
    assert met["met"] and met["measured"] == 2.413
    assert not missed["met"] and missed["by"] == pytest.approx(1.51)
