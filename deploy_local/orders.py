"""Orders through the deployed order-stats consumer: write, wait for the view, check its
contribution records, quarantine a poison order.

The workload and the view's recomputation are the orders example's (``reference_app.workload``,
``reference_app.oracle``), as in the local pipeline: one oracle of the order-stats view serves
both, independent of the handler's code. Every wait is bounded; a wait that runs out is
reported, never raised past.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.sinks.contributions import Contributions

from cdc_local.accounting import peek_messages, read_stream, scan
from deploy_local.deployed_stack import OrderStatsWiring
from reference_app.oracle import actual_view, contribution, expected_view
from reference_app.workload import OrderWorkload, apply

POLL_SECONDS = 0.5

POISON_ORDER_PK = "ORDER#deploy-local-poison"
"""The poison order: its amount is a String, which the order-stats handler cannot read."""


SKIPPED_KINDS = frozenset({"expire"})
"""Changes not written here: MiniStack deletes expired items (every 60 s) without a stream
record, so the view could never drop an expired order (docs/deploy-local.md)."""


def write_orders(ddb: Any, wiring: OrderStatsWiring, changes: int, seed: int) -> int:
    """Write up to ``changes`` order changes (creates, status changes, amendments, deletes) to
    the orders table; return how many were written."""
    workload = OrderWorkload(
        changes=changes, orders=max(1, changes // 3), customers=4, poison=0, seed=seed
    )
    written = 0
    for change in workload.plan():
        if change.kind not in SKIPPED_KINDS:
            apply(ddb, wiring.source_table, change)
            written += 1
    return written


def view_reconciled(ddb: Any, wiring: OrderStatsWiring) -> bool:
    """Whether the view equals its recomputation from the orders table."""
    return expected_view(scan(ddb, wiring.source_table)) == actual_view(
        scan(ddb, wiring.view_table)
    )


def wait_until(condition: Callable[[], bool], timeout: float) -> tuple[bool, float]:
    """Poll ``condition`` until it holds or ``timeout`` seconds pass: (held, seconds waited)."""
    start = time.monotonic()
    while True:
        if condition():
            return True, time.monotonic() - start
        if time.monotonic() - start > timeout:
            return False, time.monotonic() - start
        time.sleep(POLL_SECONDS)


@dataclass
class MarkerReport:
    """The consumer's bookkeeping in the idempotency table against the orders it counts."""

    records: int = 0
    """Records of the orders stream."""
    counted: int = 0
    """Orders of the table the view counts."""
    markers: int = 0
    """The consumer's contribution records (one per order it has applied)."""
    missing: list[str] = field(default_factory=list)
    """Keys of orders the view counts with no contribution record."""

    @property
    def ok(self) -> bool:
        return not self.missing and self.markers >= self.counted


def check_markers(ddb: Any, streams: Any, wiring: OrderStatsWiring) -> MarkerReport:
    """Every order the view counts has its contribution record in the idempotency table: the
    reference's order-stats keeps each order's contribution, versioned
    (``cdc_consumer.Contributions``: the per-order state that makes a redelivered, reordered or
    backfilled change exact), instead of a processed-marker per record. Records that change
    nothing leave none."""
    names = Contributions(wiring.consumer_name, lambda image: [])
    prefix = names.item_id({}).removesuffix(json.dumps({}))
    ids = {
        item["id"]["S"]
        for item in scan(ddb, wiring.idempotency_table)
        if item["id"]["S"].startswith(prefix)
    }
    report = MarkerReport(markers=len(ids))
    report.records = sum(1 for _ in read_stream(ddb, streams, wiring.source_table))
    for order in scan(ddb, wiring.source_table):
        if contribution(order) is None:
            continue
        report.counted += 1
        key = {"pk": order["pk"]}
        if names.item_id(key) not in ids:
            report.missing.append(order["pk"]["S"])
    return report


def send_poison(ddb: Any, wiring: OrderStatsWiring) -> str:
    """Write the poison order; return its key (``pk``)."""
    ddb.put_item(
        TableName=wiring.source_table,
        Item={
            "pk": {"S": POISON_ORDER_PK},
            "customerId": {"S": "customer-poison"},
            "status": {"S": "pending"},
            "amount": {"S": "ten"},
        },
    )
    return POISON_ORDER_PK


def quarantined(sqs: Any, wiring: OrderStatsWiring, pk: str) -> bool:
    """Whether the quarantine queue holds the record of order ``pk`` (docs/interfaces.md §4);
    the messages stay in the queue."""
    return any(
        message.get("record", {}).get("dynamodb", {}).get("Keys", {}).get("pk", {}).get("S") == pk
        for message in peek_messages(sqs, wiring.quarantine_queue_url)
    )
