"""The Kinesis route's redrive function reading pointers back from the Kinesis stream under its
own role (issue 30), on the local pipeline with IAM enforced: a KinesisConsumer whose on-failure
destination is an SQS queue (pointers only) crashes on every batch; once fixed, its redrive
function reads each range back (GetShardIterator, GetRecords; the retention from
DescribeStreamSummary), replays it and deletes the message. Without one of those grants the
redrive fails naming it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cdc_consumer.redrive_shapes import OnFailureMessage

from cdc_local.accounting import peek_messages
from cdc_local.endpoint import LocalEndpoint
from cdc_local.exceptions import AccessDeniedError
from cdc_local.faults import FaultPlan
from cdc_local.runner import LocalPipeline

pytestmark = [pytest.mark.xdist_group("cdc_local")]

STACK = "KinesisPointers"
#: A consumer that reads one item of its idempotency table (a call its role allows, before
#: which the fault plan injects its crashes) and succeeds.
HANDLER = """
import os

import boto3


def handler(event, context):
    table = os.environ["IDEMPOTENCY_TABLE_NAME"]
    boto3.client("dynamodb").get_item(TableName=table, Key={"id": {"S": "probe"}})
    return {"batchItemFailures": []}
"""


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import aws_cdk as cdk
    from aws_cdk import aws_dynamodb as dynamodb
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_sqs as sqs

    from cdc_constructs import ChangeCaptureTable, KinesisConsumer, KinesisDestination

    outdir = tmp_path_factory.mktemp("kinesis-pointers.out")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, STACK)
    key = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
    table = ChangeCaptureTable(stack, "Orders", partition_key=key, kinesis=KinesisDestination())
    KinesisConsumer(
        stack,
        "Replica",
        table=table,
        code=lambda_.Code.from_inline(HANDLER),
        handler="index.handler",
        on_failure_queue=sqs.Queue(stack, "Pointers", enforce_ssl=True),
    )
    app.synth()
    return outdir


def without_action(assembly: Path, destination: Path, action: str) -> Path:
    """A copy of ``assembly`` whose redrive role no longer has ``action``."""
    shutil.copytree(assembly, destination)
    path = destination / f"{STACK}.template.json"
    template = json.loads(path.read_text())
    for resource in template["Resources"].values():
        roles = [r.get("Ref", "") for r in resource.get("Properties", {}).get("Roles", [])]
        if resource["Type"] != "AWS::IAM::Policy" or not any("Redrive" in r for r in roles):
            continue
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else []
            if action in actions:
                statement["Action"] = [a for a in actions if a != action]
    path.write_text(json.dumps(template))
    return destination


def crash_then_fix(pipeline: LocalPipeline) -> list[dict]:
    """Every batch crashes into the queue; then the fault is fixed. The pointers sent."""
    ddb = pipeline.client("dynamodb")
    table = pipeline.feeds[0].table_name
    for number in range(6):
        ddb.put_item(TableName=table, Item={"pk": {"S": f"order-{number}"}})
    pipeline.run()
    queue = next(url for lid, url in pipeline.resources.queue_urls.items() if "Pointers" in lid)
    pointers = peek_messages(pipeline.client("sqs"), queue)
    assert pipeline.faults is not None
    pipeline.faults.plan = FaultPlan()
    return pointers


def redrive_function(pipeline: LocalPipeline):  # type: ignore[no-untyped-def]
    (function,) = [f for lid, f in pipeline.functions.items() if "Redrive" in lid]
    return function


def test_the_redrive_reads_pointers_back_from_kinesis_under_its_own_role(
    aws: LocalEndpoint, assembly: Path
) -> None:
    faults = FaultPlan(crash_probability=1.0)
    with LocalPipeline(assembly, STACK, endpoint=aws, faults=faults) as pipeline:
        assert pipeline.iam_enforced
        pointers = crash_then_fix(pipeline)
        assert pointers and all(OnFailureMessage.KINESIS_BATCH_INFO in p for p in pointers)
        assert all("payload" not in p for p in pointers)  # pointers only

        result = redrive_function(pipeline).invoke({"source": "on-failure"})

        assert not result.failed, result.output
        assert result.response["ok"], result.response
        (report,) = result.response["reports"]
        assert report["messages_deleted"] == len(pointers)
        assert report["records_replayed"] == 6
        pipeline.check_access()


@pytest.mark.parametrize(
    "action",
    ["kinesis:GetRecords", "kinesis:GetShardIterator", "kinesis:DescribeStreamSummary"],
)
def test_without_a_kinesis_grant_the_redrive_fails_naming_it(
    aws: LocalEndpoint, assembly: Path, tmp_path: Path, action: str
) -> None:
    changed = without_action(assembly, tmp_path / "cdk.out", action)
    faults = FaultPlan(crash_probability=1.0)
    with LocalPipeline(changed, STACK, endpoint=aws, faults=faults) as pipeline:
        crash_then_fix(pipeline)
        with pytest.raises(AccessDeniedError) as denied:
            redrive_function(pipeline).invoke({"source": "on-failure"})
            pipeline.check_access()
        assert denied.value.action == action
