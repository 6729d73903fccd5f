"""Issue 38: 1 to 64 shards writing at once, against DynamoDB's concurrency as modelled here.

For each workload and shard count, one thread per shard feeds its own shard's records, in
100-record batches and in order, to its own consumer runtime (a ``StreamProcessor`` with the
reference order-stats projection, as one Lambda instance per shard runs it), each event a
tumbling-window event naming the shard (``shardId``, ``window``, ``state``; a final invocation
closes the window: bench/esm.py), as Lambda sends them when the mapping has a window. A failed
batch is delivered again from its first failed record, as the mapping does, up to 10 times in a
row (then the shard stops and the row says so).

Against moto's server, with what moto cannot show modelled (module docstrings):

- every request costs its modelled round trip, and each shard's time is modelled time: round
  trips, the runtime's waits and the shard's own CPU time, never the emulator's CPU or a wait
  for the GIL (bench/modelled_time.py);
- DynamoDB's ``TransactionConflict`` for overlapping in-flight transactions on one item
  (bench/conflicts.py), counted per shard with the commits, cancellations and meetings
  (bench/shard_requests.py); the runtime's own logs and metrics are read per shard
  (bench/shard_logs.py).

Workloads (bench/workload.py, each shard with its own orders and customers): distinct keys
(every record on its own view item), a hot aggregate (every record of a shard on that shard's
one customer), the reference workload (order changes, 10 per order, 2 orders per customer); and,
without a target, the hot aggregate with one customer for every shard, which several shards
update at once whatever the bookkeeping. The view is checked against the recomputation from the
orders table (reference_app.oracle), write units come from the same cost meter as the rest of
the benchmark, cancelled transactions included.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from cdc_consumer import StreamProcessor, defaults

from bench import machine, report
from bench.conflicts import InFlight, KeySchemas
from bench.consumers import CONSUMER_NAME, load_reference
from bench.esm import Delivery, DeliveryOptions, GaveUp, TumblingWindow, deliver
from bench.local_aws import (
    INSTRUMENTATION,
    LEDGER_TABLE,
    admin_client,
    create_resources,
    endpoint_at,
    install_instrumentation,
)
from bench.modelled_time import Scheduler, ShardClock
from bench.order_view import compare
from bench.scale_plan import (
    BATCH_SIZE,
    DISTINCT,
    HOT,
    MAX_ATTEMPTS,
    QUICK_SHARD_COUNTS,
    REFERENCE,
    SHARD_COUNTS,
    SHARED_HOT,
    SHARED_HOT_SHARD_COUNTS,
    WORKLOADS,
    batches_per_shard,
)
from bench.shard_logs import LoggedCounts, ShardLogs
from bench.shard_requests import Row, ShardRequests
from bench.workload import (
    STREAM_ARN,
    Shard,
    Workload,
    order_workload,
    same_item_workload,
    serialize,
)
from cdc_local.accounting import scan
from cdc_local.endpoint import LocalEndpoint, patched_environ
from reference_app.oracle import actual_view, expected_view

HERE = Path(__file__).resolve().parent
#: This section's rows from its run on the runtime before lanes per shard (a lane per stream;
#: ``python -m bench.scale``, its ``scale`` kept whole), shown beside the targets.
BEFORE = HERE / "scale_lane_per_stream.json"


def _log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def shard_workload(kind: str, shard: Shard, records: int) -> Workload:
    """``records`` records of ``shard`` for the workload ``kind``."""
    if kind == DISTINCT:
        return same_item_workload(records, 0.0, shard=shard)
    if kind == HOT:
        return same_item_workload(records, 1.0, shard=shard)
    if kind == SHARED_HOT:
        return same_item_workload(records, 1.0, shard=shard, hot_customer="customer-hot")
    if kind == REFERENCE:
        # The first batches of the shard's own reference workload (2,000 changes on 200 orders
        # of 100 customers), so each batch has the shape of the reference workload's batches.
        return order_workload(shard=shard).first(records)
    raise ValueError(f"workload {kind!r} is not one of {(*WORKLOADS, SHARED_HOT)}")


@dataclass
class ShardConsumer:
    """One shard's clients (with the section's handlers on them), made once for every row."""

    requests: ShardRequests
    dynamodb: Any
    sqs: Any


def make_consumers(count: int) -> list[ShardConsumer]:
    """``count`` shards' clients, made in this thread (boto3's session is not thread-safe)."""
    consumers = []
    for shard in range(count):
        requests = ShardRequests(shard, LEDGER_TABLE)
        dynamodb = boto3.client("dynamodb", config=defaults.CLIENT_CONFIG)
        sqs = boto3.client("sqs", config=defaults.CLIENT_CONFIG)
        requests.install(dynamodb)
        requests.install(sqs)
        consumers.append(ShardConsumer(requests, dynamodb, sqs))
    return consumers


@dataclass
class ShardRun:
    """One shard in one row: its records, clock, what it met and what it logged."""

    consumer: ShardConsumer
    workload: Workload
    row: Row
    logged: LoggedCounts = field(default_factory=LoggedCounts)
    delivery: Delivery = field(default_factory=Delivery)
    window: TumblingWindow | None = None
    #: Records checkpointed when the shard stopped (the first not checkpointed).
    checkpointed: int = 0
    gave_up: bool = False
    error: str | None = None
    contention_failures: int = 0
    other_failures: int = 0

    @property
    def records_done(self) -> int:
        """Records checkpointed: all of them, unless the shard stopped."""
        return self.checkpointed if self.gave_up else len(self.workload.records)

    def invoke(self, processor: StreamProcessor) -> Callable[[dict[str, Any], Any], Any]:
        """The handler: ``processor``'s, with each failed batch told as failed by contention
        (a transaction of this invocation was cancelled or a write refused) or otherwise."""

        def handler(event: dict[str, Any], context: Any) -> Any:
            before = self.row.counts.contention
            response = processor.handle(event, context)
            if response.get("batchItemFailures"):
                if self.row.counts.contention > before:
                    self.contention_failures += 1
                else:
                    self.other_failures += 1
            return response

        return handler


def _run_shard(run: ShardRun, projection: Any, logs: ShardLogs) -> None:
    """A shard's thread: deliver its records to its own processor, in modelled time."""
    clock = run.row.clock
    run.consumer.requests.thread = threading.get_ident()
    logs.register(run.logged)
    clock.start()
    try:
        processor = StreamProcessor(
            dynamodb_client=run.consumer.dynamodb,
            sqs_client=run.consumer.sqs,
            clock=clock.time,
            sleep=clock.sleep,
        )
        processor.projection(reads=["NewImage", "OldImage"])(projection)
        shard_id = Shard(clock.shard).shard_id
        run.window = TumblingWindow(shard_id, STREAM_ARN)
        options = DeliveryOptions(window=run.window, clock=clock.now, max_attempts=MAX_ATTEMPTS)
        run.delivery = deliver(run.invoke(processor), run.workload.records, BATCH_SIZE, options)
    except GaveUp as gave_up:
        run.gave_up, run.delivery = True, gave_up.delivery
        run.checkpointed = gave_up.position
    except Exception as error:  # reported in the row, so one shard's fault does not hide others
        run.error = f"{type(error).__name__}: {error}"[:500]
    finally:
        clock.finish()


def run_row(
    endpoint: LocalEndpoint, consumers: list[ShardConsumer], kind: str, shards: int, batches: int
) -> dict[str, Any]:
    """One row: ``shards`` shards of ``kind`` at once, ``batches`` batches each."""
    resources = create_resources(endpoint)
    admin = admin_client(endpoint, "dynamodb")
    workloads = [
        shard_workload(kind, Shard(i, shards), batches * BATCH_SIZE) for i in range(shards)
    ]
    schemas, in_flight, scheduler = KeySchemas.of(admin), InFlight(), Scheduler()
    epoch = time.time()
    runs = []
    for index, workload in enumerate(workloads):
        row = Row(ShardClock(index, scheduler, epoch), in_flight, schemas)
        consumers[index].requests.row = row
        runs.append(ShardRun(consumers[index], workload, row))
    INSTRUMENTATION.reset()
    projection = load_reference().module.order_stats
    logs = ShardLogs()
    started = time.perf_counter()
    # No cyclic garbage collection while the shards run: it would charge one shard's CPU for
    # all shards' garbage (64 consumers share this process; a Lambda instance has one).
    gc.disable()
    try:
        with contextlib.redirect_stdout(logs):
            threads = [
                threading.Thread(target=_run_shard, args=(r, projection, logs)) for r in runs
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        gc.enable()
    real_seconds = time.perf_counter() - started
    for consumer in consumers[:shards]:
        consumer.requests.row = None
    # The orders as the records checkpointed leave them (a stopped shard's first records).
    checkpointed = [r.workload.first(r.checkpointed) if r.gave_up else r.workload for r in runs]
    orders = [serialize(order) for w in checkpointed for order in w.final_orders.values()]
    comparison = compare(actual_view(scan(admin, resources.view_table)), expected_view(orders))
    return summarise_row(kind, batches, runs, comparison.as_dict(), real_seconds)


def _per(numerator: float, denominator: float, digits: int = 3) -> float | None:
    return round(numerator / denominator, digits) if denominator else None


def summarise_row(
    kind: str, batches: int, runs: list[ShardRun], view: dict[str, Any], real_seconds: float
) -> dict[str, Any]:
    """The row's figures (see docs/benchmarks.md, the scale section)."""
    records = sum(len(run.workload.records) for run in runs)
    done = sum(run.records_done for run in runs)
    rates = [r.records_done / r.row.clock.seconds for r in runs if r.row.clock.seconds]
    counts = [run.row.counts for run in runs]
    commits = sum(c.commits for c in counts)
    meter = INSTRUMENTATION.cost.snapshot()
    metrics: Counter[str] = Counter()
    for run in runs:
        metrics.update(run.logged.metrics)
    return {
        "workload": kind,
        "shards": len(runs),
        "batches_per_shard": batches,
        "records": records,
        "records_per_s_per_shard": round(sum(rates) / len(rates), 1) if rates else None,
        "slowest_shard_records_per_s": round(min(rates), 1) if rates else None,
        "records_per_s_all_shards": _per(done, max(r.row.clock.seconds for r in runs), 1),
        # Per shard: records checkpointed and modelled seconds.
        "shard_records": [run.records_done for run in runs],
        "shard_seconds": [round(run.row.clock.seconds, 4) for run in runs],
        "commits": commits,
        "cancelled": sum(c.cancelled for c in counts),
        "conflicts": sum(c.conflicts for c in counts),
        "meetings": sum(c.meetings for c in counts),
        "refused_single_writes": sum(c.refused_single_writes for c in counts),
        "cancelled_per_commit": _per(sum(c.cancelled for c in counts), commits),
        "meetings_per_commit": _per(sum(c.meetings for c in counts), commits),
        "wru_per_record": _per(meter.wru, records, 4),
        "rru_per_record": _per(meter.rru, records, 4),
        "requests": dict(sum((c.requests for c in counts), Counter())),
        "invocations": sum(run.delivery.invocations for run in runs),
        "batches_failed_by_contention": sum(run.contention_failures for run in runs),
        "batches_failed_otherwise": sum(run.other_failures for run in runs),
        "shards_stopped": sum(run.gave_up for run in runs),
        "records_not_checkpointed": records - done,
        "shard_errors": [run.error for run in runs if run.error][:3],
        "answers_without_window_state": sum(
            run.window.answers_without_state for run in runs if run.window
        ),
        "modelled_ms_per_batch": _time_split(runs),
        "logged_failures": sum(run.logged.failures for run in runs),
        "failure_examples": sorted({m for r in runs for m in r.logged.failure_examples})[:3],
        "metrics": dict(sorted(metrics.items())),
        "view": view,
        "real_seconds": round(real_seconds, 1),
    }


def _time_split(runs: list[ShardRun]) -> dict[str, float]:
    """Where the shards' modelled time went, per batch checkpointed (failed attempts included)."""
    n = max(1.0, sum(run.records_done for run in runs) / BATCH_SIZE)
    return {
        "requests": round(sum(r.row.clock.request_seconds for r in runs) * 1000 / n, 2),
        "waits": round(sum(r.row.clock.waited_seconds for r in runs) * 1000 / n, 2),
        "cpu": round(sum(r.row.clock.cpu_seconds for r in runs) * 1000 / n, 2),
    }


def measure(endpoint: LocalEndpoint, quick: bool) -> dict[str, Any]:
    """Every row of the section on ``endpoint``."""
    counts = QUICK_SHARD_COUNTS if quick else SHARD_COUNTS
    plan = [(kind, shards) for kind in WORKLOADS for shards in counts]
    if not quick:
        plan += [(SHARED_HOT, shards) for shards in SHARED_HOT_SHARD_COUNTS]
    consumers = make_consumers(max(counts))
    # The runtime imports its batch machinery at its first batch: paid here, not by a row.
    run_row(endpoint, consumers, DISTINCT, 1, 1)
    rows = []
    for kind, shards in plan:
        batches = batches_per_shard(kind, shards, quick)
        _log(f"scale: {kind}, {shards} shard(s) x {batches} batches")
        rows.append(run_row(endpoint, consumers, kind, shards, batches))
    described = machine.describe()
    return {
        "batch_size": BATCH_SIZE,
        "max_attempts": MAX_ATTEMPTS,
        "rows": rows,
        "runtime_commit": described["runtime_commit"],
        "commit": described["git_commit"],
        "date": described["date"],
        "load_average": described["load_average"],
    }


def before() -> dict[str, Any] | None:
    """The section's run on a lane per stream (:data:`BEFORE`), when kept."""
    return json.loads(BEFORE.read_text()) if BEFORE.exists() else None


def run(quick: bool, endpoint_url: str | None) -> dict[str, Any]:
    """:func:`measure` on a moto server (started here unless ``endpoint_url``)."""
    started = time.perf_counter()
    with endpoint_at(endpoint_url) as endpoint, patched_environ(endpoint.environment()):
        resources = create_resources(endpoint)
        with patched_environ(resources.environment(CONSUMER_NAME)):
            install_instrumentation()
            data = measure(endpoint, quick)
    data["seconds"] = round(time.perf_counter() - started, 1)
    return data


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.scale``: only this section; its figures replace the scale part of
    bench/results.json, and bench/RESULTS.md is written again from it."""
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1 and 2 shards, 2 batches (smoke)")
    parser.add_argument("--out", type=Path, default=HERE, help="directory of the reports")
    parser.add_argument("--endpoint-url", help="a moto server already running there")
    args = parser.parse_args(argv)
    path = args.out / "results.json"
    results = json.loads(path.read_text()) if path.exists() else {"quick": args.quick}
    results["scale"] = run(args.quick, args.endpoint_url)
    results["scale_before"] = before()
    if "targets" in results:  # a make bench run's: the targets checked again
        results["targets"] = report.targets(results)
    args.out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    whole = "projection" in results  # a make bench run's results: the whole report again
    text = report.markdown(results) if whole else "\n".join(report.scale(results)) + "\n"
    (args.out / "RESULTS.md").write_text(text)
    _log(f"wrote the scale figures to {path} and RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
