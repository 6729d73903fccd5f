"""The Kinesis route's redrive function (issue 30): KinesisConsumer provisions it as
StreamConsumer does, with least-privilege grants on the Kinesis stream, its Errors alarm on the
consumer's alarm topic and a place on the dashboard."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from cdc_constructs import ChangeCaptureTable, KinesisConsumer, KinesisDestination
from cdc_constructs.routes.kinesis import KINESIS_REDRIVE_ACTIONS, KinesisStreamRedrive
from tests.cdc_constructs.support import arn_of, cfn_lint, consumer_code, grants, resources

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
REDRIVE_HANDLER = "cdc_consumer.redrive_handler.handler"


def kinesis_table(stack: Any, **destination: Any) -> ChangeCaptureTable:
    return ChangeCaptureTable(
        stack, "Orders", partition_key=PK, kinesis=KinesisDestination(**destination)
    )


def redrive_function(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    (found,) = [
        (logical_id, resource["Properties"])
        for logical_id, resource in resources(template, "AWS::Lambda::Function").items()
        if resource["Properties"]["Handler"] == REDRIVE_HANDLER
    ]
    return found


def role_of(function: dict[str, Any]) -> str:
    return str(function["Role"]["Fn::GetAtt"][0])


def test_the_kinesis_consumer_provisions_the_redrive_function(stack: Any) -> None:
    consumer = KinesisConsumer(stack, "Replica", **consumer_code(), table=kinesis_table(stack))
    assert isinstance(consumer.redrive, KinesisStreamRedrive)
    template = Template.from_stack(stack).to_json()
    (stream_id,) = resources(template, "AWS::Kinesis::Stream")
    (mapping_id,) = resources(template, "AWS::Lambda::EventSourceMapping")
    _, function = redrive_function(template)
    variables = function["Environment"]["Variables"]
    consumer_id = stack.get_logical_id(consumer.function.node.default_child)
    bucket = consumer.on_failure_bucket
    assert bucket is not None
    assert variables["STREAM_ARN"] == {"Fn::GetAtt": [stream_id, "Arn"]}
    assert variables["CONSUMER_FUNCTION_NAME"] == {"Ref": consumer_id}
    assert variables["CDC_CONSUMER_NAME"] == "Replica"
    assert variables["ON_FAILURE_BUCKET_NAME"] == {
        "Ref": stack.get_logical_id(bucket.node.default_child)
    }
    assert variables["EVENT_SOURCE_MAPPING_UUID"] == {"Ref": mapping_id}
    assert variables["CDC_MARKER_TTL_SECONDS"] == str(int(consumer.marker_lifetime.to_seconds()))
    # And the quarantine queue, as on the stream route.
    assert consumer.quarantine_queue is not None
    assert variables["QUARANTINE_QUEUE_URL"] == {
        "Ref": stack.get_logical_id(consumer.quarantine_queue.node.default_child)
    }
    assert function["ReservedConcurrentExecutions"] == 1
    assert function["Timeout"] == 900


def test_the_redrive_reads_the_kinesis_stream_and_nothing_more(stack: Any) -> None:
    consumer = KinesisConsumer(stack, "Replica", **consumer_code(), table=kinesis_table(stack))
    template = Template.from_stack(stack).to_json()
    (stream_id,) = resources(template, "AWS::Kinesis::Stream")
    _, function = redrive_function(template)
    allowed = grants(template, role_of(function))
    stream = arn_of(stream_id)
    on_stream = {action for action, resource in allowed if resource == stream}
    assert (
        on_stream
        == set(KINESIS_REDRIVE_ACTIONS)
        == {
            "kinesis:DescribeStreamSummary",
            "kinesis:GetRecords",
            "kinesis:GetShardIterator",
        }
    )
    consumer_id = stack.get_logical_id(consumer.function.node.default_child)
    assert ("lambda:InvokeFunction", arn_of(consumer_id)) in allowed
    actions = {action for action, _ in allowed}
    assert {"s3:GetObject", "s3:DeleteObject", "s3:ListBucket"} <= actions
    # Of DynamoDB, only the redrive lease (one item of the idempotency table): no stream.
    dynamodb = {(a, r) for a, r in allowed if a.startswith("dynamodb:")}
    table = arn_of(stack.get_logical_id(consumer.idempotency_table.node.default_child))
    assert dynamodb == {("dynamodb:PutItem", table), ("dynamodb:DeleteItem", table)}
    assert not {"s3:PutObject", "kinesis:PutRecord", "kinesis:ListShards"} & actions
    assert all(resource != '"*"' and resource != "*" for _, resource in allowed)


def test_the_redrive_errors_are_alarmed_on_the_consumers_topic_and_dashboard(stack: Any) -> None:
    consumer = KinesisConsumer(stack, "Replica", **consumer_code(), table=kinesis_table(stack))
    assert consumer.redrive is not None and consumer.alarm_topic is not None
    template = Template.from_stack(stack).to_json()
    function_id, _ = redrive_function(template)
    errors = [
        alarm["Properties"]
        for alarm in resources(template, "AWS::CloudWatch::Alarm").values()
        if alarm["Properties"].get("MetricName") == "Errors"
        and alarm["Properties"]["Dimensions"][0]["Value"] == {"Ref": function_id}
    ]
    (alarm,) = errors
    topic = {"Ref": stack.get_logical_id(consumer.alarm_topic.node.default_child)}
    assert alarm["AlarmActions"] == [topic]
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (
        1,
        "GreaterThanOrEqualToThreshold",
    )
    assert consumer.alarms["RedriveErrors"] is consumer.redrive.errors_alarm
    assert consumer.alarms["RedriveLostRecords"] is consumer.redrive.lost_records_alarm
    (dashboard,) = resources(template, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    assert "Redrive and replication" in body and function_id in body


def test_redrive_false_provisions_none(stack: Any) -> None:
    consumer = KinesisConsumer(
        stack, "Replica", **consumer_code(), table=kinesis_table(stack), redrive=False
    )
    assert consumer.redrive is None
    template = Template.from_stack(stack).to_json()
    assert len(resources(template, "AWS::Lambda::Function")) == 1
    assert "RedriveErrors" not in consumer.alarms


def test_a_fan_out_consumers_redrive_reads_the_stream_and_its_key(stack: Any) -> None:
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    KinesisConsumer(
        stack,
        "Fast",
        **consumer_code(),
        table=kinesis_table(stack, encryption_key=key),
        enhanced_fan_out=True,
    )
    template = Template.from_stack(stack).to_json()
    (stream_id,) = resources(template, "AWS::Kinesis::Stream")
    _, function = redrive_function(template)
    assert function["Environment"]["Variables"]["STREAM_ARN"] == {"Fn::GetAtt": [stream_id, "Arn"]}
    allowed = grants(template, role_of(function))
    assert ("kms:Decrypt", arn_of(stack.get_logical_id(key.node.default_child))) in allowed


def test_a_queue_destination_is_drained_and_read_back(stack: Any) -> None:
    stream = kinesis.Stream(stack, "Changes", retention_period=Duration.days(7))
    queue = sqs.Queue(stack, "Failures", enforce_ssl=True)
    KinesisConsumer(
        stack,
        "ByStream",
        **consumer_code(),
        stream=stream,
        stream_retention=Duration.days(7),
        on_failure_queue=queue,
    )
    template = Template.from_stack(stack).to_json()
    _, function = redrive_function(template)
    queue_id = stack.get_logical_id(queue.node.default_child)
    assert function["Environment"]["Variables"]["ON_FAILURE_QUEUE_URL"] == {"Ref": queue_id}
    allowed = grants(template, role_of(function))
    assert ("sqs:DeleteMessage", arn_of(queue_id)) in allowed
    stream_id = stack.get_logical_id(stream.node.default_child)
    assert ("kinesis:GetRecords", arn_of(stream_id)) in allowed


def test_the_redrive_drains_the_quarantine_queue(stack: Any) -> None:
    consumer = KinesisConsumer(stack, "Replica", **consumer_code(), table=kinesis_table(stack))
    template = Template.from_stack(stack).to_json()
    _, function = redrive_function(template)
    allowed = grants(template, role_of(function))
    assert consumer.quarantine_queue is not None
    queue = arn_of(stack.get_logical_id(consumer.quarantine_queue.node.default_child))
    on_queue = {action for action, resource in allowed if resource == queue}
    assert {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"} <= on_queue
    assert "sqs:SendMessage" not in on_queue


def test_an_encrypted_quarantine_queue_is_decrypted_by_the_redrive(stack: Any) -> None:
    key = kms.Key(stack, "QuarantineKey", enable_key_rotation=True)
    queue = sqs.Queue(
        stack,
        "Quarantine",
        encryption=sqs.QueueEncryption.KMS,
        encryption_master_key=key,
        enforce_ssl=True,
        retention_period=Duration.days(14),
    )
    KinesisConsumer(
        stack, "Replica", **consumer_code(), table=kinesis_table(stack), quarantine_queue=queue
    )
    template = Template.from_stack(stack).to_json()
    _, function = redrive_function(template)
    variables = function["Environment"]["Variables"]
    queue_id = stack.get_logical_id(queue.node.default_child)
    assert variables["QUARANTINE_QUEUE_URL"] == {"Ref": queue_id}
    allowed = grants(template, role_of(function))
    assert ("sqs:ReceiveMessage", arn_of(queue_id)) in allowed
    assert ("kms:Decrypt", arn_of(stack.get_logical_id(key.node.default_child))) in allowed


def test_the_kinesis_redrive_template_passes_cfn_lint(stack: Any) -> None:
    KinesisConsumer(stack, "Replica", **consumer_code(), table=kinesis_table(stack))
    assert cfn_lint(Template.from_stack(stack).to_json()) == []
