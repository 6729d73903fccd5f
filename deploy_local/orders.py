"""Orders through the deployed order-stats consumer: write, wait for the view, check markers,
quarantine a poison order.

The workload and the view's recomputation are the orders example's (``reference_app.workload``,
``reference_app.oracle``), as in the local pipeline: one oracle of the order-stats view serves
both, independent of the handler's code. Every wait is bounded; a wait that runs out is
reported, never raised past.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cdc_local.accounting import peek_messages, processed_markers, read_stream, scan
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
    """The consumer's processed-markers against the orders stream's records."""

    records: int = 0
    with_effect: int = 0
    markers: int = 0
    missing: list[str] = field(default_factory=list)
    """eventIDs of records with an effect on the view but no marker."""
    strays: list[str] = field(default_factory=list)
    """markers naming no record of the stream."""

    @property
    def ok(self) -> bool:
        return not self.missing and not self.strays and self.markers == self.with_effect


def check_markers(ddb: Any, streams: Any, wiring: OrderStatsWiring) -> MarkerReport:
    """Every stream record that changes the view has its marker ``{consumer}#{eventID}``
    (docs/interfaces.md §7), and every marker names a record of the stream. A record without
    an effect on the view (e.g. an amended pending order) gets no marker: the runtime writes
    none when a projection returns no actions."""
    markers = processed_markers(ddb, wiring.idempotency_table, wiring.consumer_name)
    report = MarkerReport(markers=len(markers))
    event_ids = set()
    for record in read_stream(ddb, streams, wiring.source_table):
        report.records += 1
        event_ids.add(record["eventID"])
        images = record["dynamodb"]
        if contribution(images.get("NewImage", {})) != contribution(images.get("OldImage", {})):
            report.with_effect += 1
            if record["eventID"] not in markers:
                report.missing.append(record["eventID"])
    report.strays = sorted(markers - event_ids)
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
