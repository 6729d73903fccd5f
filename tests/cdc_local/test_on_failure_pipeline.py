"""Failed batches kept whole (issue 12), end to end through the local pipeline.

Every invocation of the order-stats consumer crashes, so its batches exhaust their retries and
go to the on-failure destination. The stream then trims the records (24 h on a clock the test
controls), the fault is fixed, and redrive runs:

- with the default S3 destination, each object holds its batch: the redrive replays it, the
  view is exact, the objects are done, and a second run is a no-op;
- with an SQS destination (the same stack, its mapping pointed at a queue), the queue holds
  only pointers into the trimmed stream: the redrive reports the records lost, keeps the
  messages and the view stays short of them. This is why S3 is the default.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cdc_local.accounting import ConsumerWiring, on_failure_batches, redrive_on_failure
from cdc_local.endpoint import LocalEndpoint
from cdc_local.faults import FaultPlan
from cdc_local.retention import STREAM_RETENTION_SECONDS
from cdc_local.runner import LocalPipeline
from reference_app.oracle import order_stats_wiring, view_reconciled
from reference_app.workload import OrderWorkload, apply

STACK = "CdcReferenceStack"


class Clock:
    """The wall clock plus an offset the test moves (record age, retention)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@pytest.fixture(scope="module")
def sqs_reference_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference stack with the order-stats mapping's on-failure destination overridden to
    an SQS queue (what StreamConsumer(on_failure=SqsDlq(queue)) synthesizes, its send grant
    included: the local pipeline enforces IAM, and Lambda sends with the function's role)."""
    import aws_cdk as cdk
    from aws_cdk import aws_sqs as sqs

    from reference_app import stack as reference_stack

    outdir = tmp_path_factory.mktemp("reference-sqs.out")
    app = cdk.App(outdir=str(outdir))
    stack = reference_stack.CdcReferenceStack(app, STACK)
    queue = sqs.Queue(stack, "OrderStatsPointers")
    mapping = stack.orders_consumers.event_source_mapping.node.default_child
    mapping.add_property_override(  # type: ignore[union-attr]
        "DestinationConfig.OnFailure.Destination", queue.queue_arn
    )
    queue.grant_send_messages(stack.orders_consumers.function)
    app.synth()
    return outdir


@pytest.fixture
def failed_pipeline(
    aws: LocalEndpoint,
) -> Iterator[Callable[[Path], tuple[LocalPipeline, ConsumerWiring, Clock]]]:
    """A reference pipeline whose order-stats batches all ran out of retries."""
    started: list[LocalPipeline] = []

    def start(assembly: Path) -> tuple[LocalPipeline, ConsumerWiring, Clock]:
        clock = Clock()
        pipeline = LocalPipeline(
            assembly,
            STACK,
            endpoint=aws,
            faults=FaultPlan(crash_probability=1.0),
            clock=clock,
            track_records=True,
        ).start()
        started.append(pipeline)
        wiring = order_stats_wiring(pipeline)
        ddb = pipeline.client("dynamodb")
        for change in OrderWorkload(changes=24, orders=6, poison=0, seed=7).plan():
            apply(ddb, wiring.source_table, change)
        pipeline.drain()
        return pipeline, wiring, clock

    yield start
    for pipeline in started:
        pipeline.close()


def trim_after_a_day(pipeline: LocalPipeline, wiring: ConsumerWiring, clock: Clock) -> None:
    """Move the clock past the stream's retention and let the stream trim."""
    clock.offset += STREAM_RETENTION_SECONDS + 60
    assert pipeline.trim_streams() > 0
    streams = pipeline.client("dynamodbstreams")
    (shard,) = streams.describe_stream(StreamArn=wiring.mapping.stream_arn)["StreamDescription"][
        "Shards"
    ]
    iterator = streams.get_shard_iterator(
        StreamArn=wiring.mapping.stream_arn,
        ShardId=shard["ShardId"],
        ShardIteratorType="TRIM_HORIZON",
    )["ShardIterator"]
    assert streams.get_records(ShardIterator=iterator)["Records"] == []  # all trimmed


def dropped_records_alarm(pipeline: LocalPipeline, wiring: ConsumerWiring) -> dict[str, Any]:
    """The synthesized alarm on the order-stats mapping's DroppedEventCount."""
    (alarm,) = [
        resource["Properties"]
        for resource in pipeline.stack.template["Resources"].values()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
        and resource["Properties"].get("MetricName") == "DroppedEventCount"
        and resource["Properties"]["Dimensions"]
        == [{"Name": "EventSourceMappingUUID", "Value": {"Ref": wiring.mapping.name}}]
    ]
    return alarm


def test_s3_keeps_failed_batches_whole_so_redrive_outlives_the_stream(
    failed_pipeline: Callable[[Path], tuple[LocalPipeline, ConsumerWiring, Clock]],
    reference_assembly: Path,
) -> None:
    pipeline, wiring, clock = failed_pipeline(reference_assembly)
    assert wiring.on_failure_bucket is not None  # the default destination

    # Retries exhausted -> the batches are objects in the bucket, each holding its records.
    batches = on_failure_batches(pipeline, wiring)
    assert batches and all(
        b["requestContext"]["condition"] == "RetryAttemptsExhausted" for b in batches
    )
    held = sum(b["DDBStreamBatchInfo"]["batchSize"] for b in batches)
    assert all("payload" in b for b in batches)
    # ... and the alarm's metric counts them: the mapping's DroppedEventCount.
    alarm = dropped_records_alarm(pipeline, wiring)
    assert (alarm["Threshold"], alarm["EvaluationPeriods"], alarm["Period"]) == (1, 1, 60)
    assert wiring.mapping.counters.event_counts()["DroppedEventCount"] == held >= 1
    assert not view_reconciled(pipeline, wiring)

    trim_after_a_day(pipeline, wiring, clock)
    assert pipeline.faults is not None
    pipeline.faults.plan = FaultPlan()  # the fault is fixed

    report = redrive_on_failure(pipeline, wiring)

    assert report is not None and report.ok, report.summary()
    assert report.records_replayed == held and not report.lost
    assert report.messages_deleted == len(batches)
    assert view_reconciled(pipeline, wiring)  # exact, though the stream no longer holds them
    assert on_failure_batches(pipeline, wiring) == []  # every object done

    again = redrive_on_failure(pipeline, wiring)
    assert again is not None and again.ok
    assert (again.messages_received, again.invocations, again.records_replayed) == (0, 0, 0)
    assert view_reconciled(pipeline, wiring)


def test_with_sqs_the_same_failure_can_only_be_reported_lost(
    failed_pipeline: Callable[[Path], tuple[LocalPipeline, ConsumerWiring, Clock]],
    sqs_reference_assembly: Path,
) -> None:
    pipeline, wiring, clock = failed_pipeline(sqs_reference_assembly)
    assert wiring.on_failure_queue_url is not None and wiring.on_failure_bucket is None
    pointers = on_failure_batches(pipeline, wiring)
    assert pointers and all("payload" not in p for p in pointers)  # a pointer only
    held = sum(p["DDBStreamBatchInfo"]["batchSize"] for p in pointers)
    assert wiring.mapping.counters.event_counts()["DroppedEventCount"] == held

    trim_after_a_day(pipeline, wiring, clock)
    assert pipeline.faults is not None
    pipeline.faults.plan = FaultPlan()

    report = redrive_on_failure(pipeline, wiring)

    assert report is not None and not report.ok
    assert report.lost_record_count == held and report.records_replayed == 0
    assert all("TrimmedDataAccessException" in lost.reason for lost in report.lost)
    assert report.messages_deleted == 0
    assert len(on_failure_batches(pipeline, wiring)) == len(pointers)  # kept, for a person
    assert not view_reconciled(pipeline, wiring)  # only a rebuild from the table helps now
