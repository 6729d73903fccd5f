"""Smoke test of the scale section (bench/scale.py): 1 and 2 shards of each workload, 2 batches
each, against the fixture's moto server. It checks what the section reports and that every view
is exact; its figures mean nothing here (a script, `make bench`, never a timed test)."""

from __future__ import annotations

import json
from pathlib import Path

from bench import report, scale_report
from bench.scale_plan import QUICK_BATCHES_PER_SHARD, WORKLOADS
from cdc_local.endpoint import LocalEndpoint
from tests.bench.quick_run import run_quick

FIGURES = (
    "records_per_s_per_shard",
    "slowest_shard_records_per_s",
    "records_per_s_all_shards",
    "meetings_per_commit",
    "cancelled_per_commit",
    "wru_per_record",
)


def test_quick_scale_run_reports_every_row_with_an_exact_view(
    aws: LocalEndpoint, tmp_path: Path
) -> None:
    run_quick("bench.scale", tmp_path, aws.url)

    results = json.loads((tmp_path / "results.json").read_text())
    rows = results["scale"]["rows"]
    assert [(row["workload"], row["shards"]) for row in rows] == [
        (workload, shards) for workload in WORKLOADS for shards in (1, 2)
    ]
    for row in rows:
        assert row["records"] == row["shards"] * QUICK_BATCHES_PER_SHARD * 100
        assert row["view"]["exact"], row
        assert row["commits"] > 0 and row["shard_errors"] == [] and row["shards_stopped"] == 0
        assert all(isinstance(row[key], float) for key in FIGURES), row
        assert set(row["modelled_ms_per_batch"]) == {"requests", "waits", "cpu"}
        # Each shard answered its window's invocations: its batches and the final one.
        assert row["invocations"] >= row["shards"] * (QUICK_BATCHES_PER_SHARD + 1)
    one_shard = [row for row in rows if row["shards"] == 1]
    assert all(row["cancelled"] == row["batches_failed_by_contention"] == 0 for row in one_shard)

    text = (tmp_path / "RESULTS.md").read_text()
    assert "## Scale: shards at once (issue 38)" in text
    assert all(f"**{workload}**" in text for workload in WORKLOADS)
    checks = scale_report.targets(results, {workload: 9.0 for workload in WORKLOADS})
    assert {check["target"] for check in checks} >= {
        "scale: 0 batches failed by contention",
        "scale: the view exact in every row",
    }
    assert any(check["target"].startswith("scale: the view") and check["met"] for check in checks)
    assert report.targets(results)  # the whole table's function takes the section's rows
