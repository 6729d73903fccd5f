"""Markers outlive every replay window (issue 23 §1), through the local pipeline.

A consumer group's failed batch always holds records its earlier members applied (a member stops
only itself), and a member's quarantined record is replayed through the whole group. Both can be
replayed as long as the failed-batch bucket and the quarantine queue keep them (14 days by
default), so the members' markers must live at least that long: here the fix is deployed and the
replay run on day 8 of the pipeline's clock, after DynamoDB's TTL (played by the pipeline) swept
every marker that had expired by then. Each member's counter must still count each record once.
"""

from __future__ import annotations

import time
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from cdc_consumer import redrive

from cdc_constructs import ChangeCaptureTable, ConsumerGroupMember, StreamConsumer
from cdc_local.accounting import ConsumerWiring, on_failure_batches, redrive_on_failure, scan
from cdc_local.endpoint import LocalEndpoint
from cdc_local.runner import LocalPipeline

HANDLER = Path(__file__).parent / "handlers" / "late_replay"
PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
DAY = 24 * 3600
KEYS = [f"o{n}" for n in range(1, 6)]


@pytest.fixture(scope="module")
def late_replay_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``stats`` then ``audit`` behind one mapping, with every default of failure handling: the
    on-failure bucket and the quarantine queue keep 14 days."""
    outdir = tmp_path_factory.mktemp("late-replay.out")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "LateReplay")
    consumer = StreamConsumer(
        stack,
        "Consumers",
        table=ChangeCaptureTable(stack, "Orders", partition_key=PK),
        consumer_name="group",
        members=[ConsumerGroupMember("stats"), ConsumerGroupMember("audit")],
        code=lambda_.Code.from_asset(str(HANDLER)),
        handler="index.handler",
        batch_size=10,
        retry_attempts=2,
        monitoring=False,
        redrive=False,
    )
    consumer.grant_view_table(
        dynamodb.TableV2(stack, "View", partition_key=PK), env_var="VIEW_TABLE", read=True
    )
    app.synth()
    return outdir


class Day:
    """The pipeline's clock: the wall clock, moved on by whole days."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, days: int) -> None:
        self.offset += days * DAY


def counters(pipeline: LocalPipeline) -> dict[str, int]:
    items = pipeline.client("dynamodb").scan(TableName=pipeline.table_name("View"))["Items"]
    return {item["pk"]["S"]: int(item["n"]["N"]) for item in items if "n" in item}


def write_orders(pipeline: LocalPipeline, *, fails: str = "", poison: str = "") -> None:
    """Break audit for one key (``fails``: transiently; ``poison``: for good), write the five
    orders, and let the pipeline run."""
    ddb = pipeline.client("dynamodb")
    fault = {"pk": {"S": "fault#audit"}}
    for attribute, key in (("fails", fails), ("poison", poison)):
        if key:
            fault[attribute] = {"SS": [key]}
    ddb.put_item(TableName=pipeline.table_name("View"), Item=fault)
    orders = pipeline.table_name("Orders")
    for key in KEYS:
        ddb.put_item(TableName=orders, Item={"pk": {"S": key}})
    pipeline.drain()


def fix_audit_on_day_8(pipeline: LocalPipeline, clock: Day) -> int:
    """A week and a day pass, TTL sweeps what expired, and audit's fix is deployed; return how
    many markers were swept."""
    clock.advance(8)
    swept = pipeline.sweep_ttl()
    pipeline.client("dynamodb").delete_item(
        TableName=pipeline.table_name("View"), Key={"pk": {"S": "fault#audit"}}
    )
    return swept


def test_a_groups_failed_batch_redriven_on_day_8_applies_no_record_twice(
    aws: LocalEndpoint, late_replay_assembly: Path
) -> None:
    """stats applies o1..o5; audit fails on o3 until fixed, so the batch o3..o5 goes to the
    bucket. Redriven on day 8, it holds three records stats applied on day 0 (on main, with
    markers kept 7 days, stats' counter went from 5 to 8)."""
    clock = Day()
    with LocalPipeline(late_replay_assembly, "LateReplay", endpoint=aws, clock=clock) as pipeline:
        write_orders(pipeline, fails="o3")
        wiring = ConsumerWiring.of(pipeline, "index.handler")
        (held,) = on_failure_batches(pipeline, wiring)
        assert held["DDBStreamBatchInfo"]["batchSize"] == 3  # o3, o4, o5
        assert counters(pipeline) == {"stats": 5, "audit": 2}

        swept = fix_audit_on_day_8(pipeline, clock)
        report = redrive_on_failure(pipeline, wiring)
        assert report is not None and report.ok and report.records_replayed == 3
        assert counters(pipeline) == {"stats": 5, "audit": 5}
        assert on_failure_batches(pipeline, wiring) == []
        assert swept == 0  # no marker had expired


def test_a_members_quarantined_record_replayed_through_the_group_on_day_8_is_applied_once(
    aws: LocalEndpoint, late_replay_assembly: Path
) -> None:
    """o3 is poison for audit alone: quarantined with audit's name while stats applies it.
    Replayed through the group on day 8 (on main: stats' counter went from 5 to 6)."""
    clock = Day()
    with LocalPipeline(late_replay_assembly, "LateReplay", endpoint=aws, clock=clock) as pipeline:
        write_orders(pipeline, poison="o3")
        wiring = ConsumerWiring.of(pipeline, "index.handler")
        assert counters(pipeline) == {"stats": 5, "audit": 4}

        swept = fix_audit_on_day_8(pipeline, clock)
        report = redrive.Redrive(
            invoker=redrive.CallableInvoker(
                handler=wiring.function.as_handler(), function_name=wiring.function.name
            ),
            stream_arn=wiring.mapping.stream_arn,
            sqs_client=pipeline.client("sqs"),
            streams_client=pipeline.client("dynamodbstreams"),
            consumer_name=wiring.consumer_name,
            member_names=[member.name for member in wiring.members],
            receive_wait_seconds=0,
        ).run(wiring.quarantine_queue_url, redrive.Source.QUARANTINE)
        assert report.ok and report.records_replayed == 1
        assert counters(pipeline) == {"stats": 5, "audit": 5}
        assert swept == 0


def test_markers_are_swept_once_every_replay_window_has_closed(
    aws: LocalEndpoint, late_replay_assembly: Path
) -> None:
    """The lifetime is finite: once the bucket and the quarantine can no longer hold a copy
    (14 + 14 days after the 1 h record age, a day for S3's rounding of an expiration to the
    next midnight UTC, plus a day's margin), TTL sweeps every marker, and every ledger entry
    and head (the ledger keeps only when it took over, once per consumer)."""
    clock = Day()
    with LocalPipeline(late_replay_assembly, "LateReplay", endpoint=aws, clock=clock) as pipeline:
        write_orders(pipeline)
        wiring = ConsumerWiring.of(pipeline, "index.handler")
        ddb = pipeline.client("dynamodb")
        assert wiring.ledger_table is not None
        entries = [i for i in scan(ddb, wiring.ledger_table) if "expiration" in i]
        assert sum(int(i["count"]["N"]) for i in entries if "count" in i) == 2 * len(KEYS)
        markers = scan(ddb, wiring.idempotency_table) + entries
        clock.advance(30)
        assert pipeline.sweep_ttl() == 0  # 30 days: within the windows' 30 days and 1 h
        clock.advance(1)
        assert pipeline.sweep_ttl() == len(markers)
