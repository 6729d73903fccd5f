"""`python -m bench` (what `make bench` runs): every benchmark of issue 7, then the reports.

Writes bench/results.json (everything measured) and bench/RESULTS.md (the tables a person reads).
``--quick`` runs small workloads and skips the crash fault, cold start and synth, for the smoke
test (tests/bench/); its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from bench import backfill, cold_start, cost, cpu, machine, report, scale, synth
from bench.consumers import (
    CONSUMER_NAME,
    Consumer,
    load_baseline,
    load_latest_image,
    load_reference,
    load_seed,
)
from bench.faults import run_fault
from bench.local_aws import (
    REPLICA_TABLE,
    create_resources,
    endpoint_at,
    install_instrumentation,
    moto_transactions_patch,
)
from bench.projection import RunOptions, run
from bench.workload import order_workload, same_item_workload
from cdc_local.endpoint import patched_environ

HERE = Path(__file__).resolve().parent

#: Issue 7 item 2.
COST_CURVE_BATCH_SIZES = (1, 10, 100, 1_000)
SAME_ITEM_FRACTIONS = (0.1, 0.5, 1.0)
#: Records of the cost-curve workloads, and the batch size of the same-item rows (the
#: StreamConsumer default).
COST_CURVE_RECORDS = 1_000
SAME_ITEM_BATCH_SIZE = 100
#: Changes of the fault runs: enough for several batches of 100 around the faulty record.
FAULT_CHANGES = 500


def _log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _both(consumers: list[Consumer], fn: Any) -> dict[str, Any]:
    return {consumer.name: fn(consumer) for consumer in consumers}


def run_projection_benchmarks(quick: bool, endpoint_url: str | None) -> dict[str, Any]:
    """Items 1 and 2, and the fault runs, on one moto server (started here unless given)."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request
    main = order_workload(changes=50, orders=10, customers=5) if quick else order_workload()
    faulty = (
        main
        if quick
        else order_workload(changes=FAULT_CHANGES, orders=FAULT_CHANGES // 10, customers=25)
    )
    records = 50 if quick else COST_CURVE_RECORDS
    batch_sizes = (10,) if quick else COST_CURVE_BATCH_SIZES
    fractions = (1.0,) if quick else SAME_ITEM_FRACTIONS
    fault_kinds = ("transient",) if quick else ("transient", "crash")
    results: dict[str, Any] = {}
    with endpoint_at(endpoint_url) as endpoint, patched_environ(endpoint.environment()):
        resources = create_resources(endpoint)
        with patched_environ(resources.environment(CONSUMER_NAME)):
            install_instrumentation()
            results["moto_transactions_patch"] = moto_transactions_patch()
            consumers = [load_reference(), load_baseline()]
            # The seed design is measured for cost beside the two; the fault runs compare the
            # two designs of idempotency (marker in the transaction vs Powertools' records).
            costed = [*consumers, load_seed()]
            # Writes that need no marker: LatestImage's version-guarded puts, on the same
            # changes (its view is a replica of the orders table, checked against it).
            latest = load_latest_image(REPLICA_TABLE)
            _log(f"projection: {len(main.records)} changes on {main.orders} orders")
            results["workload"] = {
                "changes": len(main.records),
                "orders": main.orders,
                "customers": main.customers,
                "seed": main.seed,
                "event_names": main.counts,
            }
            results["projection"] = _both(
                [*costed, latest], lambda c: run(c, endpoint, main, RunOptions(batch_size=100))
            )
            _log(f"faults in the middle of a batch ({len(faulty.records)} changes): {fault_kinds}")
            results["faults"] = {
                kind: _both(consumers, lambda c, k=kind: run_fault(c, endpoint, faulty, k))
                for kind in fault_kinds
            }
            results["faults"]["workload"] = {
                "changes": len(faulty.records),
                "orders": faulty.orders,
                "customers": faulty.customers,
            }
            curve: dict[str, Any] = {"records": records, "batch_size": [], "same_item": []}
            distinct = same_item_workload(records, 0.0)
            for size in batch_sizes:
                _log(f"cost curve: batch size {size}")
                # Powertools and the seed design make the same requests per record whatever
                # the batch size (3 or 2 per record; one transaction per record): measured at
                # the default size only, which keeps the run short on a shared machine.
                chosen = (
                    [*costed, latest] if size == SAME_ITEM_BATCH_SIZE or quick else consumers[:1]
                )
                curve["batch_size"].append(
                    _both(chosen, lambda c, s=size: run(c, endpoint, distinct, RunOptions(s)))
                )
            for fraction in fractions:
                _log(f"cost curve: {fraction:.0%} of records on one view item")
                workload = same_item_workload(records, fraction)
                # Likewise whatever the share of records on one item: measured at 100%.
                row = _both(
                    costed if fraction == 1.0 else consumers[:1],
                    lambda c, w=workload: run(c, endpoint, w, RunOptions(SAME_ITEM_BATCH_SIZE)),
                )
                row["same_fraction"] = fraction
                curve["same_item"].append(row)
            results["cost_curve"] = curve
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small workload, no synth (smoke)")
    parser.add_argument("--out", type=Path, default=HERE, help="directory for the two reports")
    parser.add_argument(
        "--endpoint-url",
        help="use the moto server already running there (the test fixture's) instead of "
        "starting one; it is reset before every run",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()

    results: dict[str, Any] = {"machine": machine.describe(), "quick": args.quick}
    results.update(run_projection_benchmarks(args.quick, args.endpoint_url))
    if not args.quick:  # its own smoke test runs it quick (tests/bench)
        _log("scale: 1 to 64 shards at once")
        results["scale"] = scale.run(args.quick, args.endpoint_url)
        results["scale_before"] = scale.before()
    _log("backfill: segments and the naive approach")
    results["backfill"] = backfill.run(args.quick, args.endpoint_url)
    _log("CPU per record")
    results["cpu"] = cpu.measure(records=1_000 if args.quick else cpu.RECORDS)
    if not args.quick:
        _log("cold start")
        results["cold_start"] = cold_start.measure()
        _log("synth")
        results["synth"] = synth.measure()
    results["prices"] = cost.prices()
    results["summary"] = report.summary(results)
    results["targets"] = report.targets(results)
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["machine"]["load_average_at_end"] = machine.describe()["load_average"]

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    (args.out / "RESULTS.md").write_text(report.markdown(results))
    _log(f"wrote results.json and RESULTS.md in {args.out} ({results['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
