"""Two consumers behind one mapping, through the local pipeline: under duplicate deliveries,
crashes and transient errors each applies each record once, and a poison record is quarantined
for the consumer it is poison for alone."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_

from cdc_constructs import ChangeCaptureTable, ConsumerGroupMember, StreamConsumer
from cdc_local.accounting import ConsumerWiring, account
from cdc_local.endpoint import LocalEndpoint
from cdc_local.faults import FaultPlan
from cdc_local.runner import LocalPipeline

HANDLER = Path(__file__).parent / "handlers" / "group"
PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


@pytest.fixture(scope="module")
def group_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outdir = tmp_path_factory.mktemp("group.out")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Group")
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    view = dynamodb.TableV2(stack, "View", partition_key=PK)
    consumer = StreamConsumer(
        stack,
        "Consumers",
        table=table,
        consumer_name="group",
        members=[
            ConsumerGroupMember("stats", [{"userIdentity": {"type": [{"exists": False}]}}]),
            ConsumerGroupMember("audit"),
        ],
        code=lambda_.Code.from_asset(str(HANDLER)),
        handler="index.handler",
        batch_size=10,
        monitoring=False,
        redrive=False,
    )
    consumer.grant_view_table(view, env_var="VIEW_TABLE")
    app.synth()
    return outdir


def test_each_consumer_applies_each_record_once_and_owns_its_poison(
    aws: LocalEndpoint, group_assembly: Path
) -> None:
    faults = FaultPlan(
        seed=3,
        duplicate_delivery_probability=0.3,
        crash_probability=0.05,
        transient_error_probability=0.05,
    )
    with LocalPipeline(
        group_assembly, "Group", endpoint=aws, faults=faults, track_records=True
    ) as pipeline:
        ddb = pipeline.client("dynamodb")
        orders = pipeline.table_name("Orders")
        for n in range(30):
            ddb.put_item(TableName=orders, Item={"pk": {"S": f"o{n}"}, "v": {"N": "1"}})
        ddb.put_item(TableName=orders, Item={"pk": {"S": "poison"}})
        for n in range(0, 30, 3):
            ddb.put_item(TableName=orders, Item={"pk": {"S": f"o{n}"}, "v": {"N": "2"}})
        pipeline.drain()
        assert pipeline.counters.records_discarded == 0
        # Every record is accounted for, member by member: marked by each member its filter
        # gives it to, or quarantined by one of them.
        accounting = account(pipeline, ConsumerWiring.of(pipeline, "index.handler"))
        assert accounting.lost == [] and accounting.on_failure == 0
        assert (accounting.processed, accounting.quarantined) == (40, 1)
        view = {
            item["pk"]["S"]: int(item["n"]["N"])
            for item in ddb.scan(TableName=pipeline.table_name("View"))["Items"]
        }
        sqs = pipeline.client("sqs")
        queue = pipeline.queue_url("ConsumersQuarantineQueue")
        bodies = [
            json.loads(m["Body"])
            for m in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
        ]
    expected: Counter[str] = Counter()
    for n in range(30):
        expected[f"stats#o{n}"] += 1 + (n % 3 == 0)
        expected[f"audit#o{n}"] += 1 + (n % 3 == 0)
    expected["audit#poison"] += 1
    assert view == dict(expected)
    # A duplicate delivery of the poison record may quarantine it again (at least once):
    # what matters is that only its consumer quarantined it.
    assert {(b["consumer"], json.dumps(b["record"]["dynamodb"]["Keys"])) for b in bodies} == {
        ("stats", json.dumps({"pk": {"S": "poison"}}))
    }
