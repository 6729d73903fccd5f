"""Reading the cloud assembly and creating the stack's resources on the local endpoint."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from cdc_local.assembly import CloudAssembly
from cdc_local.exceptions import AssemblyError
from tests.cdc_local import recorder
from tests.cdc_local.helpers import put


def test_assembly_lists_the_stacks_functions_layers_and_stream_mappings(assembly_dir: Path) -> None:
    stack = CloudAssembly(assembly_dir).stack("Basic")
    [function] = stack.functions().values()
    assert function.own_handler == "index.handler"
    assert function.timeout_seconds == 30
    assert (function.asset_dir / "index.py").is_file()
    [layer] = stack.layers().values()
    assert (layer.asset_dir / "python" / "helperlib" / "__init__.py").is_file()
    [mapping] = stack.stream_mappings()
    assert mapping.properties["BatchSize"] == 10
    assert {t.logical_id[:4] for t in stack.tables()} == {"Item", "Sink"}


def test_unknown_stack_is_an_error_naming_the_stacks_there(assembly_dir: Path) -> None:
    with pytest.raises(AssemblyError, match=r"no stack 'Nope'.*Basic, Plain"):
        CloudAssembly(assembly_dir).stack("Nope")


def test_a_directory_without_manifest_is_not_an_assembly(tmp_path: Path) -> None:
    with pytest.raises(AssemblyError, match=r"no manifest\.json"):
        CloudAssembly(tmp_path)


def test_tables_get_their_keys_indexes_stream_and_ttl(pipeline_for) -> None:
    pipeline = pipeline_for("Basic")
    ddb = pipeline.client("dynamodb")
    name = pipeline.table_name("Items")
    table = ddb.describe_table(TableName=name)["Table"]
    assert table["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    assert [i["IndexName"] for i in table["GlobalSecondaryIndexes"]] == ["byMode"]
    assert [i["IndexName"] for i in table["LocalSecondaryIndexes"]] == ["byOther"]
    assert table["StreamSpecification"] == {
        "StreamEnabled": True,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    }
    ttl = ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expiresAt"}


def test_queues_buckets_and_topics_are_created_with_their_attributes(pipeline_for) -> None:
    pipeline = pipeline_for("Basic")
    sqs = pipeline.client("sqs")
    dlq = pipeline.queue_url("OnFailure")
    attributes = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["All"])["Attributes"]
    assert attributes["MessageRetentionPeriod"] == "1209600"
    redrive = sqs.get_queue_attributes(
        QueueUrl=pipeline.queue_url("WithRedrive"), AttributeNames=["RedrivePolicy"]
    )["Attributes"]["RedrivePolicy"]
    assert json.loads(redrive) == {
        "deadLetterTargetArn": attributes["QueueArn"],
        "maxReceiveCount": 3,
    }
    pipeline.client("s3").head_bucket(Bucket=pipeline.bucket_name("Archive"))
    topics = [t["TopicArn"] for t in pipeline.client("sns").list_topics()["Topics"]]
    assert any(arn.endswith(":Basic-Alarms04B5A0BF") for arn in topics)


def test_handler_environment_resolves_to_the_local_resources(pipeline_for, aws) -> None:
    """Ref, Fn::GetAtt (Arn, StreamArn, QueueName), Fn::Join, Fn::Select/Split and Fn::Sub
    resolve to the local names, and the endpoint's variables point boto3 at moto."""
    pipeline = pipeline_for("Basic")
    put(pipeline, "a")
    pipeline.drain()
    [invocation] = recorder.INVOCATIONS
    env = invocation.environment
    table = pipeline.table_name("Items")
    description = pipeline.client("dynamodb").describe_table(TableName=table)["Table"]
    assert env["TABLE_NAME"] == table
    assert env["TABLE_ARN"] == description["TableArn"]
    assert env["STREAM_ARN"] == description["LatestStreamArn"]
    assert env["SINK_TABLE"] == pipeline.table_name("Sink")
    assert env["QUEUE_URL"] == pipeline.queue_url("OnFailure")
    assert env["QUEUE_NAME"] == env["QUEUE_URL"].rsplit("/", 1)[1]
    assert env["QUEUE_ARN"].endswith(":" + env["QUEUE_NAME"])
    assert env["BUCKET_NAME"] == pipeline.bucket_name("Archive")
    assert env["TOPIC_ARN"].startswith("arn:aws:sns:us-east-1:123456789012:")
    assert env["JOINED"] == f"{table}|suffix"
    assert env["SELECTED"] == table
    assert env["SUBSTITUTED"] == f"us-east-1:123456789012:{table}"
    assert env["AWS_ENDPOINT_URL"] == aws.url
    assert env["AWS_LAMBDA_FUNCTION_NAME"] == invocation.function_name
    assert "TABLE_NAME" not in os.environ  # restored after the invocation


def test_context_remaining_time_follows_the_function_timeout(pipeline_for) -> None:
    """The handler's remaining time starts at the function's 30 s Timeout. The functions' clock
    is stopped, so what the handler sees does not depend on how long the machine took."""
    pipeline = pipeline_for("Basic")
    for function in pipeline.functions.values():
        function.clock = lambda: 1_000.0
    put(pipeline, "a")
    pipeline.drain()
    [invocation] = recorder.INVOCATIONS
    assert invocation.remaining_ms == 30_000


def test_running_past_the_timeout_fails_the_invocation(pipeline_for) -> None:
    """Lambda stops a function at its Timeout and reports the invocation as failed; with
    clock_speed 1000, the handler's 50 ms sleep is 50 s of emulated time, past the 30 s timeout."""
    pipeline = pipeline_for("Plain", clock_speed=1000)
    put(pipeline, "a", mode="slow")
    pipeline.drain()
    function = next(iter(pipeline.functions.values()))
    assert function.errors == 2  # the invocation and its one retry
    assert pipeline.counters.failed_invocations == 2


def test_two_functions_with_the_same_handler_module_do_not_share_it(pipeline_for) -> None:
    """Both functions are `index.handler`, from different asset directories; each runs its own
    `index` (and only the one with the layer sees the layer's module)."""
    pipeline = pipeline_for("TwoFunctions")
    put(pipeline, "a")
    put(pipeline, "b")
    pipeline.drain()
    assert sorted({i.probe for i in recorder.INVOCATIONS}) == ["other", "probe"]
    assert all(len(i.sequence_numbers) == 2 for i in recorder.INVOCATIONS)
    assert "index" not in sys.modules and "helperlib" not in sys.modules
