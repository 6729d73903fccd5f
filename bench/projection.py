"""Issue 7 items 1 and 2: the order-stats projection through both consumers on moto's server.

Each run starts from empty tables, delivers the same records the way Lambda's event source
mapping does (bench/esm.py), counts every DynamoDB request both consumers make, and checks the
view against a recomputation from the orders table's final state.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench import cost
from bench.consumers import CONSUMER_NAME, LATEST_IMAGE, Consumer
from bench.esm import DeliveryOptions, TumblingWindow, deliver
from bench.local_aws import (
    INSTRUMENTATION,
    LEDGER_TABLE,
    REPLICA_TABLE,
    Fault,
    admin_client,
    create_resources,
)
from bench.order_view import compare, compare_replica
from bench.workload import STREAM_ARN, WHOLE_STREAM, Workload, clone_records, serialize
from cdc_local.accounting import scan
from reference_app.oracle import actual_view, expected_view


def write_orders(endpoint: Any, table: str, orders: dict[str, dict[str, Any]]) -> None:
    """The orders table's final state (the view is checked against a recomputation from it)."""
    client = admin_client(endpoint, "dynamodb")
    items = [{"PutRequest": {"Item": serialize(order)}} for order in orders.values()]
    for start in range(0, len(items), 25):
        pending: dict[str, Any] = {table: items[start : start + 25]}
        while pending:
            pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


def _applied_event_ids(consumer: Consumer, workload: Workload) -> list[str]:
    """eventIDs whose effect was committed, in commit order (from the markers, or from the
    sequence numbers the ledger's entries list)."""
    if consumer.name == "powertools":
        return [event_id for _, event_id in consumer.module.applied]
    prefix = f"{CONSUMER_NAME}#"
    by_number = {int(r["dynamodb"]["SequenceNumber"]): r["eventID"] for r in workload.records}
    applied = []
    for marker in INSTRUMENTATION.committed_markers:
        if not marker.startswith(prefix):
            continue
        _, listed, number = marker.rpartition("#seq:")
        applied.append(by_number[int(number)] if listed else marker[len(prefix) :])
    return applied


def ordering_report(workload: Workload, applied: Sequence[str]) -> dict[str, int]:
    """How far the commit order strayed from stream order, per order (item).

    ``out_of_order``: effects committed after a newer change of the same order.
    ``stale_latest_image_orders``: orders whose last committed change is not their newest one;
    a view that stores the latest image (instead of ADDing differences) would be stale there.
    (A change applied twice shows in the view check, not here: a crash can interrupt the
    bookkeeping that would have recorded the first application.)
    """
    index = {r["eventID"]: i for i, r in enumerate(workload.records)}
    order_of = {r["eventID"]: r["dynamodb"]["Keys"]["pk"]["S"] for r in workload.records}
    newest_seen: dict[str, int] = {}
    last_applied: dict[str, int] = {}
    out_of_order = 0
    for event_id in applied:
        order, position = order_of[event_id], index[event_id]
        if position < newest_seen.get(order, -1):
            out_of_order += 1
        newest_seen[order] = max(position, newest_seen.get(order, -1))
        last_applied[order] = position
    stale = sum(1 for order, last in last_applied.items() if last != newest_seen[order])
    return {
        "out_of_order": out_of_order,
        "stale_latest_image_orders": stale,
        "applied": len(applied),
    }


@dataclass
class RunOptions:
    batch_size: int = 100
    faults: Sequence[Fault] = ()
    timeout_s: float = 300.0
    after_crash: Callable[[], None] | None = None


def run(
    consumer: Consumer, endpoint: Any, workload: Workload, options: RunOptions
) -> dict[str, Any]:
    """Deliver ``workload`` to ``consumer`` on fresh tables; measure and check the view."""
    resources = create_resources(endpoint)
    write_orders(endpoint, resources.orders_table, workload.final_orders)
    if consumer.name == "powertools":
        consumer.module.applied.clear()
    INSTRUMENTATION.reset()
    INSTRUMENTATION.faults.extend(options.faults)
    records = clone_records(workload.records)
    # A StreamConsumer's mapping has a tumbling window: its events name their shard.
    window = TumblingWindow(WHOLE_STREAM.shard_id, STREAM_ARN) if consumer.windowed else None
    # The consumers' log lines and EMF metrics (stdout in Lambda) are written, to /dev/null.
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        started = time.perf_counter()
        cpu_started = time.thread_time()  # this thread only: moto's server runs in others
        delivery = deliver(
            consumer.handler,
            records,
            options.batch_size,
            DeliveryOptions(options.timeout_s, options.after_crash, window),
        )
        wall = time.perf_counter() - started
        cpu_seconds = time.thread_time() - cpu_started
    requests = dict(sorted(INSTRUMENTATION.requests.items()))
    dynamodb_requests = INSTRUMENTATION.dynamodb_requests
    request_seconds = INSTRUMENTATION.request_seconds
    applied = _applied_event_ids(consumer, workload)
    faults_hit = sum(f.hits for f in INSTRUMENTATION.faults)
    meter = INSTRUMENTATION.cost.snapshot()
    INSTRUMENTATION.reset()
    if dynamodb_requests == 0:
        raise RuntimeError(
            f"{consumer.name} made no DynamoDB request that the benchmark saw: its clients do not "
            "come from boto3's default session, so the counts would be wrong"
        )
    admin = admin_client(endpoint, "dynamodb")
    if consumer.name == LATEST_IMAGE:
        view_items = scan(admin, REPLICA_TABLE)
        comparison = compare_replica(view_items, workload.final_orders)
    else:
        view_items = scan(admin, resources.view_table)
        comparison = compare(
            actual_view(view_items), expected_view(scan(admin, resources.orders_table))
        )
    written = [*view_items, *scan(admin, resources.idempotency_table), *scan(admin, LEDGER_TABLE)]
    n = len(workload.records)
    in_requests = min(request_seconds, wall)
    return {
        "consumer": consumer.name,
        "records": n,
        "batch_size": options.batch_size,
        "invocations": delivery.invocations,
        "records_delivered": delivery.records_delivered,
        "reported_failures": delivery.reported_failures,
        "crashes": delivery.crashes,
        "answers_without_window_state": window.answers_without_state if window else None,
        "faults_hit": faults_hit,
        "dynamodb_requests": dynamodb_requests,
        "dynamodb_requests_per_record": round(dynamodb_requests / n, 4),
        "requests": requests,
        "wall_seconds": round(wall, 4),
        "wall_ms_per_record": round(wall * 1000 / n, 4),
        "in_requests_ms_per_record": round(in_requests * 1000 / n, 4),
        "outside_requests_ms_per_record": round((wall - in_requests) * 1000 / n, 4),
        "cpu_seconds": round(cpu_seconds, 4),
        "cost": cost.summarise(
            meter,
            records=n,
            invocations=delivery.invocations,
            cpu_seconds=cpu_seconds,
            largest_item_stored=max((cost.item_size(item) for item in written), default=0),
        ),
        "view": comparison.as_dict(),
        "ordering": ordering_report(workload, applied),
    }


def ratio(a: float, b: float) -> float | None:
    """a / b rounded, or None when b is 0."""
    return round(a / b, 2) if b else None
