"""StreamFanOut: the synthesized pipe, its role, DLQ, alarms and rules; cdk-nag and cfn-lint.

One app is synthesized per module (cdk-nag AwsSolutions + Serverless attached): an "order paid"
fan-out with every default (bus, DLQ and topic made) and two rules routing to two queues, and an
outbox fan-out given an existing bus, topic and KMS-encrypted DLQ.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import Acknowledgment, App, Duration, Stack, Validations
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from cdc_constructs import CdcConfigurationError, ChangeCaptureTable
from cdc_constructs.fan_out import FanOutConfigurationError, StreamFanOut

# One worker runs the whole module under `pytest -n 2 --dist loadgroup`, so the app is
# synthesized once, not once per worker.
pytestmark = pytest.mark.xdist_group("fan_out_synth")

SOURCE = "com.example.orders"
ORDER_PAID = {
    "eventName": ["MODIFY"],
    "dynamodb": {
        "NewImage": {"status": {"S": ["paid"]}},
        "OldImage": {"status": {"S": [{"anything-but": ["paid"]}]}},
    },
}

# A MODIFY record as DynamoDB Streams delivers it to a pipe (shape from AWS's documentation).
PAID_RECORD = {
    "eventID": "c4ca4238a0b923820dcc509a6f75849b",
    "eventName": "MODIFY",
    "eventVersion": "1.1",
    "eventSource": "aws:dynamodb",
    "awsRegion": "us-east-1",
    "dynamodb": {
        "ApproximateCreationDateTime": 1767225600,
        "Keys": {"pk": {"S": "ORDER#1"}},
        "NewImage": {
            "pk": {"S": "ORDER#1"},
            "status": {"S": "paid"},
            "amount": {"N": "12345678901234567890.25"},
            "customerId": {"S": 'c-"7"'},
            "gift": {"BOOL": True},
            "expireAt": {"N": "1800000000"},
        },
        "OldImage": {"pk": {"S": "ORDER#1"}, "status": {"S": "pending"}},
        "SequenceNumber": "111",
        "SizeBytes": 26,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    },
    "eventSourceARN": "arn:aws:dynamodb:us-east-1:111122223333:table/orders/stream/2026",
}


def _table(stack: Stack, name: str = "Orders", **overrides: Any) -> dynamodb.TableV2:
    props: dict[str, Any] = {
        "partition_key": dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        "dynamo_stream": dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
        "point_in_time_recovery_specification": dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
    }
    props.update(overrides)
    return dynamodb.TableV2(stack, name, **props)


def _secure_queue(stack: Stack, name: str, **props: Any) -> sqs.Queue:
    return sqs.Queue(
        stack, name, encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True, **props
    )


@dataclass
class Synthesized:
    order_paid: Template
    outbox: Template
    order_paid_json: dict[str, Any]
    outbox_json: dict[str, Any]
    nag_error: str | None
    nag_report: dict[str, Any] | None
    acknowledgements: list[tuple[str, str, str]]  # (construct path, rule id, reason)


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    outdir = tmp_path_factory.mktemp("fan_out_assembly")
    app = App(outdir=str(outdir))

    paid_stack = Stack(app, "OrderPaidStack")
    paid = StreamFanOut(
        paid_stack,
        "OrderPaid",
        table=_table(paid_stack),
        source=SOURCE,
        detail_type="OrderPaid",
        filters=[ORDER_PAID],
        key_attributes={"pk": "S"},
        new_image_attributes={"status": "S", "amount": "N", "customerId": "S", "gift": "BOOL"},
        old_image_attributes={"status": "S"},
    )
    for name in ("Billing", "Shipping"):
        # The rule's DLQ holds events EventBridge could not deliver to the target queue; the
        # target queue's redrive policy moves poison messages there too.
        rule_dlq = _secure_queue(
            paid_stack, f"{name}DeadLetters", retention_period=Duration.days(14)
        )
        Validations.of(rule_dlq).acknowledge(
            Acknowledgment(
                id="Serverless-SQSRedrivePolicy",
                reason="This queue is the dead-letter queue of the rule and its target queue; "
                "a dead-letter queue for it would only move the same messages again.",
            )
        )
        queue = _secure_queue(
            paid_stack,
            f"{name}Queue",
            dead_letter_queue=sqs.DeadLetterQueue(queue=rule_dlq, max_receive_count=5),
        )
        events.Rule(
            paid_stack,
            f"{name}Rule",
            event_bus=paid.event_bus,
            event_pattern=events.EventPattern(source=[SOURCE], detail_type=["OrderPaid"]),
            targets=[targets.SqsQueue(queue, dead_letter_queue=rule_dlq, retry_attempts=5)],
        )

    outbox_stack = Stack(app, "OutboxStack")
    key = kms.Key(outbox_stack, "QueueKey", enable_key_rotation=True)
    given_dlq = sqs.Queue(
        outbox_stack,
        "GivenDeadLetters",
        encryption=sqs.QueueEncryption.KMS,
        encryption_master_key=key,
        enforce_ssl=True,
        retention_period=Duration.days(14),
    )
    reason = "The outbox pipe's dead-letter queue; a dead-letter queue for it would only move "
    reason += "the same pointers again."
    Validations.of(given_dlq).acknowledge(
        Acknowledgment(id="AwsSolutions-SQS3", reason=reason),
        Acknowledgment(id="Serverless-SQSRedrivePolicy", reason=reason),
    )
    StreamFanOut(
        outbox_stack,
        "Outbox",
        table=_table(outbox_stack),
        source=SOURCE,
        outbox_key_prefix="OUTBOX#",
        event_bus=events.EventBus(outbox_stack, "SharedBus"),
        alarm_topic=sns.Topic(outbox_stack, "SharedAlarms", enforce_ssl=True),
        dead_letter_queue=given_dlq,
    )

    Validations.of(app).add_plugins(AwsSolutionsChecks(app), ServerlessChecks(app))
    nag_error = None
    try:
        app.synth()
    except RuntimeError as error:  # cdk-nag findings interrupt synthesis
        nag_error = str(error)
    report_path = Path(outdir, "validation-report.json")
    report = json.loads(report_path.read_text()) if report_path.exists() else None

    key_name = Validations.ACKNOWLEDGED_RULES_METADATA_KEY
    acknowledgements = [
        (construct.node.path, rule, reason)
        for construct in app.node.find_all()
        for entry in construct.node.metadata
        if entry.type == key_name
        for rule, reason in entry.data.items()
    ]
    paid_json = json.loads(Path(outdir, "OrderPaidStack.template.json").read_text())
    outbox_json = json.loads(Path(outdir, "OutboxStack.template.json").read_text())
    return Synthesized(
        order_paid=Template.from_json(paid_json),
        outbox=Template.from_json(outbox_json),
        order_paid_json=paid_json,
        outbox_json=outbox_json,
        nag_error=nag_error,
        nag_report=report,
        acknowledgements=acknowledgements,
    )


def _only(template: Template, resource_type: str) -> tuple[str, dict[str, Any]]:
    resources = template.find_resources(resource_type)
    assert len(resources) == 1, f"expected one {resource_type}, found {list(resources)}"
    return next(iter(resources.items()))


def _logical_id(template: Template, resource_type: str, path_fragment: str) -> str:
    matches = [
        logical_id
        for logical_id in template.find_resources(resource_type)
        if path_fragment in logical_id
    ]
    assert len(matches) == 1, f"{path_fragment} {resource_type}: {matches}"
    return matches[0]


def _render(input_template: str, record: dict[str, Any]) -> Any:
    """Fill the template's placeholders from ``record`` as Pipes does: a quoted placeholder
    takes the string value inside the quotes, a bare one the JSON value."""

    def lookup(path: str) -> Any:
        value: Any = record
        for segment in path.removeprefix("$.").split("."):
            value = value[segment]
        return value

    def quoted(match: re.Match[str]) -> str:
        value = lookup(match.group(1))
        assert isinstance(value, str), f"{match.group(1)} is quoted but is {value!r}"
        return json.dumps(value)

    text = re.sub(r'"<(\$[^>]+)>"', quoted, input_template)
    text = re.sub(r"<(\$[^>]+)>", lambda m: json.dumps(lookup(m.group(1))), text)
    return json.loads(text)


# ---- the pipe's source: safe stream settings ---------------------------------------------------


def test_pipe_reads_the_stream_with_finite_retries_age_bisect_and_a_dlq(
    synthesized: Synthesized,
) -> None:
    template = synthesized.order_paid
    _, pipe = _only(template, "AWS::Pipes::Pipe")
    table_id = _logical_id(template, "AWS::DynamoDB::GlobalTable", "Orders")
    dlq_id = _logical_id(template, "AWS::SQS::Queue", "OrderPaidDeadLetterQueue")
    props = pipe["Properties"]
    assert props["Source"] == {"Fn::GetAtt": [table_id, "StreamArn"]}
    assert props["SourceParameters"]["DynamoDBStreamParameters"] == {
        "StartingPosition": "TRIM_HORIZON",
        "BatchSize": 10,
        "MaximumRetryAttempts": 5,
        "MaximumRecordAgeInSeconds": 3600,
        "OnPartialBatchItemFailure": "AUTOMATIC_BISECT",
        "ParallelizationFactor": 1,
        "DeadLetterConfig": {"Arn": {"Fn::GetAtt": [dlq_id, "Arn"]}},
    }


def test_filters_reach_the_pipe_exactly_as_given(synthesized: Synthesized) -> None:
    _, pipe = _only(synthesized.order_paid, "AWS::Pipes::Pipe")
    filters = pipe["Properties"]["SourceParameters"]["FilterCriteria"]["Filters"]
    assert [json.loads(f["Pattern"]) for f in filters] == [ORDER_PAID]


def test_dead_letter_queue_is_encrypted_tls_only_and_keeps_14_days(
    synthesized: Synthesized,
) -> None:
    template = synthesized.order_paid
    dlq_id = _logical_id(template, "AWS::SQS::Queue", "OrderPaidDeadLetterQueue")
    template.has_resource_properties(
        "AWS::SQS::Queue", {"MessageRetentionPeriod": 1209600, "SqsManagedSseEnabled": True}
    )
    template.has_resource_properties(
        "AWS::SQS::QueuePolicy",
        {
            "Queues": [{"Ref": dlq_id}],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            },
        },
    )


# ---- the target: a clean domain event on the bus ---------------------------------------------


def test_target_is_the_bus_with_source_and_detail_type(synthesized: Synthesized) -> None:
    template = synthesized.order_paid
    _, pipe = _only(template, "AWS::Pipes::Pipe")
    bus_id, _ = _only(template, "AWS::Events::EventBus")
    table_id = _logical_id(template, "AWS::DynamoDB::GlobalTable", "Orders")
    assert pipe["Properties"]["Target"] == {"Fn::GetAtt": [bus_id, "Arn"]}
    assert pipe["Properties"]["TargetParameters"]["EventBridgeEventBusParameters"] == {
        "Source": SOURCE,
        "DetailType": "OrderPaid",
        "Resources": [{"Fn::GetAtt": [table_id, "Arn"]}],
    }


def test_input_template_turns_a_stream_record_into_a_clean_domain_event(
    synthesized: Synthesized,
) -> None:
    _, pipe = _only(synthesized.order_paid, "AWS::Pipes::Pipe")
    detail = _render(pipe["Properties"]["TargetParameters"]["InputTemplate"], PAID_RECORD)
    assert detail == {
        "eventId": "c4ca4238a0b923820dcc509a6f75849b",
        "eventName": "MODIFY",
        "sequenceNumber": "111",
        "approximateCreationDateTime": 1767225600,
        "keys": {"pk": "ORDER#1"},
        # N stays an exact decimal string; undeclared attributes (expireAt) stay off the bus.
        "newImage": {
            "status": "paid",
            "amount": "12345678901234567890.25",
            "customerId": 'c-"7"',
            "gift": True,
        },
        "oldImage": {"status": "pending"},
    }


def test_detail_type_defaults_to_the_change_name() -> None:
    stack = Stack(App(), "S")
    fan = StreamFanOut(stack, "F", table=_table(stack), source=SOURCE)
    parameters = Template.from_stack(stack).find_resources("AWS::Pipes::Pipe")
    (pipe,) = parameters.values()
    bus_parameters = pipe["Properties"]["TargetParameters"]["EventBridgeEventBusParameters"]
    assert bus_parameters["DetailType"] == "$.eventName"
    assert "FilterCriteria" not in pipe["Properties"]["SourceParameters"]
    assert _render(fan.input_template, PAID_RECORD) == {
        "eventId": PAID_RECORD["eventID"],
        "eventName": "MODIFY",
        "sequenceNumber": "111",
        "approximateCreationDateTime": 1767225600,
    }


def test_two_rules_on_the_bus_route_order_paid_to_two_queues(synthesized: Synthesized) -> None:
    template = synthesized.order_paid
    bus_id, _ = _only(template, "AWS::Events::EventBus")
    rules = template.find_resources("AWS::Events::Rule")
    assert len(rules) == 2
    routed_to = set()
    for rule in rules.values():
        props = rule["Properties"]
        assert props["EventBusName"] == {"Ref": bus_id}
        assert props["EventPattern"] == {"source": [SOURCE], "detail-type": ["OrderPaid"]}
        (target,) = props["Targets"]
        assert "DeadLetterConfig" in target and target["RetryPolicy"]["MaximumRetryAttempts"] == 5
        routed_to.add(target["Arn"]["Fn::GetAtt"][0])
    assert {queue_id.split("Queue")[0] for queue_id in routed_to} == {"Billing", "Shipping"}


# ---- least privilege -------------------------------------------------------------------------


def _role_statements(template_json: dict[str, Any]) -> list[dict[str, Any]]:
    statements = []
    for resource in template_json["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy":
            statements += resource["Properties"]["PolicyDocument"]["Statement"]
        if resource["Type"] == "AWS::IAM::Role":
            for policy in resource["Properties"].get("Policies", []):
                statements += policy["PolicyDocument"]["Statement"]
    return statements


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else actions


def test_role_has_only_the_actions_the_pipe_needs_on_its_own_resources(
    synthesized: Synthesized,
) -> None:
    template = synthesized.order_paid
    table_id = _logical_id(template, "AWS::DynamoDB::GlobalTable", "Orders")
    bus_id, _ = _only(template, "AWS::Events::EventBus")
    dlq_id = _logical_id(template, "AWS::SQS::Queue", "OrderPaidDeadLetterQueue")
    logs_id, _ = _only(template, "AWS::Logs::LogGroup")
    granted = {
        (action, json.dumps(statement["Resource"], sort_keys=True))
        for statement in _role_statements(synthesized.order_paid_json)
        for action in _actions(statement)
    }

    def on(logical_id: str, attribute: str = "Arn") -> str:
        return json.dumps({"Fn::GetAtt": [logical_id, attribute]})

    assert granted == {
        ("dynamodb:DescribeStream", on(table_id, "StreamArn")),
        # No resource-level permission: the Pipes guide lists it for a DynamoDB stream source.
        ("dynamodb:ListStreams", '"*"'),
        ("dynamodb:GetRecords", on(table_id, "StreamArn")),
        ("dynamodb:GetShardIterator", on(table_id, "StreamArn")),
        ("events:PutEvents", on(bus_id)),
        ("sqs:SendMessage", on(dlq_id)),
        ("logs:CreateLogStream", on(logs_id)),
        ("logs:PutLogEvents", on(logs_id)),
    }
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    {
                        "Action": "sts:AssumeRole",
                        "Effect": "Allow",
                        "Principal": {"Service": "pipes.amazonaws.com"},
                        "Condition": {
                            "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
                        },
                    }
                ]
            }
        },
    )


@pytest.mark.parametrize("stack", ["order_paid_json", "outbox_json"])
def test_no_role_policy_has_a_wildcard_action(synthesized: Synthesized, stack: str) -> None:
    statements = _role_statements(getattr(synthesized, stack))
    assert statements
    assert not [a for s in statements for a in _actions(s) if "*" in a]


def test_a_kms_encrypted_dlq_gets_exactly_the_key_use_sending_needs(
    synthesized: Synthesized,
) -> None:
    key_id, _ = _only(synthesized.outbox, "AWS::KMS::Key")
    key_actions = {
        action
        for statement in _role_statements(synthesized.outbox_json)
        if statement["Resource"] == {"Fn::GetAtt": [key_id, "Arn"]}
        for action in _actions(statement)
    }
    assert key_actions == {"kms:GenerateDataKey", "kms:Decrypt"}


# ---- logs and alarms ----------------------------------------------------------------------


def test_pipe_logs_errors_to_a_log_group_with_retention_without_payloads(
    synthesized: Synthesized,
) -> None:
    template = synthesized.order_paid
    logs_id, log_group = _only(template, "AWS::Logs::LogGroup")
    _, pipe = _only(template, "AWS::Pipes::Pipe")
    assert log_group["Properties"]["RetentionInDays"] == 30
    assert pipe["Properties"]["LogConfiguration"] == {
        "Level": "ERROR",
        "CloudwatchLogsLogDestination": {"LogGroupArn": {"Fn::GetAtt": [logs_id, "Arn"]}},
    }


def test_alarms_on_pipe_failures_and_dlq_depth_notify_the_topic(
    synthesized: Synthesized,
) -> None:
    template = synthesized.order_paid
    pipe_id, _ = _only(template, "AWS::Pipes::Pipe")
    topic_id, _ = _only(template, "AWS::SNS::Topic")
    dlq_id = _logical_id(template, "AWS::SQS::Queue", "OrderPaidDeadLetterQueue")
    alarms = template.find_resources("AWS::CloudWatch::Alarm").values()
    by_metric = {alarm["Properties"]["MetricName"]: alarm["Properties"] for alarm in alarms}
    assert set(by_metric) == {
        "ExecutionFailed",
        "ExecutionPartiallyFailed",
        "ExecutionTimeout",
        "ApproximateNumberOfMessagesVisible",
        "ApproximateAgeOfOldestMessage",
    }
    # Its dead-letter message points into the stream, which keeps the records 24 h after
    # their write; the pipe gave up on them at most 1 h after it: half of the 23 h left.
    age = by_metric.pop("ApproximateAgeOfOldestMessage")
    assert age["Threshold"] == 23 * 3600 // 2 and age["AlarmActions"] == [{"Ref": topic_id}]
    assert "the stream trims its records 23 hours after it failed" in age["AlarmDescription"]
    for props in by_metric.values():
        assert props["Threshold"] == 1
        assert props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert props["AlarmActions"] == [{"Ref": topic_id}]
    for name in ("ExecutionFailed", "ExecutionPartiallyFailed", "ExecutionTimeout"):
        assert by_metric[name]["Namespace"] == "AWS/EventBridge/Pipes"
        assert by_metric[name]["Dimensions"] == [{"Name": "PipeName", "Value": {"Ref": pipe_id}}]
        assert by_metric[name]["Statistic"] == "Sum"
    dlq_alarm = by_metric["ApproximateNumberOfMessagesVisible"]
    assert dlq_alarm["Namespace"] == "AWS/SQS"
    assert dlq_alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq_id, "QueueName"]}}
    ]


def test_a_made_alarm_topic_is_the_librarys_encrypted_tls_only_topic(
    synthesized: Synthesized,
) -> None:
    topic_id, topic = _only(synthesized.order_paid, "AWS::SNS::Topic")
    key_id, _ = _only(synthesized.order_paid, "AWS::KMS::Key")
    assert topic["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    synthesized.order_paid.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "Topics": [{"Ref": topic_id}],
            "PolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
                    )
                ]
            },
        },
    )


# ---- the outbox option -------------------------------------------------------------------------


def test_outbox_lets_only_inserts_of_prefixed_keys_through(synthesized: Synthesized) -> None:
    _, pipe = _only(synthesized.outbox, "AWS::Pipes::Pipe")
    filters = pipe["Properties"]["SourceParameters"]["FilterCriteria"]["Filters"]
    assert [json.loads(f["Pattern"]) for f in filters] == [
        {"eventName": ["INSERT"], "dynamodb": {"Keys": {"pk": {"S": [{"prefix": "OUTBOX#"}]}}}}
    ]


def test_outbox_events_carry_the_outbox_items_type_and_payload(synthesized: Synthesized) -> None:
    template = synthesized.outbox
    _, pipe = _only(template, "AWS::Pipes::Pipe")
    bus_id = _logical_id(template, "AWS::Events::EventBus", "SharedBus")
    assert pipe["Properties"]["Target"] == {"Fn::GetAtt": [bus_id, "Arn"]}
    target = pipe["Properties"]["TargetParameters"]
    assert target["EventBridgeEventBusParameters"]["DetailType"] == (
        "$.dynamodb.NewImage.eventType.S"
    )
    payload = json.dumps({"orderId": "1", "note": 'say "hi"'})
    record = {
        "eventID": "e1",
        "eventName": "INSERT",
        "dynamodb": {
            "Keys": {"pk": {"S": "OUTBOX#u-1"}},
            "NewImage": {
                "pk": {"S": "OUTBOX#u-1"},
                "eventId": {"S": "u-1"},
                "eventType": {"S": "OrderPaid"},
                "payload": {"S": payload},
                "occurredAt": {"S": "2026-03-01T12:00:00.000+00:00"},
                "expireAt": {"N": "1773000000"},
            },
            "SequenceNumber": "222",
        },
    }
    assert _render(target["InputTemplate"], record) == {
        "eventId": "u-1",
        "eventType": "OrderPaid",
        "occurredAt": "2026-03-01T12:00:00.000+00:00",
        "payload": payload,
        "streamEventId": "e1",
        "sequenceNumber": "222",
    }


def test_outbox_uses_the_given_bus_topic_and_queue_and_makes_none(
    synthesized: Synthesized,
) -> None:
    template = synthesized.outbox
    assert len(template.find_resources("AWS::Events::EventBus")) == 1
    assert len(template.find_resources("AWS::SNS::Topic")) == 1
    assert len(template.find_resources("AWS::SQS::Queue")) == 1


# ---- cdk-nag and cfn-lint -------------------------------------------------------------------


def test_cdk_nag_finds_nothing_unacknowledged(synthesized: Synthesized) -> None:
    violations = [
        (report["pluginName"], violation["ruleName"], construct["constructPath"])
        for report in (synthesized.nag_report or {}).get("pluginReports", [])
        for violation in report["violations"]
        for construct in violation["violatingConstructs"]
    ]
    assert violations == []
    assert synthesized.nag_error is None


def test_every_acknowledgement_is_scoped_to_a_queue_and_gives_its_reason(
    synthesized: Synthesized,
) -> None:
    """... or to the pipe's policy, for dynamodb:ListStreams (no resource-level permission)."""
    assert synthesized.acknowledgements, "the DLQs' acknowledgements are expected"
    for path, rule, reason in synthesized.acknowledgements:
        if rule.endswith("AwsSolutions-IAM5[Resource::*]"):
            assert path.endswith("/Policy") and "ListStreams" in reason
            continue
        assert rule.split("::")[-1] in {"AwsSolutions-SQS3", "Serverless-SQSRedrivePolicy"}
        assert "DeadLetter" in path, f"{rule} acknowledged on {path}, not on a dead-letter queue"
        assert len(reason) > 40


@pytest.mark.parametrize("stack", ["order_paid_json", "outbox_json"])
def test_cfn_lint_is_clean(synthesized: Synthesized, stack: str) -> None:
    from cfnlint.api import lint

    matches = lint(json.dumps(getattr(synthesized, stack)))
    assert [f"{m.rule.id} {m.message} ({'/'.join(map(str, m.path))})" for m in matches] == []


# ---- validation: one error naming every problem, before anything is built -------------------


def test_every_bad_prop_is_named_in_one_error_before_anything_is_built() -> None:
    stack = Stack(App(), "S")
    table = _table(stack)
    with pytest.raises(FanOutConfigurationError) as raised:
        StreamFanOut(
            stack,
            "F",
            table=table,
            source="aws.orders",
            detail_type="x" * 129,
            batch_size=0,
            retry_attempts=-1,
            max_record_age=Duration.hours(24),
            max_batching_window=Duration.minutes(6),
            parallelization_factor=11,
            filters=[{"eventName": ["INSERT"]}] * 6,
            new_image_attributes={"items": "L", "total amount": "N"},
            log_level="DEBUG",
        )
    problems = raised.value.problems
    message = str(raised.value)
    assert isinstance(raised.value, CdcConfigurationError)
    assert message.startswith("StreamFanOut 'F': 11 invalid props:")
    expected = [
        "source='aws.orders': a source not starting with 'aws.' (reserved by AWS)",
        "detail_type='129 characters': at most 128 characters (EventBridge's limit)",
        "batch_size=0: a number in 1..10000",
        "retry_attempts=-1: a number in 0..10000; finite: -1 (AWS's default) retries",
        "max_record_age='86400 s': whole seconds in 60..86399",
        "max_batching_window='360 s': whole seconds in 0..300",
        "parallelization_factor=11: a number in 1..10",
        "filters='6 patterns': at most 5 patterns per event source mapping or pipe",
        "new_image_attributes['items']='L': one of S, N, BOOL",
        "new_image_attributes['total amount']='N': an attribute name a Pipes JSON path can read",
        "log_level='DEBUG': one of OFF, ERROR, INFO, TRACE",
    ]
    for fragment in expected:
        assert fragment in message
    assert len(problems) == len(expected)
    assert stack.node.try_find_child("F") is None


def test_a_table_without_a_stream_is_rejected() -> None:
    stack = Stack(App(), "S")
    table = dynamodb.TableV2(
        stack, "T", partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
    )
    with pytest.raises(FanOutConfigurationError, match=r"table='S/T': a table with a stream"):
        StreamFanOut(stack, "F", table=table, source=SOURCE)


@pytest.mark.parametrize(
    ("view", "props", "expected"),
    [
        (
            "KEYS_ONLY",
            {"new_image_attributes": {"a": "S"}},
            "view is KEYS_ONLY, which carries no NewImage",
        ),
        ("NEW_IMAGE", {"filters": [ORDER_PAID]}, "view type NEW_IMAGE carries no OldImage"),
        ("OLD_IMAGE", {"outbox_key_prefix": "OUTBOX#"}, "carries NewImage, where outbox events"),
    ],
)
def test_images_the_stream_view_does_not_carry_are_rejected(
    view: str, props: dict[str, Any], expected: str
) -> None:
    stack = Stack(App(), "S")
    table = _table(stack, dynamo_stream=dynamodb.StreamViewType[view])
    with pytest.raises(FanOutConfigurationError, match=re.escape(expected)):
        StreamFanOut(stack, "F", table=table, source=SOURCE, **props)


def test_a_change_capture_table_is_accepted() -> None:
    stack = Stack(App(), "S")
    orders = ChangeCaptureTable(
        stack,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
    )
    fan = StreamFanOut(stack, "F", table=orders, source=SOURCE, filters=[ORDER_PAID])
    assert stack.resolve(fan.pipe.source) == stack.resolve(orders.table_stream_arn)


def test_an_imported_table_with_a_stream_arn_is_accepted() -> None:
    stack = Stack(App(), "S")
    stream_arn = "arn:aws:dynamodb:us-east-1:111122223333:table/orders/stream/2026-01-01T00:00"
    table = dynamodb.TableV2.from_table_attributes(
        stack, "Imported", table_name="orders", table_stream_arn=stream_arn
    )
    fan = StreamFanOut(stack, "F", table=table, source=SOURCE, outbox_key_prefix="OUTBOX#")
    assert stack.resolve(fan.pipe.source) == stream_arn


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"filters": [ORDER_PAID]}, "filters='given with outbox_key_prefix': left out"),
        ({"detail_type": "X", "new_image_attributes": {"a": "S"}}, "detail_type, new_image"),
        ({"outbox_key_prefix": ""}, "outbox_key_prefix='': the outbox items' key prefix"),
        ({"outbox_key_attribute": "p k"}, "outbox_key_attribute='p k'"),
    ],
)
def test_outbox_props_conflicts_are_rejected(props: dict[str, Any], expected: str) -> None:
    stack = Stack(App(), "S")
    arguments = {"outbox_key_prefix": "OUTBOX#"} | props
    with pytest.raises(FanOutConfigurationError, match=re.escape(expected)):
        StreamFanOut(stack, "F", table=_table(stack), source=SOURCE, **arguments)


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"filters": {"eventName": ["INSERT"]}}, "a list of filter patterns"),
        ({"filters": [{}]}, "filters[0]={}: a non-empty dict (a filter pattern)"),
        ({"filters": [{"a": {1, 2}}]}, "filters[0]={'a': {1, 2}}: JSON-serializable"),
        ({"filters": [{"eventname": ["INSERT"]}]}, "eventname never matches"),
        ({"detail_type": "$.dynamodb..x"}, "a Pipes JSON path: dot notation"),
        ({"source": ""}, "source='': the events' source"),
        ({"key_attributes": {}}, "key_attributes={}: a dict of attribute name -> type"),
        (
            {"max_record_age": 3600},
            "max_record_age=3600: got an int; max_record_age is an aws_cdk.Duration of whole "
            "seconds in 60..86399",
        ),
        (
            {"new_image_attributes": {f"attribute_{i:03}": "S" for i in range(200)}},
            "at most 8192 characters (Pipes' limit): declare fewer attributes",
        ),
    ],
)
def test_other_bad_props_are_named(props: dict[str, Any], expected: str) -> None:
    stack = Stack(App(), "S")
    arguments = {"source": SOURCE} | props
    with pytest.raises(FanOutConfigurationError, match=re.escape(expected)):
        StreamFanOut(stack, "F", table=_table(stack), **arguments)


def test_add_rule_gives_the_target_a_dead_letter_queue_and_alarms_when_an_event_is_lost() -> None:
    """A rule behind the fan-out loses an event it can put neither on its target nor on its
    dead-letter queue: add_rule makes both alarms, and the queue's depth and age alarms."""
    from aws_cdk import aws_events as events
    from aws_cdk import aws_events_targets as targets
    from aws_cdk import aws_sqs as sqs

    stack = Stack(App(), "S")
    fan = StreamFanOut(stack, "F", table=_table(stack), source=SOURCE)
    queue = sqs.Queue(stack, "Invoicing")
    route = fan.add_rule(
        "Invoicing",
        event_pattern=events.EventPattern(source=[SOURCE]),
        target=lambda safety: targets.SqsQueue(queue, **safety),
    )
    assert fan.rules == {"Invoicing": route}
    template = Template.from_stack(stack).to_json()
    rule = template["Resources"][stack.get_logical_id(route.rule.node.default_child)]
    (target,) = rule["Properties"]["Targets"]
    dlq = stack.get_logical_id(route.dead_letter_queue.node.default_child)
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [dlq, "Arn"]}}
    assert target["RetryPolicy"] == {"MaximumEventAgeInSeconds": 3600, "MaximumRetryAttempts": 5}
    assert list(route.alarms) == [
        "FailedInvocations",
        "InvocationsFailedToBeSentToDlq",
        "DeadLetterQueue",
        "DeadLetterQueueAge",
    ]
    rule_id = stack.get_logical_id(route.rule.node.default_child)
    bus_id = stack.get_logical_id(fan.event_bus.node.default_child)
    for name in ("FailedInvocations", "InvocationsFailedToBeSentToDlq"):
        alarm = template["Resources"][stack.get_logical_id(route.alarms[name].node.default_child)]
        props = alarm["Properties"]
        assert (props["Namespace"], props["MetricName"], props["Threshold"]) == (
            "AWS/Events",
            name,
            1,
        )
        assert sorted(props["Dimensions"], key=lambda d: d["Name"]) == [
            {"Name": "EventBusName", "Value": {"Ref": bus_id}},
            {"Name": "RuleName", "Value": {"Ref": rule_id}},
        ]
    age = route.alarms["DeadLetterQueueAge"].node.default_child
    assert template["Resources"][stack.get_logical_id(age)]["Properties"]["Threshold"] == 7 * 86400
