"""bench/RESULTS.md's targets table lists issue 29's LatestImage target (bench/report.py)."""

from __future__ import annotations

from bench import report


def test_the_targets_table_lists_latest_image_on_distinct_keys() -> None:
    runs = {
        "cdc-constructs": {
            "consumer": "cdc-constructs",
            "batch_size": 100,
            "dynamodb_requests_per_record": 0.049,
            "cost": {"wru_per_record": 2.08},
        },
        "latest-image": {
            "consumer": "latest-image",
            "batch_size": 100,
            "cost": {"wru_per_record": 1.0},
        },
    }
    results = {"cost_curve": {"batch_size": [runs]}}
    (check,) = [t for t in report.targets(results) if t["target"].startswith("LatestImage")]
    assert check["met"] and check["measured"] == 1.0
