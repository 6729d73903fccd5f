"""Smoke test of the backfill benchmark (bench/backfill.py): it runs on a tiny table against the
fixture's moto server and writes its report; what it reports about correctness holds (both
views exact after one run; after a second, the backfill's still exact, the naive one not).
Its figures mean nothing here: it is a script (`make bench`), never a timed test."""

from __future__ import annotations

import json
from pathlib import Path

from cdc_local.endpoint import LocalEndpoint
from tests.bench.quick_run import run_quick


def test_quick_backfill_run_reports_both_approaches(aws: LocalEndpoint, tmp_path: Path) -> None:
    run_quick("bench.backfill", tmp_path, aws.url)

    backfill = json.loads((tmp_path / "results.json").read_text())["backfill"]
    ours, naive = backfill["backfill"], backfill["naive"]
    assert [row["segments"] for row in ours] == [row["segments"] for row in naive] == [1, 2]
    for row in ours + naive:
        assert row["items"] == backfill["items"]
        assert row["view_exact"]
        assert row["items_per_second"] > 0 and row["usd_per_million_items"] > 0
    assert all(row["rerun_view_exact"] and row["rerun_wru"] == 0 for row in ours)
    assert not any(row["rerun_view_exact"] for row in naive)
    assert all(row["rru_per_item"] > 0 and row["wru_per_item"] > 0 for row in ours)

    report = (tmp_path / "RESULTS.md").read_text()
    assert "## Backfill (issue 25)" in report
    assert "view exact after running it again over its own view" in report
