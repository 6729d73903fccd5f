"""Issue 25: the backfill's segment code against moto's server, and the naive approach beside it.

For each segment count (1, 2, 4, 8) the same orders table is written afresh and backfilled into
an empty order-stats view:

* **backfill**: the runtime's segment function (``cdc_consumer.backfill.handler.Backfill``, the
  code ViewBackfill deploys), one thread per segment as a Distributed Map with that
  MaxConcurrency runs it, each segment invoked again until it returns done, each page handed to
  the order-stats consumer (``StreamProcessor`` with the reference's per-order contributions,
  ``order_stats.backfillable_order_stats``, as the reference stack's member runs it) in process
  as snapshot changes; unpaced (no ``items_per_second``), to measure what a segment can do.
* **naive**: each thread scans its segment (ConsistentRead, pages of 100) and adds each order's
  contribution to the view with one UpdateItem ``ADD``: no markers, no versions, no progress.

Both views are checked against the recomputation from the table; then each is run a second
time over its own view (a rerun after a crash, or a backfill over a view the stream already
keeps): the backfill's view must stay exact (a no-op), the naive one counts every order twice.

Request units come from the same botocore hook as the rest of the benchmark (bench/cost.py:
items sized with DynamoDB's rules), CPU from each worker thread's own clock (moto's server
threads excluded), dollars from the same prices, with the segment function billed for as long
as the consumer it waits on (it invokes synchronously), and Step Functions' state transitions
priced on top. moto is not DynamoDB: items per second here compare the two approaches and the
segment counts on this machine, not what AWS would serve.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdc_consumer.backfill.defaults import PAGE_SIZE as BACKFILL_PAGE_SIZE

from bench import cost, machine, report
from bench.consumers import CONSUMER_NAME, HANDLERS, LAMBDA_SRC, _import
from bench.local_aws import (
    INSTRUMENTATION,
    admin_client,
    create_resources,
    endpoint_at,
    install_instrumentation,
)
from bench.workload import serialize
from cdc_local.accounting import scan
from cdc_local.endpoint import LocalEndpoint, patched_environ
from reference_app.oracle import actual_view, contribution, expected_view

HERE = Path(__file__).resolve().parent
SEGMENT_COUNTS = (1, 2, 4, 8)
ITEMS = 2_000
CUSTOMERS = 200
PAGE_SIZE = BACKFILL_PAGE_SIZE
"""The runtime's default page (what ViewBackfill deploys), for both approaches."""
STATUSES = ("pending", "paid", "shipped", "cancelled")

USD_PER_THOUSAND_STATE_TRANSITIONS = 0.025
"""Step Functions standard workflows, us-east-1 (AWS's public price page, checked with the
other prices: bench/cost.py PRICE_DATE)."""

TRANSITIONS_PER_SEGMENT_TURN = 3
"""A child execution's states per invocation of its segment: ScanSegment, SegmentDone and the
final SegmentScanned (each state entered is a transition); the parent adds a handful."""


def orders(count: int, customers: int) -> list[dict[str, Any]]:
    """``count`` orders (DynamoDB JSON) spread over ``customers``, every status and amount."""
    return [
        serialize(
            {
                "pk": f"ORDER#{index:06d}",
                "customerId": f"customer-{index % customers:04d}",
                "status": STATUSES[index % len(STATUSES)],
                "amount": 10 + index % 90,
            }
        )
        for index in range(count)
    ]


def _fill(endpoint: LocalEndpoint, table: str, items: list[dict[str, Any]]) -> None:
    client = admin_client(endpoint, "dynamodb")
    for start in range(0, len(items), 25):
        pending: dict[str, Any] = {
            table: [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        }
        while pending:
            pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


@dataclass
class Approach:
    """One way to fill the view from the table: ``segment(index, total)`` scans one segment and
    returns (items handed over, segment invocations: turns of the resume loop); ``calls()``
    counts the consumer invocations so far (the naive approach has no consumer)."""

    name: str
    segment: Callable[[int, int], tuple[int, int]]
    calls: Callable[[], int] = lambda: 0
    functions: int = 1
    """Lambda functions billed for the work: the segment function waits on the consumer."""
    state_machine: bool = False


def _backfill_approach(resources: Any, backfill_id: str) -> Approach:
    """The runtime's segment code with the order-stats consumer in process."""
    import boto3
    from cdc_consumer import StreamProcessor
    from cdc_consumer.backfill.handler import Backfill
    from cdc_consumer.backfill.settings import BackfillSettings
    from cdc_consumer.backfill.shapes import SegmentResult, SegmentTask
    from cdc_consumer.redrive.invokers import CallableInvoker

    order_stats = _import("order_stats", HANDLERS, LAMBDA_SRC)
    consumer = StreamProcessor(CONSUMER_NAME)
    consumer.projection(order_stats.backfillable_order_stats, reads=["NewImage"])
    settings = BackfillSettings(
        table=resources.orders_table,
        stream_arn="arn:aws:dynamodb:us-east-1:000000000000:table/orders/stream/bench",
        consumer_function="order-stats",
        consumer=CONSUMER_NAME,
        idempotency_table=resources.idempotency_table,
        page_size=PAGE_SIZE,
    )
    horizon = int(time.time())
    invocations = {"count": 0}
    lock = threading.Lock()

    def counted(event: dict[str, Any], context: Any) -> Any:
        with lock:
            invocations["count"] += 1
        return consumer.handle(event, context)

    def segment(index: int, total: int) -> tuple[int, int]:
        runner = Backfill(settings, boto3.client("dynamodb"), None, CallableInvoker(counted))
        task: dict[str, Any] = SegmentTask(backfill_id, index, total, horizon).to_dict()
        turns = 0
        while True:
            turns += 1
            result = SegmentResult.from_dict(runner.handle(task))
            if result.done:  # items: the segment's total over all its invocations
                return result.items, turns
            task = result.to_dict()

    return Approach(
        "backfill", segment, lambda: invocations["count"], functions=2, state_machine=True
    )


def _naive_approach(resources: Any) -> Approach:
    """Scan and add each order's contribution: no reconciliation at all."""
    import boto3

    def segment(index: int, total: int) -> tuple[int, int]:
        client = boto3.client("dynamodb")
        items = pages = 0
        start: dict[str, Any] | None = None
        while True:
            params: dict[str, Any] = {
                "TableName": resources.orders_table,
                "Segment": index,
                "TotalSegments": total,
                "ConsistentRead": True,
                "Limit": PAGE_SIZE,
            }
            if start:
                params["ExclusiveStartKey"] = start
            page = client.scan(**params)
            pages += 1
            for item in page.get("Items", []):
                items += 1
                found = contribution(item)
                if found is not None:
                    _add(client, resources.view_table, *found)
            start = page.get("LastEvaluatedKey")
            if not start:
                return items, 1

    return Approach("naive", segment)


def _add(client: Any, table: str, customer: str, values: dict[str, Any]) -> None:
    names = {f"#a{i}": name for i, name in enumerate(values)}
    client.update_item(
        TableName=table,
        Key={"pk": {"S": f"CUSTOMER#{customer}"}},
        UpdateExpression="ADD " + ", ".join(f"#a{i} :v{i}" for i in range(len(values))),
        ExpressionAttributeNames=names,
        ExpressionAttributeValues={f":v{i}": {"N": str(v)} for i, v in enumerate(values.values())},
    )


def _run(approach: Approach, segments: int) -> dict[str, Any]:
    """All segments at once, one thread each; wall time, CPU of the workers, units."""
    INSTRUMENTATION.reset()
    cpu = [0.0] * segments

    def worker(index: int) -> tuple[int, int]:
        started = time.thread_time()
        try:
            return approach.segment(index, segments)
        finally:
            cpu[index] = time.thread_time() - started

    started = time.perf_counter()
    calls_before = approach.calls()
    # The consumer logs a JSON line and an EMF line per batch to stdout, as in Lambda.
    with (
        open(os.devnull, "w") as quiet,
        contextlib.redirect_stdout(quiet),
        ThreadPoolExecutor(max_workers=segments) as pool,
    ):
        outcomes = list(pool.map(worker, range(segments)))
    wall = time.perf_counter() - started
    return {
        "items": sum(o[0] for o in outcomes),
        "turns": sum(o[1] for o in outcomes),
        "consumer_invocations": approach.calls() - calls_before,
        "seconds": round(wall, 3),
        "cpu_seconds": round(sum(cpu), 3),
        "meter": INSTRUMENTATION.cost.snapshot(),
    }


def _costs(run: dict[str, Any], approach: Approach) -> dict[str, Any]:
    """Units and dollars per item."""
    items = max(run["items"], 1)
    summary = cost.summarise(
        run["meter"],
        records=items,
        invocations=run["turns"] + run["consumer_invocations"],
        cpu_seconds=run["cpu_seconds"],
        largest_item_stored=0,
    )
    by_part = dict(summary["usd_per_million_changes_by_part"])
    by_part["lambda_duration"] = round(by_part["lambda_duration"] * approach.functions, 4)
    transitions = run["turns"] * TRANSITIONS_PER_SEGMENT_TURN if approach.state_machine else 0
    by_part["step_functions"] = round(
        transitions * USD_PER_THOUSAND_STATE_TRANSITIONS / 1e3 * 1e6 / items, 4
    )
    return {
        "rru_per_item": summary["rru_per_record"],
        "wru_per_item": summary["wru_per_record"],
        "dynamodb_requests_per_item": round(
            sum(n for k, n in run["meter"].requests.items() if k.startswith("dynamodb.")) / items,
            4,
        ),
        "usd_per_million_items_by_part": by_part,
        "usd_per_million_items": round(sum(by_part.values()), 4),
    }


def _view_exact(endpoint: LocalEndpoint, resources: Any) -> bool:
    ddb = admin_client(endpoint, "dynamodb")
    return expected_view(scan(ddb, resources.orders_table)) == actual_view(
        scan(ddb, resources.view_table)
    )


def _measure_one(endpoint: LocalEndpoint, name: str, segments: int, items: int) -> dict[str, Any]:
    resources = create_resources(endpoint)
    _fill(endpoint, resources.orders_table, orders(items, CUSTOMERS))
    if name == "backfill":
        approach = _backfill_approach(resources, f"bench-{segments}")
    else:
        approach = _naive_approach(resources)
    first = _run(approach, segments)
    first_exact = _view_exact(endpoint, resources)
    again = _run(approach, segments)
    row = {
        "segments": segments,
        "items": first["items"],
        "seconds": first["seconds"],
        "items_per_second": round(first["items"] / first["seconds"], 1),
        "items_per_second_per_segment": round(first["items"] / first["seconds"] / segments, 1),
        "cpu_us_per_item": round(first["cpu_seconds"] * 1e6 / max(first["items"], 1), 1),
        "view_exact": first_exact,
        "consumer_invocations": first["consumer_invocations"],
        "rerun_view_exact": _view_exact(endpoint, resources),
        "rerun_consumer_invocations": again["consumer_invocations"],
        "rerun_wru": round(again["meter"].wru, 1),
        "rerun_rru": round(again["meter"].rru, 1),
    }
    row.update(_costs(first, approach))
    return row


def measure(endpoint: LocalEndpoint, quick: bool = False) -> dict[str, Any]:
    """Both approaches at every segment count; ``quick``: a small table, 1 and 2 segments."""
    items = 200 if quick else ITEMS
    counts = (1, 2) if quick else SEGMENT_COUNTS
    results: dict[str, Any] = {
        "items": items,
        "customers": CUSTOMERS,
        "page_size": PAGE_SIZE,
        "segment_counts": list(counts),
        "cores": machine.describe().get("cpus"),
    }
    names = create_resources(endpoint)
    with patched_environ(names.environment(CONSUMER_NAME)):
        for name in ("backfill", "naive"):
            rows = []
            for segments in counts:
                _log(f"backfill bench: {name}, {segments} segment(s), {items} items")
                rows.append(_measure_one(endpoint, name, segments, items))
            results[name] = rows
    return results


def _log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(quick: bool, endpoint_url: str | None) -> dict[str, Any]:
    """:func:`measure` on a moto server (started here unless ``endpoint_url``)."""
    with endpoint_at(endpoint_url) as endpoint, patched_environ(endpoint.environment()):
        install_instrumentation()
        return measure(endpoint, quick)


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.backfill``: only this benchmark; its figures replace the backfill part
    of bench/results.json, and bench/RESULTS.md is written again from it."""
    parser = argparse.ArgumentParser(prog="python -m bench.backfill", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small table (smoke)")
    parser.add_argument("--out", type=Path, default=HERE, help="directory of the reports")
    parser.add_argument("--endpoint-url", help="a moto server already running there")
    args = parser.parse_args(argv)
    path = args.out / "results.json"
    results = json.loads(path.read_text()) if path.exists() else {"quick": args.quick}
    results["backfill"] = run(args.quick, args.endpoint_url)
    if "targets" in results:  # a make bench run's: the backfill's target checked again
        results["targets"] = report.targets(results)
    args.out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    whole = "projection" in results  # a make bench run's results: the whole report again
    text = report.markdown(results) if whole else "\n".join(report.backfill(results)) + "\n"
    (args.out / "RESULTS.md").write_text(text)
    _log(f"wrote the backfill figures to {path} and RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
