"""StreamRedrive, synthesized in a minimal stack: a table with a stream, a consumer, two queues."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Match, Template

from cdc_constructs import RedriveConfigurationError
from cdc_constructs.redrive import StreamRedrive
from tests.cdc_constructs.support import cfn_lint

pytestmark = pytest.mark.xdist_group("redrive-constructs")


class World:
    """The stack around a StreamRedrive."""

    def __init__(
        self,
        layer_dir: Path,
        *,
        quarantine: bool = True,
        filters: tuple[Any, ...] = (),
        idempotency: bool = False,
    ) -> None:
        self.app = cdk.App()
        self.stack = cdk.Stack(self.app, "RedriveTest")
        self.table = dynamodb.TableV2(
            self.stack,
            "Orders",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            dynamo_stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
        )
        self.consumer = lambda_.Function(
            self.stack,
            "Consumer",
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler="index.handler",
            code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
            timeout=cdk.Duration.minutes(2),
        )
        self.on_failure = sqs.Queue(self.stack, "OnFailure")
        self.key = kms.Key(self.stack, "QuarantineKey")
        self.quarantine = (
            sqs.Queue(
                self.stack,
                "Quarantine",
                encryption=sqs.QueueEncryption.KMS,
                encryption_master_key=self.key,
            )
            if quarantine
            else None
        )
        self.layer = lambda_.LayerVersion(
            self.stack, "Runtime", code=lambda_.Code.from_asset(str(layer_dir))
        )
        self.idempotency = (
            dynamodb.TableV2(
                self.stack,
                "Idempotency",
                partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
            )
            if idempotency
            else None
        )
        self.redrive = StreamRedrive(
            self.stack,
            "Redrive",
            consumer_function=self.consumer,
            consumer_name="orders",
            stream_arn=self.table.table_stream_arn or "",
            on_failure_queue=self.on_failure,
            quarantine_queue=self.quarantine,
            layer=self.layer,
            filters=filters,
            idempotency_table=self.idempotency,
        )

    def ref(self, construct: Any) -> dict[str, Any]:
        return {"Ref": self.stack.get_logical_id(construct.node.default_child)}

    def arn(self, construct: Any, attribute: str = "Arn") -> dict[str, Any]:
        return {"Fn::GetAtt": [self.stack.get_logical_id(construct.node.default_child), attribute]}


@pytest.fixture(scope="module")
def layer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("layer")
    (directory / "python" / "cdc_consumer").mkdir(parents=True)
    (directory / "python" / "cdc_consumer" / "redrive_handler.py").write_text("handler = None\n")
    return directory


@pytest.fixture(scope="module")
def world(layer_dir: Path) -> World:
    return World(layer_dir)


@pytest.fixture(scope="module")
def template(world: World) -> Template:
    return Template.from_stack(world.stack)


def redrive_function(template: Template) -> dict[str, Any]:
    (function,) = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": "cdc_consumer.redrive_handler.handler"}},
    ).values()
    return function["Properties"]


def redrive_statements(template: Template, world: World) -> list[dict[str, Any]]:
    role = world.stack.get_logical_id(world.redrive.function.role.node.default_child)
    policies = template.find_resources(
        "AWS::IAM::Policy", {"Properties": {"Roles": [{"Ref": role}]}}
    )
    return [
        statement
        for policy in policies.values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_the_function_runs_the_redrive_handler_from_the_runtime_layer(
    template: Template, world: World
) -> None:
    function = redrive_function(template)
    assert function["Layers"] == [
        {"Ref": world.stack.get_logical_id(world.layer.node.default_child)}
    ]
    # The consumer's runtime and architecture: the layer is built for them.
    assert function["Runtime"] == "python3.14"
    assert function["Architectures"] == ["arm64"]
    assert function["Timeout"] == 900
    assert function["ReservedConcurrentExecutions"] == 1


def test_the_function_is_told_what_to_redrive_into(template: Template, world: World) -> None:
    environment = redrive_function(template)["Environment"]["Variables"]
    assert environment == {
        "CONSUMER_FUNCTION_NAME": world.ref(world.consumer),
        "CDC_CONSUMER_NAME": "orders",
        "STREAM_ARN": world.arn(world.table, "StreamArn"),
        "ON_FAILURE_QUEUE_URL": world.ref(world.on_failure),
        "QUARANTINE_QUEUE_URL": world.ref(world.quarantine),
        "CDC_METRICS_NAMESPACE": "CdcConstructs",
        # The consumer's 2 minutes plus 30 s: no message is started later than that.
        "REDRIVE_RESERVE_SECONDS": "150",
    }


def test_permissions_are_the_redrive_actions_on_these_resources_only(
    template: Template, world: World
) -> None:
    statements = redrive_statements(template, world)
    by_action = {tuple(sorted(_list(s["Action"]))): s["Resource"] for s in statements}

    assert by_action[("lambda:InvokeFunction",)] == world.arn(world.consumer)
    assert sorted(
        _list(
            by_action[
                (
                    "sqs:ChangeMessageVisibility",
                    "sqs:DeleteMessage",
                    "sqs:GetQueueAttributes",
                    "sqs:ReceiveMessage",
                )
            ]
        ),
        key=str,
    ) == sorted([world.arn(world.on_failure), world.arn(world.quarantine)], key=str)
    assert by_action[
        ("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator")
    ] == world.arn(world.table, "StreamArn")
    assert by_action[("kms:Decrypt",)] == world.arn(world.key)
    log_group = world.arn(world.redrive.log_group)
    assert by_action[("logs:CreateLogStream", "logs:PutLogEvents")] == log_group
    assert len(statements) == 5
    for statement in statements:
        assert statement["Effect"] == "Allow"
        assert not [a for a in _list(statement["Action"]) if "*" in a], statement
        assert "*" not in _list(statement["Resource"]), statement


def test_logs_are_kept_a_month_as_the_consumers(template: Template, world: World) -> None:
    log_group = world.stack.get_logical_id(world.redrive.log_group.node.default_child)
    assert redrive_function(template)["LoggingConfig"]["LogGroup"] == {"Ref": log_group}
    template.has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 30})


def test_the_role_has_no_managed_policies(template: Template, world: World) -> None:
    role = world.stack.get_logical_id(world.redrive.role.node.default_child)
    properties = template.to_json()["Resources"][role]["Properties"]
    assert "ManagedPolicyArns" not in properties


def test_an_alarm_fires_on_one_lost_record(template: Template) -> None:
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "CdcConstructs",
            "MetricName": "RedriveLostRecords",
            "Dimensions": [{"Name": "Consumer", "Value": "orders"}],
            "Statistic": "Sum",
            "Threshold": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "TreatMissingData": "notBreaching",
            "AlarmDescription": Match.string_like_regexp("docs/operations.md"),
        },
    )


def test_without_a_quarantine_queue_only_the_on_failure_queue_is_read_and_filters_passed_on(
    layer_dir: Path,
) -> None:
    ttl_deletions = {"userIdentity": {"type": ["Service"]}}
    world = World(layer_dir, quarantine=False, filters=(ttl_deletions,))
    template = Template.from_stack(world.stack)

    environment = redrive_function(template)["Environment"]["Variables"]
    assert "QUARANTINE_QUEUE_URL" not in environment
    assert json.loads(environment["CONSUMER_FILTERS"]) == [ttl_deletions]
    sqs_statements = [
        s for s in redrive_statements(template, world) if "sqs:ReceiveMessage" in s["Action"]
    ]
    assert [s["Resource"] for s in sqs_statements] == [world.arn(world.on_failure)]


def test_with_the_idempotency_table_it_may_write_its_lease_and_no_other_item(
    layer_dir: Path,
) -> None:
    """A redrive reading the quarantine hides its messages from any other reader, so each run
    takes the consumer's lease first (cdc_consumer.redrive.lease): PutItem and DeleteItem on
    that one item of the idempotency table, never on the consumer's markers."""
    world = World(layer_dir, idempotency=True)
    template = Template.from_stack(world.stack)

    environment = redrive_function(template)["Environment"]["Variables"]
    assert environment["IDEMPOTENCY_TABLE_NAME"] == world.ref(world.idempotency)
    (lease,) = [s for s in redrive_statements(template, world) if "dynamodb:PutItem" in s["Action"]]
    assert sorted(lease["Action"]) == ["dynamodb:DeleteItem", "dynamodb:PutItem"]
    assert lease["Resource"] == world.arn(world.idempotency)
    stream_arn = world.arn(world.table, "StreamArn")
    assert lease["Condition"] == {
        "ForAllValues:StringEquals": {
            "dynamodb:LeadingKeys": [{"Fn::Join": ["", ["orders#redrive-lease#", stream_arn]]}]
        }
    }


def test_props_are_checked_and_every_problem_named(layer_dir: Path) -> None:
    world = World(layer_dir)  # not the shared one: a refused construct stays in its tree
    imported = lambda_.Function.from_function_name(world.stack, "Imported", "orders-consumer")
    with pytest.raises(RedriveConfigurationError) as error:
        StreamRedrive(
            world.stack,
            "Bad",
            consumer_function=imported,
            consumer_name=" ",
            stream_arn="arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/x",
            on_failure_queue=world.on_failure,
            layer=world.layer,
            timeout=cdk.Duration.minutes(16),
        )
    assert [str(problem) for problem in error.value.problems] == [
        "consumer_name=' ': a non-empty string",
        "timeout='960 s': whole seconds in 1..900 (Lambda's limit)",
        "consumer_timeout=None: the consumer's timeout, a Duration: it cannot be read from "
        "consumer_function (not a lambda_.Function)",
    ]
    assert str(error.value).startswith("StreamRedrive 'Bad': 3 invalid props:")


@pytest.mark.parametrize(
    ("timeout", "expected"),
    [
        # Cannot wait for one invocation of the consumer (timeout 120 s) plus the margin.
        (
            cdk.Duration.minutes(2),
            r"timeout='120 s': longer than the consumer's timeout \(120 s\) plus 30 s",
        ),
        # aws-cdk-lib would fail on it inside jsii, after the construct was half built.
        (cdk.Duration.millis(899_500), r"timeout='899\.5 s': whole seconds in 1\.\.900"),
    ],
    ids=["shorter-than-one-invocation", "fractional"],
)
def test_a_timeout_the_redrive_cannot_run_with_is_refused_before_building(
    layer_dir: Path, timeout: cdk.Duration, expected: str
) -> None:
    world = World(layer_dir)
    with pytest.raises(RedriveConfigurationError, match=expected):
        StreamRedrive(
            world.stack,
            "Refused",
            consumer_function=world.consumer,
            consumer_name="orders",
            stream_arn="arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/x",
            on_failure_queue=world.on_failure,
            layer=world.layer,
            timeout=timeout,
        )
    assert world.stack.node.try_find_child("Refused") is None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_cfn_lint_is_clean(template: Template) -> None:
    assert cfn_lint(template.to_json()) == []
