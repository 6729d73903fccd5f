"""Smoke test of the benchmark harness (bench/): it runs and writes both reports.

The benchmarks are scripts (`make bench`), not timed assertions: this test checks only that the
harness works end to end on a tiny workload against the fixture's moto server, and that what it
reports about correctness holds (both views exact; fewer requests with cdc-constructs).
"""

from __future__ import annotations

import json
from pathlib import Path

from cdc_local.endpoint import LocalEndpoint
from tests.bench.quick_run import run_quick


def test_quick_run_writes_both_reports_with_exact_views(aws: LocalEndpoint, tmp_path: Path) -> None:
    run_quick("bench", tmp_path, aws.url)

    results = json.loads((tmp_path / "results.json").read_text())
    projection = results["projection"]
    assert projection["cdc-constructs"]["view"]["exact"]
    assert projection["powertools"]["view"]["exact"]
    assert projection["cdc-constructs"]["records"] == projection["powertools"]["records"] == 50
    assert (
        projection["cdc-constructs"]["dynamodb_requests"]
        < projection["powertools"]["dynamodb_requests"]
    )
    transient = results["faults"]["transient"]["cdc-constructs"]
    assert transient["faults_hit"] == 1
    assert transient["reported_failures"] == 1
    assert transient["view"]["exact"]
    assert transient["ordering"]["out_of_order"] == 0

    summary = results["summary"]
    for name in ("cdc", "powertools"):
        for key in (
            "requests_per_record",
            "wru_per_record",
            "usd_per_million_changes",
            "cpu_us_per_record",
            "hot_key_requests_per_record",
            "hot_key_wru_per_record",
        ):
            assert isinstance(summary[name][key], (int, float)), (name, key)
    assert projection["seed"]["view"]["exact"]
    assert results["prices"]["usd_per_million_wru"] > 0

    report = (tmp_path / "RESULTS.md").read_text()
    assert "## Headline" in report
    assert "DynamoDB requests per record" in report
    assert "DynamoDB write request units per record" in report
    assert "## What a change costs" in report
