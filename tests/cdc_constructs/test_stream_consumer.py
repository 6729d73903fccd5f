"""StreamConsumer's synthesized defaults, bring-your-own resources and escape hatches."""

from __future__ import annotations

import json
import re
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from cdc_constructs import (
    CdcConfigurationError,
    ChangeCaptureTable,
    IdempotencyTable,
    StreamConsumer,
    StreamFilters,
    StreamRedrive,
)
from cdc_constructs.function_options import HANDLER_DOCS
from cdc_constructs.redrive import REDRIVE_HANDLER
from tests.cdc_constructs.support import (
    arn_of,
    cfn_lint,
    consumer_code,
    consumer_error,
    grants,
    logical_id,
    only,
    resources,
    with_code,
)

STR = dynamodb.AttributeType.STRING
PK = dynamodb.Attribute(name="pk", type=STR)


def _consumer(stack: cdk.Stack, **props) -> StreamConsumer:
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    return StreamConsumer(stack, "Consumer", table=table, **with_code(props))


def _consumer_function(template: dict) -> dict:
    """The consumer's function (not its redrive function)."""
    (function,) = [
        r["Properties"]
        for r in resources(template, "AWS::Lambda::Function").values()
        if r["Properties"]["Handler"] != REDRIVE_HANDLER
    ]
    return function


def _existing_function(stack: cdk.Stack, **props) -> lambda_.Function:
    """A function made outside StreamConsumer (the ``function`` prop)."""
    return lambda_.Function(
        stack,
        "Mine",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(e, c):\n    return {}\n"),
        **props,
    )


def _redrive_environment(template: dict) -> dict:
    function = resources(template, "AWS::Lambda::Function")[
        logical_id(template, "ConsumerRedriveFunction")
    ]
    return function["Properties"]["Environment"]["Variables"]


@pytest.fixture
def default_consumer(stack):
    consumer = _consumer(stack)
    return consumer, Template.from_stack(stack).to_json()


def test_mapping_defaults(default_consumer):
    _, template = default_consumer
    mapping = only(template, "AWS::Lambda::EventSourceMapping")
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    assert mapping["BatchSize"] == 100
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["MaximumRetryAttempts"] == 5
    assert mapping["MaximumRecordAgeInSeconds"] == 3600
    assert mapping["ParallelizationFactor"] == 1
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["MetricsConfig"] == {"Metrics": ["EventCount"]}
    assert mapping["TumblingWindowInSeconds"] == 900
    assert "MaximumBatchingWindowInSeconds" not in mapping
    assert "FilterCriteria" not in mapping
    assert mapping["EventSourceArn"] == {
        "Fn::GetAtt": [logical_id(template, "OrdersTable"), "StreamArn"]
    }
    assert mapping["DestinationConfig"] == {
        "OnFailure": {
            "Destination": {
                "Fn::GetAtt": [logical_id(template, "ConsumerFailedBatchesBucket"), "Arn"]
            }
        }
    }


def test_quarantine_queue_is_encrypted_tls_only_and_kept_14_days(default_consumer):
    _, template = default_consumer
    queues = resources(template, "AWS::SQS::Queue")
    assert len(queues) == 1  # the on-failure destination is a bucket by default
    for queue_id, queue in queues.items():
        assert queue["Properties"] == {
            "MessageRetentionPeriod": 14 * 24 * 3600,
            "SqsManagedSseEnabled": True,
        }
        (policy,) = [
            p["Properties"]
            for p in resources(template, "AWS::SQS::QueuePolicy").values()
            if p["Properties"]["Queues"] == [{"Ref": queue_id}]
        ]
        (deny,) = policy["PolicyDocument"]["Statement"]
        assert deny["Effect"] == "Deny"
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_function_defaults(default_consumer):
    _, template = default_consumer
    function = _consumer_function(template)
    assert function["Runtime"] == "python3.14"
    assert function["Architectures"] == ["arm64"]
    assert function["Handler"] == "cdc_consumer.window_handler.handler"  # windowed: see below
    assert function["Environment"]["Variables"]["CDC_HANDLER"] == "index.handler"
    assert function["MemorySize"] == 256
    assert function["Timeout"] == 60
    assert function["Layers"] == [{"Ref": logical_id(template, "CdcConsumerRuntimeLayer")}]
    assert "TracingConfig" not in function
    env = function["Environment"]["Variables"]
    assert env == {
        "QUARANTINE_BUCKET_NAME": {"Ref": logical_id(template, "ConsumerFailedBatchesBucket")},
        "CDC_CONSUMER_NAME": "Consumer",
        "IDEMPOTENCY_TABLE_NAME": {"Ref": logical_id(template, "ConsumerIdempotencyTable")},
        "CDC_LEDGER_TABLE_NAME": {
            "Ref": logical_id(template, "ConsumerIdempotencyTableLedgerTable")
        },
        "QUARANTINE_QUEUE_URL": {"Ref": logical_id(template, "ConsumerQuarantineQueue")},
        "CDC_METRICS_NAMESPACE": "CdcConstructs",
        # The replay windows (cdc_constructs.marker_lifetime): the 1 h record age, then 14 days
        # in the failed-batch bucket, then 14 days in the quarantine, plus a day.
        "CDC_MARKER_TTL_SECONDS": str(3600 + (14 + 1 + 14 + 1) * 24 * 3600),
        "CDC_HANDLER": "index.handler",  # behind the window handler
    }
    log_group = resources(template, "AWS::Logs::LogGroup")[logical_id(template, "ConsumerLogGroup")]
    assert log_group["Properties"]["RetentionInDays"] == 30
    assert function["LoggingConfig"] == {
        "LogGroup": {"Ref": logical_id(template, "ConsumerLogGroup")}
    }


def test_roles_have_no_managed_policies(default_consumer):
    _, template = default_consumer
    roles = resources(template, "AWS::IAM::Role")
    assert len(roles) == 2  # the consumer's and its redrive's
    for role in roles.values():
        assert "ManagedPolicyArns" not in role["Properties"]
        assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
            "Service": "lambda.amazonaws.com"
        }


def test_redrive_is_provisioned_by_default_for_this_consumer(default_consumer):
    consumer, template = default_consumer
    assert isinstance(consumer.redrive, StreamRedrive)
    (redrive,) = [
        r["Properties"]
        for r in resources(template, "AWS::Lambda::Function").values()
        if r["Properties"]["Handler"] == REDRIVE_HANDLER
    ]
    assert redrive["Layers"] == [{"Ref": logical_id(template, "CdcConsumerRuntimeLayer")}]
    assert redrive["Runtime"] == "python3.14" and redrive["Architectures"] == ["arm64"]
    env = redrive["Environment"]["Variables"]
    assert env["CONSUMER_FUNCTION_NAME"] == {"Ref": logical_id(template, "ConsumerFunction")}
    assert env["CDC_CONSUMER_NAME"] == "Consumer"
    assert env["STREAM_ARN"] == {"Fn::GetAtt": [logical_id(template, "OrdersTable"), "StreamArn"]}
    assert env["ON_FAILURE_BUCKET_NAME"] == {
        "Ref": logical_id(template, "ConsumerFailedBatchesBucket")
    }
    assert env["EVENT_SOURCE_MAPPING_UUID"] == {
        "Ref": logical_id(template, "ConsumerFunctionStreamMapping")
    }
    assert "ON_FAILURE_QUEUE_URL" not in env
    assert env["QUARANTINE_QUEUE_URL"] == {"Ref": logical_id(template, "ConsumerQuarantineQueue")}
    assert env["REDRIVE_RESERVE_SECONDS"] == "90"  # the consumer's 60 s + 30 s
    assert "CONSUMER_FILTERS" not in env
    # The consumer's marker lifetime, so the redrive refuses what its markers no longer cover.
    consumer_env = [
        r["Properties"]["Environment"]["Variables"]
        for r in resources(template, "AWS::Lambda::Function").values()
        if r["Properties"]["Handler"] != REDRIVE_HANDLER
        and "CDC_MARKER_TTL_SECONDS" in r["Properties"].get("Environment", {}).get("Variables", {})
    ]
    assert env["CDC_MARKER_TTL_SECONDS"] == consumer_env[0]["CDC_MARKER_TTL_SECONDS"]
    # The redrive role's grants are checked in test_redrive.py; here: no wildcard anywhere.
    assert [action for action, _ in grants(template) if "*" in action] == []


def test_redrive_gets_the_consumers_filters_and_timeout(stack):
    _consumer(
        stack,
        filters=[StreamFilters.ttl_deletions_only()],
        timeout=Duration.seconds(120),
    )
    template = Template.from_stack(stack).to_json()
    (redrive,) = [
        r["Properties"]
        for r in resources(template, "AWS::Lambda::Function").values()
        if r["Properties"]["Handler"] == REDRIVE_HANDLER
    ]
    env = redrive["Environment"]["Variables"]
    assert json.loads(env["CONSUMER_FILTERS"]) == [StreamFilters.ttl_deletions_only()]
    assert env["REDRIVE_RESERVE_SECONDS"] == "150"


def test_redrive_can_be_turned_off(stack):
    consumer = _consumer(stack, redrive=False)
    assert consumer.redrive is None
    template = Template.from_stack(stack).to_json()
    assert len(resources(template, "AWS::Lambda::Function")) == 1
    assert "RedriveLostRecords" not in consumer.alarms


def test_escape_hatches(default_consumer):
    consumer, _ = default_consumer
    assert isinstance(consumer.function, lambda_.Function)
    assert isinstance(consumer.event_source_mapping, lambda_.EventSourceMapping)
    assert consumer.dead_letter_queue is None  # the destination is the bucket
    assert isinstance(consumer.on_failure_bucket, s3.Bucket)
    assert consumer.on_failure.kind == "s3"
    assert isinstance(consumer.quarantine_queue, sqs.Queue)
    assert consumer.log_group is not None and consumer.role is not None
    assert set(consumer.alarms) == {
        "IteratorAge",
        "DroppedRecords",
        "DestinationDeliveryFailures",
        "QuarantineQueueDepth",
        "RecordsQuarantined",
        "ForeignMarkers",
        "ContentionFailures",
        "FunctionErrors",
        "FunctionThrottles",
        "RedriveLostRecords",
        "RedriveErrors",
    }


def test_one_runtime_layer_per_stack(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    shared = IdempotencyTable(stack, "Idempotency")
    for name in ("A", "B"):
        StreamConsumer(
            stack, name, **consumer_code(), table=table, idempotency_table=shared, monitoring=False
        )
    template = Template.from_stack(stack).to_json()
    assert len(resources(template, "AWS::Lambda::LayerVersion")) == 1
    assert len(resources(template, "AWS::DynamoDB::GlobalTable")) == 3  # + the ledger table
    # Without monitoring, only the redrives' alarms (lost records, errors) exist, with no action.
    alarms = resources(template, "AWS::CloudWatch::Alarm").values()
    assert (
        sorted(a["Properties"]["MetricName"] for a in alarms)
        == ["Errors"] * 2 + ["RedriveLostRecords"] * 2
    )
    assert not any("AlarmActions" in a["Properties"] for a in alarms)


def test_user_code_and_settings(stack, tmp_path):
    (tmp_path / "orders.py").write_text("def handler(event, context):\n    return {}\n")
    _consumer(
        stack,
        code=lambda_.Code.from_asset(str(tmp_path)),
        handler="orders.handler",
        consumer_name="orders-v1",
        batch_size=500,
        max_batching_window=Duration.seconds(5),
        parallelization_factor=4,
        retry_attempts=0,
        max_record_age=Duration.minutes(10),
        bisect_batch_on_error=False,
        memory_size=1024,
        timeout=Duration.seconds(120),
        environment={"FEATURE": "on"},
        tracing=lambda_.Tracing.ACTIVE,
        metrics_namespace="Shop",
    )
    template = Template.from_stack(stack).to_json()
    mapping = only(template, "AWS::Lambda::EventSourceMapping")
    assert mapping["BatchSize"] == 500
    assert mapping["MaximumBatchingWindowInSeconds"] == 5
    assert mapping["ParallelizationFactor"] == 4
    assert mapping["MaximumRetryAttempts"] == 0
    assert mapping["MaximumRecordAgeInSeconds"] == 600
    assert mapping["BisectBatchOnFunctionError"] is False
    function = _consumer_function(template)
    assert function["Handler"] == "orders.handler"
    assert function["MemorySize"] == 1024
    assert function["Timeout"] == 120
    assert function["TracingConfig"] == {"Mode": "Active"}
    env = function["Environment"]["Variables"]
    assert env["CDC_CONSUMER_NAME"] == "orders-v1"
    assert env["CDC_METRICS_NAMESPACE"] == "Shop"
    assert env["FEATURE"] == "on"
    (lag,) = [
        a["Properties"]
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
        if a["Properties"]["MetricName"] == "IteratorAge"
    ]
    assert lag["Threshold"] == 150_000  # a quarter of 10 minutes, in ms


def test_the_library_ships_no_handler_so_code_is_required(stack):
    """No bundled default: without code (or a function) the error says what to give and
    points at the docs' handler to start from (an installed library has no example beside it),
    a section Getting started has."""
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    with pytest.raises(CdcConfigurationError) as caught:
        StreamConsumer(stack, "Consumer", table=table)
    assert (
        f"code=None: code + handler (your consumer: Getting started shows one, {HANDLER_DOCS}), "
        "or an existing function"
    ) in str(caught.value)
    assert "reference_app" not in str(caught.value)
    page, anchor = HANDLER_DOCS.split("/docs/", 1)[1].split("#")
    headings = (Path(__file__).resolve().parents[2] / "docs" / page).read_text()
    assert (
        f"## {anchor.split('-', 1)[0]}. " in headings
        and "processor = StreamProcessor()" in headings
    )
    slugs = [
        re.sub(r"[^\w\- ]", "", line[3:].lower()).replace(" ", "-")
        for line in headings.splitlines()
        if line.startswith("## ")
    ]
    assert anchor in slugs, (anchor, slugs)
    with pytest.raises(CdcConfigurationError, match="handler=None: the handler string"):
        StreamConsumer(stack, "Other", table=table, code=lambda_.Code.from_inline("x = 1"))


def test_existing_queues_table_and_key(stack):
    key = kms.Key(stack, "QueueKey", enable_key_rotation=True)
    on_failure = sqs.Queue(stack, "MyOnFailure", encryption_master_key=key, enforce_ssl=True)
    quarantine = sqs.Queue(stack, "MyQuarantine", encryption_master_key=key, enforce_ssl=True)
    idempotency = IdempotencyTable(stack, "Shared")
    consumer = _consumer(
        stack,
        on_failure_queue=on_failure,
        quarantine_queue=quarantine,
        idempotency_table=idempotency,
    )
    assert consumer.dead_letter_queue is on_failure and consumer.quarantine_queue is quarantine
    template = Template.from_stack(stack).to_json()
    assert len(resources(template, "AWS::SQS::Queue")) == 2
    # orders, shared and its ledger table
    assert len(resources(template, "AWS::DynamoDB::GlobalTable")) == 3
    mapping = only(template, "AWS::Lambda::EventSourceMapping")
    assert mapping["DestinationConfig"]["OnFailure"]["Destination"] == {
        "Fn::GetAtt": [logical_id(template, "MyOnFailure"), "Arn"]
    }
    env = _consumer_function(template)["Environment"]["Variables"]
    assert env["IDEMPOTENCY_TABLE_NAME"] == {"Ref": logical_id(template, "SharedTable")}
    role_grants = grants(template, role=logical_id(template, "ConsumerRole"))
    for queue in ("MyOnFailure", "MyQuarantine"):
        assert ("sqs:SendMessage", arn_of(logical_id(template, queue))) in role_grants
    assert {a for a, r in role_grants if r == arn_of(logical_id(template, "QueueKey"))} == {
        "kms:Decrypt",
        "kms:GenerateDataKey",
    }
    assert ("dynamodb:PutItem", arn_of(logical_id(template, "SharedTable"))) in role_grants
    ledger = logical_id(template, "SharedLedgerTable")
    assert env["CDC_LEDGER_TABLE_NAME"] == {"Ref": ledger}
    assert {a for a, r in role_grants if r == arn_of(ledger)} == {
        "dynamodb:BatchGetItem",
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
    }


def test_a_plain_idempotency_table_has_no_ledger_table(stack):
    """A table the constructs did not make (Powertools', say) has no sort key: the runtime
    gets no ledger table and writes per-record markers."""
    plain = dynamodb.Table(stack, "Plain", partition_key=dynamodb.Attribute(name="id", type=STR))
    consumer = _consumer(stack, idempotency_table=plain)
    assert consumer.ledger_table is None
    env = _consumer_function(Template.from_stack(stack).to_json())["Environment"]["Variables"]
    assert "CDC_LEDGER_TABLE_NAME" not in env


@pytest.mark.parametrize(
    ("props", "window"),
    [
        ({}, 900),
        ({"tumbling_window": Duration.minutes(2)}, 120),
        ({"tumbling_window": Duration.seconds(0)}, None),
        ({"parallelization_factor": 2}, None),
        ({"parallelization_factor": 10, "tumbling_window": Duration.seconds(0)}, None),
    ],
)
def test_a_tumbling_window_at_a_parallelization_factor_of_1_only(stack, props, window):
    """The mapping gets a window (so each event names its shard) by default at factor 1; none
    above it, which AWS refuses; ``Duration.seconds(0)`` turns it off."""
    _consumer(stack, **props)
    template = Template.from_stack(stack).to_json()
    mapping = only(template, "AWS::Lambda::EventSourceMapping")
    assert mapping.get("TumblingWindowInSeconds") == window
    # A windowed event's answer must carry `state`: the runtime's window handler runs the
    # function's own handler and adds it (cdc_consumer.window_handler).
    function = _consumer_function(template)
    own = function["Environment"]["Variables"].get("CDC_HANDLER")
    if window:
        assert (function["Handler"], own) == ("cdc_consumer.window_handler.handler", "index.handler")
    else:
        assert (function["Handler"], own) == ("index.handler", None)


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        (
            {"parallelization_factor": 2, "tumbling_window": Duration.minutes(1)},
            "tumbling_window=Duration.minutes(1): omitted or Duration.seconds(0) beside "
            "parallelization_factor=2: AWS refuses a tumbling window beside a factor above 1 "
            "('Parallelization factor must be equal to 1 when tumbling window period is "
            "configured')",
        ),
        (
            {"tumbling_window": Duration.seconds(901)},
            "tumbling_window='901 s': whole seconds in 0..900",
        ),
        (
            {"tumbling_window": 60},
            "tumbling_window=60: got an int; tumbling_window is an aws_cdk.Duration of whole "
            "seconds in 0..900",
        ),
    ],
)
def test_a_tumbling_window_aws_would_refuse_is_refused_at_synth(stack, props, expected):
    assert expected in str(consumer_error(stack, **props))


def test_the_function_is_not_told_the_parallelization_factor(stack):
    """The runtime keeps the ledger at every factor and reads none: a variable naming it would
    be a contract nobody honours (and a redeploy of every function when the factor changes)."""
    _consumer(stack, parallelization_factor=4)
    env = _consumer_function(Template.from_stack(stack).to_json())["Environment"]["Variables"]
    assert not [name for name in env if "PARALLELIZATION" in name]


def test_queues_made_with_a_customer_key(stack):
    key = kms.Key(stack, "QueueKey", enable_key_rotation=True)
    _consumer(stack, encryption_key=key)
    template = Template.from_stack(stack).to_json()
    for queue in resources(template, "AWS::SQS::Queue").values():
        assert queue["Properties"]["KmsMasterKeyId"] == {
            "Fn::GetAtt": [logical_id(template, "QueueKey"), "Arn"]
        }


def test_existing_function_gets_layer_environment_and_grants(stack):
    function = _existing_function(stack, memory_size=512, timeout=Duration.seconds(30))
    consumer = _consumer(stack, function=function, consumer_name="mine")
    assert consumer.function is function and consumer.log_group is None
    template = Template.from_stack(stack).to_json()
    props = _consumer_function(template)
    assert props["Layers"] == [{"Ref": logical_id(template, "CdcConsumerRuntimeLayer")}]
    assert props["Environment"]["Variables"]["CDC_CONSUMER_NAME"] == "mine"
    mapping = only(template, "AWS::Lambda::EventSourceMapping")
    assert mapping["FunctionName"] == {"Ref": logical_id(template, "Mine")}
    # Its own role gets what the runtime needs on this consumer's resources.
    role_grants = grants(template, role=logical_id(template, "MineServiceRole"))
    stream = json.dumps({"Fn::GetAtt": [logical_id(template, "OrdersTable"), "StreamArn"]})
    assert ("dynamodb:GetRecords", stream) in role_grants
    assert ("dynamodb:PutItem", arn_of(logical_id(template, "ConsumerIdempotencyTable"))) in (
        role_grants
    )
    queue = "ConsumerQuarantineQueue"
    assert ("sqs:SendMessage", arn_of(logical_id(template, queue))) in role_grants
    bucket = arn_of(logical_id(template, "ConsumerFailedBatchesBucket"))
    assert ("s3:PutObject", json.dumps({"Fn::Join": ["", [json.loads(bucket), "/*"]]})) in (
        role_grants
    )
    # The redrive waits for one invocation of the function's own timeout (30 s) plus 30 s.
    assert _redrive_environment(template)["REDRIVE_RESERVE_SECONDS"] == "60"


def test_existing_function_without_a_timeout_is_redriven_with_lambdas_default(stack):
    function = _existing_function(stack)
    _consumer(stack, function=function)
    template = Template.from_stack(stack).to_json()
    # Lambda's 3 s default + 30 s
    assert _redrive_environment(template)["REDRIVE_RESERVE_SECONDS"] == "33"


def test_existing_function_refuses_the_props_of_a_function_made_here(stack):
    function = _existing_function(stack)
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    with pytest.raises(CdcConfigurationError) as caught:
        StreamConsumer(
            stack,
            "Consumer",
            table=table,
            function=function,
            memory_size=1024,
            timeout=Duration.seconds(120),
            tracing=lambda_.Tracing.ACTIVE,
            reserved_concurrent_executions=2,
        )
    message = str(caught.value)
    assert "memory_size/timeout/tracing/reserved_concurrent_executions=" in message
    assert "omitted when an existing function is given: set them on that function" in message
    assert len(caught.value.problems) == 1
    assert stack.node.try_find_child("Consumer") is None


def test_imported_table_with_stream(stack):
    table = dynamodb.TableV2.from_table_attributes(
        stack,
        "Imported",
        table_name="orders",
        table_stream_arn="arn:aws:dynamodb:eu-west-1:111111111111:table/orders/stream/2024",
    )
    StreamConsumer(stack, "Consumer", **consumer_code(), table=table)
    mapping = only(Template.from_stack(stack).to_json(), "AWS::Lambda::EventSourceMapping")
    assert (
        mapping["EventSourceArn"]
        == "arn:aws:dynamodb:eu-west-1:111111111111:table/orders/stream/2024"
    )


def test_grant_view_table_sets_env_and_write_actions(stack):
    consumer = _consumer(stack)
    view = dynamodb.TableV2(stack, "View", partition_key=PK)
    consumer.grant_view_table(view, env_var="VIEW_TABLE_NAME", read=True)
    template = Template.from_stack(stack).to_json()
    env = _consumer_function(template)["Environment"]["Variables"]
    assert env["VIEW_TABLE_NAME"] == {"Ref": logical_id(template, "View")}
    view_arn = arn_of(logical_id(template, "View"))
    assert {action for action, resource in grants(template) if resource == view_arn} == {
        "dynamodb:ConditionCheckItem",
        "dynamodb:DeleteItem",
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
    }


@pytest.mark.parametrize(
    "variant",
    ["defaults", "customer_key", "existing_function", "keys_only_with_filters"],
)
def test_cfn_lint_is_clean_on_every_variant(stack, variant):
    if variant == "defaults":
        _consumer(stack)
    elif variant == "customer_key":
        key = kms.Key(stack, "Key", enable_key_rotation=True)
        table = ChangeCaptureTable(stack, "Orders", partition_key=PK, encryption_key=key)
        StreamConsumer(
            stack,
            "Consumer",
            **consumer_code(),
            table=table,
            encryption_key=key,
            idempotency_table=IdempotencyTable(stack, "Idem", encryption_key=key),
        )
    elif variant == "existing_function":
        function = _existing_function(stack)
        _consumer(stack, function=function)
    else:
        table = ChangeCaptureTable(
            stack, "Orders", partition_key=PK, stream=dynamodb.StreamViewType.KEYS_ONLY
        )
        StreamConsumer(
            stack,
            "Consumer",
            **consumer_code(),
            table=table,
            filters=[
                StreamFilters.key_prefix("pk", "OUTBOX#"),
                StreamFilters.event_names("INSERT"),
            ],
        )
    assert cfn_lint(Template.from_stack(stack).to_json()) == []


def test_customer_keys_are_granted_without_wildcard_actions(stack):
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK, encryption_key=key)
    StreamConsumer(
        stack,
        "Consumer",
        **consumer_code(),
        table=table,
        encryption_key=key,
        idempotency_table=IdempotencyTable(stack, "Idem", encryption_key=key),
    )
    key_arn = arn_of(logical_id(Template.from_stack(stack).to_json(), "Key"))
    key_actions = {
        action
        for action, resource in grants(Template.from_stack(stack).to_json())
        if resource == key_arn
    }
    assert key_actions == {"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"}
