"""The Kinesis route's run behind ``make local STACK=CdcKinesisReferenceStack``: the orders
workload written to CdcKinesisReferenceStack's table on the local pipeline, whose changes reach
the Kinesis stream late, repeated and mixed with poison records, while the replica and
order-stats consumers crash, meet transient errors and get duplicate deliveries. At the end
every change is accounted for on each consumer, the replica is compared with the orders table
and the order-stats view with its recomputation.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from cdc_local.accounting import peek_messages, scan
from cdc_local.endpoint import LocalEndpoint
from cdc_local.event_source_mapping import EventSourceMapping
from cdc_local.exceptions import LocalPipelineError
from cdc_local.faults import FaultPlan, FeedFaults
from cdc_local.routes.kinesis import KinesisDelivery, KinesisSource
from cdc_local.runner import LocalPipeline
from reference_app.demo import summary_table
from reference_app.handlers.orders_schema import (
    ORDER_STATS_HANDLER,
    ORDERS_REPLICA_HANDLER,
    REPLICA_TABLE_ENV,
    VIEW_TABLE_ENV,
)
from reference_app.oracle import actual_view, expected_view
from reference_app.workload import OrderWorkload

#: The faults of the Kinesis run: the DynamoDB route's demo faults, plus what Kinesis does to
#: one item's changes (late, repeated) and records that are not DynamoDB changes at all.
KINESIS_FAULTS = FaultPlan(
    seed=1,
    crash_probability=0.01,
    transient_error_probability=0.01,
    lost_response_probability=0.01,
    duplicate_delivery_probability=0.05,
    feed=FeedFaults(reorder_probability=0.2, duplicate_probability=0.1, poison_probability=0.002),
)
#: Writes between two pipeline turns.
WRITES_PER_TURN = 250
#: BatchWriteItem takes at most 25 requests.
BATCH_WRITE_LIMIT = 25
DELETED = "cdc_deleted"
VERSION = "cdc_version"


@dataclass(frozen=True)
class KinesisDemoSummary:
    changes_written: int
    changes_streamed: int
    kinesis_records: int
    reordered: int
    out_of_order_per_item: int
    duplicated: int
    poison_records: int
    records_delivered: int
    quarantined: int
    on_failure_messages: int
    faults_injected: int
    crashes: int
    lost: int
    replica_equals_table: bool
    view_reconciled: bool
    seconds: float
    iam_enforced: bool = False
    """Whether each function ran under its own synthesized role with IAM enforced."""

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.replica_equals_table and self.view_reconciled


def write_in_batches(
    pipeline: LocalPipeline, table_name: str, workload: OrderWorkload, writes_per_turn: int
) -> None:
    """Write ``workload`` as :func:`reference_app.workload.write_while_running` does - each change
    one write, one stream record, in order per item - but 25 to a BatchWriteItem call (an update
    becomes a put of the whole updated item), so a run of thousands of changes makes hundreds of
    calls to the local endpoint, not thousands."""
    ddb = pipeline.client("dynamodb")
    items: dict[str, dict[str, Any]] = {}
    batch: dict[str, dict[str, Any]] = {}

    def flush() -> None:
        requests = list(batch.values())
        batch.clear()
        while requests:
            response = ddb.batch_write_item(RequestItems={table_name: requests})
            requests = response.get("UnprocessedItems", {}).get(table_name, [])

    for index, change in enumerate(workload.plan(), start=1):
        key = change.key["pk"]["S"]
        if key in batch or len(batch) == BATCH_WRITE_LIMIT:
            flush()
        if change.operation == "put":
            items[key] = dict(change.item)
        elif change.operation == "update":
            items[key] = {**items[key], **change.set}
        else:
            items.pop(key, None)
        batch[key] = (
            {"PutRequest": {"Item": items[key]}}
            if key in items
            else {"DeleteRequest": {"Key": change.key}}
        )
        if index % writes_per_turn == 0:
            flush()
            pipeline.poll()
    flush()


def deliveries(pipeline: LocalPipeline) -> list[KinesisDelivery]:
    """The tables' deliveries of their changes to Kinesis (the Kinesis route's feeds)."""
    return [feed for feed in pipeline.feeds if isinstance(feed, KinesisDelivery)]


def consumer_mapping(pipeline: LocalPipeline, handler: str) -> EventSourceMapping:
    found = [
        m
        for m in pipeline.mappings.values()
        if isinstance(m.source, KinesisSource) and m.function.spec.own_handler == handler
    ]
    if len(found) != 1:
        raise LocalPipelineError(f"expected one Kinesis mapping running {handler}, got {found}")
    return found[0]


def quarantined_changes(pipeline: LocalPipeline, mapping: EventSourceMapping) -> set[str]:
    """The eventIDs (or, for data that is no change, the Kinesis event ids) in the quarantine."""
    queue = mapping.function.environment["QUARANTINE_QUEUE_URL"]
    found = set()
    for message in peek_messages(pipeline.client("sqs"), queue):
        record = message["record"]
        try:
            found.add(json.loads(base64.b64decode(record["kinesis"]["data"]))["eventID"])
        except (ValueError, KeyError, TypeError):
            found.add(record["eventID"])
    return found


def lost_changes(pipeline: LocalPipeline, mapping: EventSourceMapping) -> set[str]:
    """Changes of the table the consumer neither acknowledged nor quarantined (its mapping has
    no filters, so every change is its)."""
    written = set().union(*(d.event_ids for d in deliveries(pipeline)))
    return written - mapping.acknowledged_changes - quarantined_changes(pipeline, mapping)


def replica_equals_table(pipeline: LocalPipeline, orders_table: str) -> bool:
    mapping = consumer_mapping(pipeline, ORDERS_REPLICA_HANDLER)
    ddb = pipeline.client("dynamodb")
    replica = {
        item["pk"]["S"]: {k: v for k, v in item.items() if k != VERSION}
        for item in scan(ddb, mapping.function.environment[REPLICA_TABLE_ENV])
        if DELETED not in item
    }
    table = {item["pk"]["S"]: item for item in scan(ddb, orders_table)}
    return replica == table


def view_reconciled(pipeline: LocalPipeline, orders_table: str) -> bool:
    mapping = consumer_mapping(pipeline, ORDER_STATS_HANDLER)
    ddb = pipeline.client("dynamodb")
    view = scan(ddb, mapping.function.environment[VIEW_TABLE_ENV])
    return expected_view(scan(ddb, orders_table)) == actual_view(view)


def run_kinesis_demo(
    assembly_dir: str | Path,
    stack_name: str,
    *,
    workload: OrderWorkload | None = None,
    faults: FaultPlan | None = KINESIS_FAULTS,
    console: Console | None = None,
    endpoint: LocalEndpoint | None = None,
    enforce_iam: bool = True,
) -> KinesisDemoSummary:
    """Run the Kinesis route under ``workload`` (default: 2,000 changes on 100 orders, 3 poison
    writes) and ``faults``, on ``endpoint`` (default: a local endpoint of its own), with IAM
    enforced unless ``enforce_iam`` is False; print and return the summary."""
    workload = workload or OrderWorkload(changes=2000, orders=100, poison=3)
    started = time.monotonic()
    with LocalPipeline(
        assembly_dir,
        stack_name,
        endpoint,
        faults=faults,
        track_records=True,
        enforce_iam=enforce_iam,
    ) as pipeline:
        if not deliveries(pipeline):
            raise LocalPipelineError(f"stack {stack_name} has no table streaming to Kinesis")
        orders_table = deliveries(pipeline)[0].table_name
        write_in_batches(pipeline, orders_table, workload, WRITES_PER_TURN)
        pipeline.run()
        mappings = [
            consumer_mapping(pipeline, h) for h in (ORDERS_REPLICA_HANDLER, ORDER_STATS_HANDLER)
        ]
        delivered = [d.counters for d in deliveries(pipeline)]
        injected = pipeline.faults.counters if pipeline.faults is not None else None
        summary = KinesisDemoSummary(
            changes_written=workload.changes,
            changes_streamed=sum(c.changes_read for c in delivered),
            kinesis_records=sum(c.records_put for c in delivered),
            reordered=sum(c.reordered for c in delivered),
            out_of_order_per_item=sum(c.out_of_order for c in delivered),
            duplicated=sum(c.duplicated for c in delivered),
            poison_records=sum(c.poison for c in delivered),
            records_delivered=pipeline.counters.records_delivered,
            quarantined=sum(len(quarantined_changes(pipeline, m)) for m in mappings),
            on_failure_messages=pipeline.counters.on_failure_messages,
            faults_injected=sum(asdict(injected).values()) if injected is not None else 0,
            crashes=injected.crashes if injected is not None else 0,
            lost=sum(len(lost_changes(pipeline, m)) for m in mappings),
            replica_equals_table=replica_equals_table(pipeline, orders_table),
            view_reconciled=view_reconciled(pipeline, orders_table),
            seconds=round(time.monotonic() - started, 1),
            iam_enforced=pipeline.iam_enforced,
        )
    print_summary(summary, console or Console())
    return summary


def print_summary(summary: KinesisDemoSummary, console: Console) -> None:
    rows = [(name.replace("_", " "), value) for name, value in asdict(summary).items()]
    console.print(summary_table("cdc-constructs local pipeline: CdcKinesisReferenceStack", rows))
    console.print(json.dumps({**asdict(summary), "ok": summary.ok}))


def as_dict(summary: KinesisDemoSummary) -> dict[str, Any]:
    return {**asdict(summary), "ok": summary.ok}
