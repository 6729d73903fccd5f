"""End to end through the reference stack (CdcReferenceStack and its order-stats consumer).

The stack is reference_app/stack.py, its handler reference_app/handlers/order_stats.py (with
the cdc_consumer runtime as its layer).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cdc_local.accounting import account, redrive_on_failure
from cdc_local.endpoint import LocalEndpoint
from cdc_local.faults import FaultPlan
from cdc_local.runner import LocalPipeline
from reference_app.handlers.orders_schema import ORDER_STATS_CONSUMER
from reference_app.oracle import order_stats_wiring, view_reconciled
from reference_app.workload import OrderWorkload, apply, write_while_running

pytestmark = pytest.mark.xdist_group("cdc_local")  # with the other users of the assembly

ON_FAILURE_KEYS = {
    "requestContext",
    "responseContext",
    "version",
    "timestamp",
    "DDBStreamBatchInfo",
}
BATCH_INFO_KEYS = {
    "shardId",
    "startSequenceNumber",
    "endSequenceNumber",
    "approximateArrivalOfFirstRecord",
    "approximateArrivalOfLastRecord",
    "batchSize",
    "streamArn",
}


class MergedGroups:
    """Watches the consumers' TransactWriteItems (botocore hooks on each function's own boto3
    session, which its clients are made from: LocalPipeline.session_hooks): requests carrying
    fewer Updates than markers hold merged hot aggregates (an order-stats record writes one
    Update of its customer and one Put of an idempotency-table item, its contribution, so fewer
    Updates than such Puts means records' updates were merged), and such requests that DynamoDB
    cancelled for a failed condition had a duplicate or a contended contribution inside a merged
    group."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def _params(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        items = params.get("TransactItems", [])
        markers = sum(1 for i in items if set(i.get("Put", {}).get("Item", {})) >= {"id"})
        updates = sum(1 for i in items if "Update" in i)
        context["merged_groups_merged"] = 0 < updates < markers

    def _after(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if not context.get("merged_groups_merged"):
            return
        reasons = parsed.get("CancellationReasons") or []
        if any(r.get("Code") == "ConditionalCheckFailed" for r in reasons):
            self.counts["cancelled for a duplicate"] += 1
        elif "Error" not in parsed:
            self.counts["committed"] += 1

    def install(self, session: Any) -> None:
        session.events.register("before-parameter-build.dynamodb.TransactWriteItems", self._params)
        session.events.register("after-call.dynamodb.TransactWriteItems", self._after)


def run_workload(pipeline: LocalPipeline, workload: OrderWorkload, writes_per_turn: int) -> None:
    write_while_running(
        pipeline, order_stats_wiring(pipeline).source_table, workload, writes_per_turn
    )
    pipeline.run()


def check_poison_quarantined(accounting, expected: int) -> None:
    poison = {
        m["record"]["eventID"]: m["record"]
        for m in accounting.quarantine_messages
        if m["record"]["dynamodb"]["Keys"]["pk"]["S"].startswith("ORDER#poison-")
    }
    assert len(poison) == expected
    for record in poison.values():  # the payload is there: the record as Lambda delivered it
        assert record["dynamodb"]["NewImage"]["amount"] == {"S": "ten"}


def test_reference_stack_keeps_the_view_exactly(
    aws: LocalEndpoint, reference_assembly: Path
) -> None:
    """A small workload without faults: every change is accounted for, the poison write is
    quarantined with its payload, and the view equals its recomputation."""
    with LocalPipeline(
        reference_assembly, "CdcReferenceStack", endpoint=aws, track_records=True
    ) as pipeline:
        run_workload(pipeline, OrderWorkload(changes=400, orders=40, poison=1, seed=3), 100)
        wiring = order_stats_wiring(pipeline)
        accounting = account(pipeline, wiring)
        assert accounting.lost == []
        assert accounting.records == 400 + pipeline.counters.ttl_deletions
        check_poison_quarantined(accounting, 1)
        assert view_reconciled(pipeline, wiring)
        consumer_metrics = pipeline.consumer_metrics[ORDER_STATS_CONSUMER]
        assert consumer_metrics["TtlExpiries"] == pipeline.counters.ttl_deletions > 0


@pytest.mark.slow
def test_five_thousand_changes_under_faults_lose_nothing_and_apply_nothing_twice(
    aws: LocalEndpoint, reference_assembly: Path
) -> None:
    """5,000 changes on 200 orders, with handler crashes at random points, transient DynamoDB
    errors, lost responses, duplicated deliveries and 3 poison writes: 0 changes lost, 0 effects
    applied twice (the view equals its recomputation from the orders table), the poison records
    in quarantine with their payload, and on-failure messages (if any batch ran out of retries)
    in AWS's shape - redriven before the view is compared. Hot aggregates are merged (the
    handler's increments of one customer share one action). Order-stats keeps per-order
    contributions (docs/backfill.md), so a redelivered record finds its contribution already
    replaced and writes nothing: no transaction is cancelled for it (a merged group holding a
    duplicate marker is tested in tests/cdc_consumer/test_hot_aggregates.py)."""
    faults = FaultPlan(
        seed=11,
        crash_probability=0.02,
        transient_error_probability=0.03,
        lost_response_probability=0.03,
        # One successful invocation in ten is sent again: enough that a run of this size never
        # goes without one (at 0.05 one run of the whole suite had none and failed below).
        duplicate_delivery_probability=0.1,
    )
    with LocalPipeline(
        reference_assembly, "CdcReferenceStack", endpoint=aws, faults=faults, track_records=True
    ) as pipeline:
        merged_groups = MergedGroups()
        pipeline.session_hooks.append(merged_groups.install)
        run_workload(pipeline, OrderWorkload(changes=5000, orders=200, poison=3, seed=5), 250)
        wiring = order_stats_wiring(pipeline)
        injected = pipeline.faults.counters if pipeline.faults else None
        assert injected is not None
        assert injected.crashes and injected.transient_errors and injected.duplicate_deliveries
        # No count of DuplicatesSkipped: order-stats absorbs a redelivery by its contribution's
        # version (no marker, so no such metric), and the archive's markers see a duplicate only
        # when one lands on a TTL deletion, which depends on the run's timing. That nothing was
        # applied twice is the view's reconciliation below.

        accounting = account(pipeline, wiring)
        assert accounting.lost == []
        assert accounting.records == 5000 + pipeline.counters.ttl_deletions
        check_poison_quarantined(accounting, 3)
        for message in accounting.on_failure_messages:
            assert set(message) == ON_FAILURE_KEYS | {"payload"}  # S3 keeps the batch
            assert set(message["DDBStreamBatchInfo"]) == BATCH_INFO_KEYS
            assert message["requestContext"]["condition"] in (
                "RetryAttemptsExhausted",
                "RecordAgeExceeded",
            )
        if accounting.on_failure_messages:  # held, not lost: redrive them, then compare
            report = redrive_on_failure(pipeline, wiring)
            assert report.ok, report.summary()
        assert view_reconciled(pipeline, wiring)
    assert merged_groups.counts["committed"] > 0, merged_groups.counts


def test_batches_whose_retries_ran_out_are_held_then_redriven(
    aws: LocalEndpoint, reference_assembly: Path
) -> None:
    """Every invocation crashes: the mapping bisects down to single records and, when their 5
    retries run out, sends each to the on-failure queue - held, not lost. Redrive then reads
    them back from the stream and the view reconciles."""
    with LocalPipeline(
        reference_assembly,
        "CdcReferenceStack",
        endpoint=aws,
        faults=FaultPlan(crash_probability=1.0),
        track_records=True,
    ) as pipeline:
        wiring = order_stats_wiring(pipeline)
        ddb = pipeline.client("dynamodb")
        for change in OrderWorkload(changes=60, orders=10, poison=1, seed=2).plan():
            apply(ddb, wiring.source_table, change)
        pipeline.drain()
        assert pipeline.faults is not None
        pipeline.faults.plan = FaultPlan()  # the outage is over
        accounting = account(pipeline, wiring)
        assert accounting.lost == [] and accounting.on_failure > 0
        assert not view_reconciled(pipeline, wiring)
        report = redrive_on_failure(pipeline, wiring)
        assert report.ok and report.records_replayed == accounting.on_failure
        assert view_reconciled(pipeline, wiring)
