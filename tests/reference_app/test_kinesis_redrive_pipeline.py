"""The Kinesis route's redrive function, end to end through CdcKinesisReferenceStack on the local
pipeline (issue 30): every invocation of both consumers crashes, so their batches run out of
retries and go to their failed-batch buckets as Lambda writes them (``KinesisBatchInfo``, the
batch as payload); once the fault is fixed, each consumer's provisioned redrive function,
invoked under its own role (IAM enforced), replays them: the replica equals the table, the view
its recomputation, the buckets are empty and a second run replays nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cdc_consumer.redrive_shapes import OnFailureMessage

from cdc_local.endpoint import LocalEndpoint
from cdc_local.faults import FaultPlan
from cdc_local.peek import peek_messages
from cdc_local.runner import LocalPipeline
from reference_app.kinesis_demo import replica_equals_table, view_reconciled, write_in_batches
from reference_app.workload import OrderWorkload

pytestmark = [pytest.mark.xdist_group("cdc_local"), pytest.mark.slow]

STACK = "CdcKinesisReferenceStack"


@pytest.fixture(scope="module")
def kinesis_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import aws_cdk as cdk

    from reference_app.kinesis_stack import CdcKinesisReferenceStack

    outdir = tmp_path_factory.mktemp("kinesis-redrive.out")
    app = cdk.App(outdir=str(outdir))
    CdcKinesisReferenceStack(app, STACK)
    app.synth()
    return outdir


def failed_batches(pipeline: LocalPipeline) -> list[dict[str, Any]]:
    """Every object of the stack's failed-batch buckets, parsed."""
    s3 = pipeline.client("s3")
    found = []
    for bucket in s3.list_buckets()["Buckets"]:
        if "failedbatches" not in bucket["Name"].lower():
            continue
        for item in s3.list_objects_v2(Bucket=bucket["Name"]).get("Contents", []):
            body = s3.get_object(Bucket=bucket["Name"], Key=item["Key"])["Body"].read()
            found.append(json.loads(body))
    return found


def redrive_functions(pipeline: LocalPipeline) -> list[Any]:
    return [
        f for f in pipeline.functions.values() if f.spec.handler.endswith("redrive_handler.handler")
    ]


def test_the_redrive_function_recovers_kinesis_batches_sent_to_the_bucket(
    aws: LocalEndpoint, kinesis_assembly: Path
) -> None:
    with LocalPipeline(
        kinesis_assembly,
        STACK,
        endpoint=aws,
        faults=FaultPlan(crash_probability=1.0),
        track_records=True,
    ) as pipeline:
        assert pipeline.iam_enforced
        orders_table = pipeline.feeds[0].table_name
        write_in_batches(pipeline, orders_table, OrderWorkload(changes=40, orders=8, poison=0), 20)
        pipeline.run()

        batches = failed_batches(pipeline)
        assert batches and pipeline.counters.on_failure_messages == len(batches)
        assert all(OnFailureMessage.KINESIS_BATCH_INFO in b and "payload" in b for b in batches)
        assert not replica_equals_table(pipeline, orders_table)
        assert pipeline.faults is not None
        pipeline.faults.plan = FaultPlan()  # the fault is fixed

        functions = redrive_functions(pipeline)
        assert len(functions) == 2  # one per consumer
        results = [f.invoke({"source": "on-failure"}) for f in functions]

        for result in results:
            assert not result.failed, result.output
            assert result.response["ok"], result.response
        replayed = [r.response["reports"][0]["messages_deleted"] for r in results]
        assert sum(replayed) == len(batches)
        assert failed_batches(pipeline) == []
        assert replica_equals_table(pipeline, orders_table)
        assert view_reconciled(pipeline, orders_table)
        pipeline.check_access()  # no call of the redrive was denied

        again = [f.invoke({"source": "on-failure"}).response for f in functions]
        assert all(r["ok"] and r["reports"][0]["records_replayed"] == 0 for r in again)


def test_the_redrive_function_drains_the_kinesis_quarantine_under_its_own_role(
    aws: LocalEndpoint, kinesis_assembly: Path
) -> None:
    """Poison writes are quarantined by the Kinesis route's consumer (each message a Kinesis
    record); each consumer's redrive function, invoked with ``{"source": "quarantine"}`` under
    its role, reads, replays and deletes every message (a record still poison is quarantined
    again and reported), and no call is denied."""
    with LocalPipeline(kinesis_assembly, STACK, endpoint=aws) as pipeline:
        assert pipeline.iam_enforced
        orders_table = pipeline.feeds[0].table_name
        write_in_batches(pipeline, orders_table, OrderWorkload(changes=40, orders=8, poison=2), 20)
        pipeline.run()
        sqs = pipeline.client("sqs")
        functions = redrive_functions(pipeline)
        queues = [f.environment["QUARANTINE_QUEUE_URL"] for f in functions]
        before = {queue: peek_messages(sqs, queue) for queue in queues}
        assert sum(len(messages) for messages in before.values()) == 2, before
        assert all(
            m["record"]["eventSource"] == "aws:kinesis" for ms in before.values() for m in ms
        )

        for function, queue in zip(functions, queues, strict=True):
            result = function.invoke({"source": "quarantine"})
            assert not result.failed, result.output
            (report,) = result.response["reports"]
            assert report["messages_received"] == len(before[queue]), report
            assert report["failed"] == [] and report["kept"] == [], report
            assert report["messages_deleted"] == len(before[queue]), report
            assert len(report["requarantined"]) == len(before[queue]), report  # still poison
        pipeline.check_access()
