"""The scale section of bench/RESULTS.md (bench/scale.py's rows), and its targets (issue 38).

Beside each target, what a lane per stream did: issue 38's own measurement (moto with a flat
10 ms round trip, wall time, per-record markers beside it) and, when bench/results.json holds
it (``scale_before``: bench/scale_lane_per_stream.json), this section's run on the commit before
lanes per shard.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.scale_plan import MAX_ATTEMPTS, SHARED_HOT, WORKLOADS
from bench.tables import fmt, table, yes

#: Issue 38's figures for a lane per stream, by concurrent shards: records/s of all shards
#: together, and head meetings per committed transaction.
ISSUE_RECORDS_PER_S = {1: 685, 2: 467, 4: 282, 8: 148, 16: 94}
ISSUE_MEETINGS_PER_COMMIT = {1: 0.0, 2: 0.48, 4: 1.38, 8: 2.67, 16: 5.27}
#: Issue 38's targets.
TARGET_RATE_RATIO = 0.9
TARGET_CANCELLED_PER_COMMIT = 0.05


def _rows(data: Mapping[str, Any] | None, workload: str) -> list[dict[str, Any]]:
    rows = (data or {}).get("rows", [])
    return sorted((r for r in rows if r["workload"] == workload), key=lambda r: r["shards"])


def _ratio(rows: list[dict[str, Any]]) -> float | None:
    """Records/s per shard at the most shards over at one shard."""
    if len(rows) < 2 or not rows[0]["records_per_s_per_shard"]:
        return None
    return round((rows[-1]["records_per_s_per_shard"] or 0) / rows[0]["records_per_s_per_shard"], 3)


def _before_label(results: Mapping[str, Any]) -> str:
    before = results.get("scale_before") or {}
    return f"this section on runtime {before.get('runtime_commit', '-')} (a lane per stream)"


def _issue_rates() -> str:
    per_shard = ", ".join(f"{n}: {rate / n:.0f}" for n, rate in ISSUE_RECORDS_PER_S.items())
    return (
        "issue 38 (wall time on moto, 10 ms round trips), records/s per shard by shards at once "
        f"({per_shard})"
    )


def _rate_target(results: Mapping[str, Any], workload: str) -> dict[str, Any] | None:
    rows = _rows(results.get("scale"), workload)
    ratio = _ratio(rows)
    if ratio is None:
        return None
    before = _rows(results.get("scale_before"), workload)
    was = f"{_before_label(results)}: {fmt(_ratio(before))}x; " if before else ""
    return {
        "target": f"scale, {workload}: records/s per shard at {rows[-1]['shards']} shards ≥ "
        f"{TARGET_RATE_RATIO}x one shard's",
        "measured": ratio,
        "unit": f"times one shard's ({rows[-1]['records_per_s_per_shard']} vs "
        f"{rows[0]['records_per_s_per_shard']} records/s per shard, modelled time)",
        "met": ratio >= TARGET_RATE_RATIO,
        "by": round(TARGET_RATE_RATIO - ratio, 3),
        "before": was + _issue_rates(),
    }


def _target_rows(data: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [row for workload in WORKLOADS for row in _rows(data, workload)]


def _contention_targets(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = _target_rows(results.get("scale"))
    if not rows:
        return []
    before = _target_rows(results.get("scale_before"))
    failed = sum(row["batches_failed_by_contention"] for row in rows)
    worst = max(rows, key=lambda row: row["cancelled_per_commit"] or 0)
    cancelled = worst["cancelled_per_commit"] or 0.0
    was_failed = was_cancelled = ""
    if before:
        stopped = sum(row["shards_stopped"] for row in before)
        was_failed = (
            f"{_before_label(results)}: {sum(r['batches_failed_by_contention'] for r in before)}"
            f" ({stopped} shards stopped after {MAX_ATTEMPTS} failures in a row); "
        )
        was_cancelled = (
            f"{_before_label(results)}: up to "
            f"{max(r['cancelled_per_commit'] or 0 for r in before)}; "
        )
    meetings = ", ".join(f"{n}: {m}" for n, m in ISSUE_MEETINGS_PER_COMMIT.items())
    return [
        {
            "target": "scale: 0 batches failed by contention",
            "measured": failed,
            "unit": f"batches, over {len(rows)} rows (the three workloads, 1 to 64 shards)",
            "met": failed == 0,
            "by": failed,
            "before": was_failed + "issue 38: 169 failed invocations for 40 batches at 8 shards",
        },
        {
            "target": f"scale: ≤ {TARGET_CANCELLED_PER_COMMIT} cancelled transactions per commit",
            "measured": cancelled,
            "unit": f"per commit in the worst row ({worst['workload']}, {worst['shards']} shards)"
            if cancelled
            else f"per commit in every row ({sum(row['commits'] for row in rows)} commits)",
            "met": cancelled <= TARGET_CANCELLED_PER_COMMIT,
            "by": round(cancelled - TARGET_CANCELLED_PER_COMMIT, 4),
            "before": was_cancelled + f"issue 38, head meetings per commit by shards ({meetings})",
        },
    ]


def _unit_targets(results: Mapping[str, Any], bounds: Mapping[str, float]) -> list[dict[str, Any]]:
    checks = []
    for workload, bound in bounds.items():
        rows = _rows(results.get("scale"), workload)
        if not rows:
            continue
        most, one = rows[-1], rows[0]
        before = _rows(results.get("scale_before"), workload)
        checks.append(
            {
                "target": f"scale, {workload}: ≤ {bound} WRU per record at {most['shards']} shards",
                "measured": most["wru_per_record"],
                "unit": f"WRU/record, cancelled transactions included (1 shard: "
                f"{one['wru_per_record']})",
                "met": most["wru_per_record"] <= bound,
                "by": round(most["wru_per_record"] - bound, 4),
                "before": f"{_before_label(results)}: {before[-1]['wru_per_record']}"
                if before
                else "-",
            }
        )
    return checks


def targets(results: Mapping[str, Any], unit_bounds: Mapping[str, float]) -> list[dict[str, Any]]:
    """Issue 38's targets on the scale section's rows; ``unit_bounds``: each workload's write
    units per record as the cost table's targets state them."""
    checks = [check for w in WORKLOADS if (check := _rate_target(results, w)) is not None]
    checks += _contention_targets(results)
    checks += _unit_targets(results, unit_bounds)
    rows = [row for row in (results.get("scale") or {}).get("rows", [])]
    if rows:
        exact = sum(row["view"]["exact"] for row in rows)
        checks.append(
            {
                "target": "scale: the view exact in every row",
                "measured": exact,
                "unit": f"of {len(rows)} rows",
                "met": exact == len(rows),
                "by": len(rows) - exact,
            }
        )
    return checks


HEADER = [
    "shards",
    "batches per shard",
    "records/s per shard",
    "slowest shard",
    "records/s, all shards",
    "meetings per commit",
    "cancelled per commit",
    "WRU per record",
    "batches failed by contention",
    "shards stopped",
    "answers without `state`",
    "view exact (records checkpointed)",
    "modelled ms per batch: requests / waits / CPU",
]


def _row(row: Mapping[str, Any]) -> list[Any]:
    split = row["modelled_ms_per_batch"]
    return [
        row["shards"],
        row["batches_per_shard"],
        fmt(row["records_per_s_per_shard"], 0),
        fmt(row["slowest_shard_records_per_s"], 0),
        fmt(row["records_per_s_all_shards"], 0),
        fmt(row["meetings_per_commit"], 2),
        fmt(row["cancelled_per_commit"], 2),
        fmt(row["wru_per_record"], 3),
        row["batches_failed_by_contention"],
        row["shards_stopped"],
        row["answers_without_window_state"],
        yes(row["view"]["exact"]),
        f"{split['requests']:.0f} / {split['waits']:.0f} / {split['cpu']:.0f}",
    ]


def _load(data: Mapping[str, Any]) -> str:
    load = data.get("load_average")
    return f"{load[0]} at its end" if load else "unknown"


def _tables(data: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    for workload in (*WORKLOADS, SHARED_HOT):
        rows = _rows(data, workload)
        if rows:
            lines += ["", f"**{workload}**", "", *table(HEADER, [_row(r) for r in rows])]
    return lines


def scale(results: Mapping[str, Any]) -> list[str]:
    """The section (docs/benchmarks.md states the model behind it)."""
    data = results.get("scale")
    if not data:
        return []
    lines = [
        "## Scale: shards at once (issue 38)",
        "",
        "N shards deliver at once, one thread per shard, each its own batches of "
        f"{data['batch_size']} records in order, as tumbling-window events naming its shard, to "
        "its own consumer runtime with the reference projection. Every request costs its "
        "modelled round trip; a shard's records/s are over its modelled time (round trips, the "
        "runtime's waits, its own CPU time), never the emulator's CPU or a wait for the GIL. A "
        "transaction touching an item another shard's committed transaction holds (for that "
        "transaction's modelled round trip) is cancelled with `TransactionConflict`. A meeting "
        "is a transaction cancelled at a ledger item; cancelled transactions' write units are "
        "counted. Each shard has its own orders and customers; the hot aggregate is each shard's "
        "own customer; the last table (no target) gives every shard the same customer. A shard "
        f"stops after {data['max_attempts']} failures of one batch in a row; the view is checked "
        f"over the records checkpointed. Runtime at {data.get('runtime_commit', '-')}; section "
        f"time {data.get('seconds', '-')} s of wall time (load average {_load(data)} on this "
        "machine's CPUs: the wall time moves with the machine's load, the figures do not). The "
        "model: docs/benchmarks.md.",
        *_tables(data),
    ]
    before = results.get("scale_before")
    if before:
        lines += [
            "",
            f"### Before: {_before_label(results)}, {before.get('date', '')}",
            *_tables(before),
        ]
    return lines
