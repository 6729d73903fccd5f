"""bench/RESULTS.md from the results dictionary, and the DESIGN.md targets checked against it."""

from __future__ import annotations

from typing import Any

REF = "cdc-constructs"
PT = "powertools"

#: DESIGN.md §4: "Target ≤ 0.05 requests per record" (projection mode, distinct keys).
TARGET_REQUESTS_PER_RECORD = 0.05
#: DESIGN.md §4 / issue 7: handler import < 15 ms over bare boto3.
TARGET_IMPORT_OVER_BOTO3_MS = 15.0
REFERENCE_IMPORT = "reference handler (order_stats)"
CLIENTS_IMPORT = "import boto3 + dynamodb and sqs clients"


def _ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}x"


def _yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


def _distinct_row(results: dict[str, Any], batch_size: int) -> dict[str, Any] | None:
    for row in results.get("cost_curve", {}).get("batch_size", []):
        if row[REF]["batch_size"] == batch_size:
            return row
    return None


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each DESIGN.md target: the figure measured, whether it is met, and by how much if not."""
    checks: list[dict[str, Any]] = []
    row = _distinct_row(results, 100)
    if row is not None:
        measured = row[REF]["dynamodb_requests_per_record"]
        checks.append(
            {
                "target": "projection ≤ 0.05 DynamoDB requests per record on distinct keys",
                "measured": measured,
                "unit": "requests/record (1,000 records, distinct view items, batch size 100)",
                "met": measured <= TARGET_REQUESTS_PER_RECORD,
                "by": round(measured - TARGET_REQUESTS_PER_RECORD, 4),
            }
        )
    modules = results.get("cold_start", {}).get("modules", {})
    if REFERENCE_IMPORT in modules:
        over = modules[REFERENCE_IMPORT]["over_boto3_ms"]
        clients_over = modules.get(CLIENTS_IMPORT, {}).get("over_boto3_ms")
        checks.append(
            {
                "target": "reference handler import < 15 ms over bare `import boto3`",
                "measured": over,
                "unit": "ms over bare boto3 (median of fresh interpreters)",
                "met": over < TARGET_IMPORT_OVER_BOTO3_MS,
                "by": round(over - TARGET_IMPORT_OVER_BOTO3_MS, 2),
                "boto3_clients_over_boto3_ms": clients_over,
            }
        )
    return checks


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_fmt(cell) for cell in row) + " |" for row in rows]
    return lines


def _headline(results: dict[str, Any]) -> list[str]:
    p = results["projection"]
    ref, pt = p[REF], p[PT]
    cpu = results.get("cpu", {})
    rows = [
        [
            "DynamoDB requests per record",
            ref["dynamodb_requests_per_record"],
            pt["dynamodb_requests_per_record"],
            _ratio(pt["dynamodb_requests_per_record"], ref["dynamodb_requests_per_record"])
            + " fewer",
        ],
        [
            "wall time per record on moto (ms)",
            ref["wall_ms_per_record"],
            pt["wall_ms_per_record"],
            _ratio(ref["wall_ms_per_record"], pt["wall_ms_per_record"]) + " of Powertools'",
        ],
        [
            "… of which outside requests (ms)",
            ref["outside_requests_ms_per_record"],
            pt["outside_requests_ms_per_record"],
            _ratio(ref["outside_requests_ms_per_record"], pt["outside_requests_ms_per_record"])
            + " of Powertools'",
        ],
        ["final view exact", _yes(ref["view"]["exact"]), _yes(pt["view"]["exact"]), ""],
    ]
    faults = results.get("faults", {})
    if "transient" in faults:
        f = faults["transient"]
        rows.append(
            [
                "transient failure mid-batch: view exact / changes applied out of item order",
                f"{_yes(f[REF]['view']['exact'])} / {f[REF]['ordering']['out_of_order']}",
                f"{_yes(f[PT]['view']['exact'])} / {f[PT]['ordering']['out_of_order']}",
                "",
            ]
        )
    if "crash" in faults:
        f = faults["crash"]
        rows.append(
            [
                "crash after a write, before bookkeeping: view exact (customers wrong)",
                f"{_yes(f[REF]['view']['exact'])} ({f[REF]['view']['wrong_customers']})",
                f"{_yes(f[PT]['view']['exact'])} ({f[PT]['view']['wrong_customers']})",
                "",
            ]
        )
    if REF in cpu and PT in cpu:
        rows.append(
            [
                "CPU per record, no-op effect (µs)",
                cpu[REF]["cpu_us_per_record"],
                cpu[PT]["cpu_us_per_record"],
                _ratio(cpu[REF]["cpu_us_per_record"], cpu[PT]["cpu_us_per_record"])
                + " of Powertools'",
            ]
        )
    modules = results.get("cold_start", {}).get("modules", {})
    if REFERENCE_IMPORT in modules:
        r, b = modules[REFERENCE_IMPORT], modules["Powertools equivalent"]
        rows.append(
            [
                "handler module import, median (ms)",
                f"{r['median_ms']:.1f} (+{r['over_boto3_ms']:.1f} over boto3)",
                f"{b['median_ms']:.1f} (+{b['over_boto3_ms']:.1f} over boto3)",
                _ratio(r["over_boto3_ms"], b["over_boto3_ms"]) + " of Powertools' extra",
            ]
        )
    w = results["workload"]
    return [
        "## Headline",
        "",
        f"The order-stats projection: {w['changes']:,} changes on {w['orders']} orders of "
        f"{w['customers']} customers, batch size 100, on one moto server; the same records for "
        "both consumers.",
        "",
        *_table(["", "cdc-constructs", "Powertools", "ratio"], rows),
    ]


def _targets_section(results: dict[str, Any]) -> list[str]:
    rows = []
    for check in results.get("targets", []):
        verdict = "met" if check["met"] else f"**missed** by {check['by']}"
        rows.append([check["target"], f"{check['measured']} {check['unit']}", verdict])
    lines = ["## DESIGN.md targets", "", *_table(["target", "measured", "verdict"], rows)]
    for check in results.get("targets", []):
        if check.get("note"):
            lines += ["", f"- {check['target']}: {check['note']}"]
    return lines


def _run_row(label: Any, run: dict[str, Any]) -> list[Any]:
    return [
        label,
        run["consumer"],
        run["dynamodb_requests_per_record"],
        ", ".join(f"{k.split('.', 1)[1]} {v}" for k, v in run["requests"].items()),
        run["wall_ms_per_record"],
        run["outside_requests_ms_per_record"],
        _yes(run["view"]["exact"]),
    ]


_RUN_HEADER = [
    "",
    "consumer",
    "requests/record",
    "requests",
    "wall ms/record",
    "ms/record outside requests",
    "exact",
]


def _cost_curve(results: dict[str, Any]) -> list[str]:
    curve = results.get("cost_curve")
    if not curve:
        return []
    rows = []
    for row in curve["batch_size"]:
        for name in (REF, PT):
            rows.append(_run_row(f"batch size {row[name]['batch_size']}", row[name]))
    same = []
    for row in curve["same_item"]:
        for name in (REF, PT):
            same.append(_run_row(f"{row['same_fraction']:.0%} on one item", row[name]))
    return [
        "## Cost curve",
        "",
        f"{curve['records']:,} INSERTs. By batch size, every record on its own view item "
        "(distinct keys):",
        "",
        *_table(["batch size", *_RUN_HEADER[1:]], rows),
        "",
        "By share of records on one view item (the rest on distinct items), batch size 100:",
        "",
        *_table(["share", *_RUN_HEADER[1:]], same),
    ]


def _faults(results: dict[str, Any]) -> list[str]:
    faults = results.get("faults")
    if not faults:
        return []
    rows = []
    for kind, by_consumer in faults.items():
        if kind == "workload":
            continue
        for name in (REF, PT):
            run = by_consumer[name]
            o = run["ordering"]
            rows.append(
                [
                    kind,
                    name,
                    run["faults_hit"],
                    run["reported_failures"],
                    run["crashes"],
                    o["out_of_order"],
                    o["stale_latest_image_orders"],
                    _yes(run["view"]["exact"]),
                    run["view"]["wrong_customers"],
                ]
            )
    target = faults["transient"][REF]["target"]
    w = faults.get("workload", {})
    return [
        "## Faults in the middle of a batch",
        "",
        f"{w.get('changes', '?')} changes on {w.get('orders', '?')} orders of "
        f"{w.get('customers', '?')} customers, batch size 100. "
        f"The target is record #{target['index']} (sequence number {target['sequenceNumber']}): "
        "in the middle of its batch of 100, with a newer change of the same order later in that "
        "batch. *transient*: its write is throttled once; the mapping re-sends from the lowest "
        "reported sequence number. *crash*: its write succeeds, then the process dies before "
        "the consumer records it; the mapping re-sends the batch after the function timeout.",
        "",
        *_table(
            [
                "fault",
                "consumer",
                "faults hit",
                "reported failures",
                "crashes",
                "applied out of item order",
                "orders stale at the end (latest-image view)",
                "view exact",
                "customers wrong",
            ],
            rows,
        ),
        "",
        "*Applied out of item order* counts changes whose write was committed after a newer "
        "change of the same order: a view that stores the latest image would go back to an "
        "older image there (the stale-image case). The order-stats view ADDs differences, "
        "which commute, so out-of-order application alone leaves its totals exact; applying a "
        "change twice does not.",
    ]


def _cpu(results: dict[str, Any]) -> list[str]:
    cpu = results.get("cpu")
    if not cpu:
        return []
    rows = [
        [name, cpu[name]["cpu_seconds"], cpu[name]["cpu_us_per_record"]]
        for name in (REF, PT)
        if name in cpu
    ]
    return [
        "## CPU per record",
        "",
        f"{cpu['records']:,} records in batches of {cpu['batch_size']}, no-op effect, no I/O, "
        f"median of {cpu['repeats']} passes (CPU time).",
        "",
        *_table(["consumer", "CPU s", "µs/record"], rows),
    ]


def _cold_start(results: dict[str, Any]) -> list[str]:
    cold = results.get("cold_start")
    if not cold:
        return []
    rows = [
        [label, m["median_ms"], m["min_ms"], m["max_ms"], m["over_boto3_ms"]]
        for label, m in cold["modules"].items()
    ]
    return [
        "## Cold start (module import)",
        "",
        f"Median of {cold['runs']} fresh interpreters each (after one warm-up that compiles "
        ".pyc files), function environment set, no network.",
        "",
        *_table(["module", "median ms", "min ms", "max ms", "over bare boto3 ms"], rows),
    ]


def _synth(results: dict[str, Any]) -> list[str]:
    synth = results.get("synth")
    if not synth:
        return []
    ref, sol = synth["reference"], synth["solutions_construct"]
    nag = synth.get("reference_with_nag")
    stacks = [("CdcReferenceStack", ref)]
    if nag:
        stacks.append(("CdcReferenceStack + cdk-nag packs (app.py, 1 run)", nag))
    stacks.append(("DynamoDBStreamsToLambda (minimal)", sol))
    rows = [
        [
            label,
            s["process_s_median"],
            s["construct_s_median"],
            s["synth_s_median"],
            s["resources"],
            s["alarms"],
        ]
        for label, s in stacks
    ]
    settings = [
        "StartingPosition",
        "BatchSize",
        "MaximumRetryAttempts",
        "MaximumRecordAgeInSeconds",
        "BisectBatchOnFunctionError",
        "FunctionResponseTypes",
    ]
    esm_rows = []
    for label, s in (("CdcReferenceStack", ref), ("DynamoDBStreamsToLambda", sol)):
        for mapping in s["event_source_mappings"]:
            esm_rows.append(
                [label]
                + [_fmt(mapping.get(name)) for name in settings]
                + ["yes" if mapping.get("DestinationConfig") else "no"]
            )
    types = sorted(set(ref["resource_types"]) | set(sol["resource_types"]))
    type_rows = [
        [t, ref["resource_types"].get(t, 0), sol["resource_types"].get(t, 0)] for t in types
    ]
    return [
        "## Synth",
        "",
        f"Each synthesis in a fresh interpreter, as `cdk synth` runs the app; median of "
        f"{ref['runs']}. Process time includes Python start-up and jsii's Node process.",
        "",
        *_table(["stack", "process s", "construct s", "synth s", "resources", "alarms"], rows),
        "",
        "Event source mappings as synthesized:",
        "",
        *_table(["stack", *settings, "on-failure destination"], esm_rows),
        "",
        "Resources by type:",
        "",
        *_table(["type", "CdcReferenceStack", "DynamoDBStreamsToLambda"], type_rows),
    ]


def _machine(results: dict[str, Any]) -> list[str]:
    m = results["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    return [
        "## Machine",
        "",
        f"- date: {m['date']}; commit {m.get('git_commit') or '-'}; "
        f"whole run {results.get('seconds')} s",
        f"- {m['cpus']} CPUs ({m['cpu_model']}), {m['memory_gib']} GiB memory, {m['os']}",
        f"- Python {m['python']}, Node {m['node']}",
        f"- {versions}",
    ]


NOTES = [
    "## How to read this",
    "",
    "- Requests are counted with botocore events on every client both consumers make "
    "(registered on boto3's default session before their modules are imported; Powertools' "
    "persistence layer is given the module's client). One count per HTTP request, retries "
    "included; the harness's own setup and verification requests are not counted.",
    "- Wall time is measured against moto's server in the same process, on this machine. It is "
    "not DynamoDB's latency: moto's TransactWriteItems deep-copies the target table once per "
    "action before applying it (moto/dynamodb/models/__init__.py, `transact_write_items`), so "
    "a transaction of 100 actions costs about 100 copies of the idempotency table and grows "
    "with the table. *Outside requests* is the consumer's own time (wall time minus the time "
    "spent inside requests); DynamoDB's latency per request is roughly the same for a "
    "transaction as for a single write, so the request count is the better guide to "
    "wall time in AWS.",
    "- The view is exact when every customer's figures equal a recomputation from the orders "
    "table's final state (zero figures and missing items are the same).",
    "- The event source mapping is modelled by bench/esm.py: batches in stream order; a "
    "reported failure re-sends from the lowest reported sequence number; a function error "
    "re-sends the whole batch. Bisect, filters and record age are not modelled.",
    "- Rerun with `make bench` (or `.venv/bin/python -m bench`); raw figures are in "
    "bench/results.json.",
]


def markdown(results: dict[str, Any]) -> str:
    sections = [
        ["# Benchmarks: cdc-constructs vs Powertools for AWS Lambda and AWS Solutions Constructs"],
        ["Generated by `make bench` (`python -m bench`, bench/__main__.py); do not edit by hand."]
        + (
            ["", "**Quick smoke run (`--quick`): small workloads, figures not meaningful.**"]
            if results.get("quick")
            else []
        ),
        _headline(results),
        _targets_section(results),
        _faults(results),
        _cost_curve(results),
        _cpu(results),
        _cold_start(results),
        _synth(results),
        _machine(results),
        NOTES,
    ]
    return "\n\n".join("\n".join(s) for s in sections if s) + "\n"
