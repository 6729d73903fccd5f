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


def _run(consumer: str, batch_size: int, wru: float, dynamodb_usd: float) -> dict[str, object]:
    return {
        "consumer": consumer,
        "batch_size": batch_size,
        "dynamodb_requests_per_record": 1.0,
        "cost": {
            "wru_per_record": wru,
            "usd_per_million_changes": dynamodb_usd + 0.1,
            "usd_per_million_changes_by_part": {
                "dynamodb_writes": dynamodb_usd,
                "dynamodb_reads": 0,
            },
        },
    }


def test_a_batch_size_powertools_was_not_run_at_is_listed_where_it_costs_more() -> None:
    """Batch size 1 writes an effect, an entry and the head (6 WRU) where Powertools writes 3 at
    any batch size: the report says so, though Powertools ran at batch size 100 only; the
    dollars target still counts the rows measured with both."""
    curve = [
        {"cdc-constructs": _run("cdc-constructs", 1, 6.0, 3.75)},
        {"cdc-constructs": _run("cdc-constructs", 10, 2.4, 1.5)},
        {
            "cdc-constructs": _run("cdc-constructs", 100, 2.08, 1.3),
            "powertools": _run("powertools", 100, 3.0, 1.875),
        },
    ]
    results = {"cost_curve": {"batch_size": curve}}
    (line,) = report._costs_more_unmeasured(results)
    assert "distinct keys, batch size 1:" in line and "6.00 vs 3.00 WRU/record" in line
    assert "$3.750 vs $1.875" in line
    assert report._costs_more(results) == []
    (check,) = [t for t in report.targets(results) if t["target"].startswith("dollars")]
    assert check["met"] and check["unit"] == "of 1 rows run with Powertools beside it"
