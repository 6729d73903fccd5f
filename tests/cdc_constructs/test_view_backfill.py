"""ViewBackfill: the state machine (a Distributed Map over the segments, the resume loop, the
retries), the segment function (handler, environment, rate share, IAM), the consumer's side
(progress recording), alarms and dashboard, the defaults of the segment count, refusals."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_logs as logs
from aws_cdk.assertions import Template
from cdc_consumer.backfill.defaults import PAGE_SIZE as RUNTIME_PAGE_SIZE
from cdc_consumer.backfill.shapes import BACKFILL_PERMANENT_ERRORS
from cdc_consumer.environment_variables import (
    BACKFILL_ITEMS_PER_SECOND_ENV,
    BACKFILL_PAGE_SIZE_ENV,
    BACKFILL_SKEW_SECONDS_ENV,
    BACKFILL_TABLE_ENV,
    CONSUMER_FILTERS_ENV,
    CONSUMER_FUNCTION_NAME_ENV,
    CONSUMER_NAME_ENV,
    CONSUMER_PROGRESS_ENV,
    IDEMPOTENCY_TABLE_ENV,
    STREAM_ARN_ENV,
)
from cdc_consumer.handler_paths import BACKFILL_HANDLER

from cdc_constructs import (
    CdcConfigurationError,
    ConsumerGroupMember,
    KinesisConsumer,
    StreamConsumer,
    StreamFilters,
    ViewBackfill,
)
from tests.cdc_constructs.support import (
    cfn_lint,
    consumer_code,
    logical_id,
    only,
    orders_table,
    resources,
    statements,
)
from tests.cdc_constructs.test_kinesis import kinesis_table


def _consumer(stack: cdk.Stack, **props: Any) -> StreamConsumer:
    return StreamConsumer(stack, "Consumer", table=orders_table(stack), **consumer_code(), **props)


def _template(stack: cdk.Stack) -> dict[str, Any]:
    return Template.from_stack(stack).to_json()


def _definition(template: dict[str, Any]) -> dict[str, Any]:
    """The state machine's definition, each token in it replaced by ``"<token>"``."""
    body = only(template, "AWS::StepFunctions::StateMachine")["DefinitionString"]
    parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
    return json.loads("".join(p if isinstance(p, str) else "<token>" for p in parts))


def _function(template: dict[str, Any], prefix: str) -> dict[str, Any]:
    return template["Resources"][logical_id(template, prefix)]["Properties"]


def _segment_function(template: dict[str, Any]) -> dict[str, Any]:
    return _function(template, "BackfillSegmentFunction")


def test_a_distributed_map_runs_each_segment_until_it_is_done(stack: cdk.Stack) -> None:
    ViewBackfill(stack, "Backfill", consumer=_consumer(stack), max_concurrency=4)
    definition = _definition(_template(stack))
    states = definition["States"]
    assert definition["StartAt"] == "Request"
    defaults = states["Request"]["Parameters"]["defaults"]
    assert defaults == {"backfillId.$": "$$.Execution.Name"}  # totalSegments: the start step
    context = states["Request"]["Parameters"]["context"]  # not overridable by the input
    assert context == {"execution.$": "$$.Execution.Id", "stateMachine.$": "$$.StateMachine.Id"}
    assert states["WithExecution"]["Parameters"] == {
        "request.$": "States.JsonMerge($.request, $.context, false)"
    }
    segments = states["Segments"]
    assert segments["Type"] == "Map"
    assert segments["ItemProcessor"]["ProcessorConfig"] == {
        "Mode": "DISTRIBUTED",
        "ExecutionType": "STANDARD",
    }
    assert segments["ItemsPath"] == "$.segments"
    assert segments["MaxConcurrency"] == 4
    assert segments["ItemSelector"]["segment.$"] == "$$.Map.Item.Value"
    assert segments["ResultPath"] is None  # 10,000 results would pass 256 KB
    child = segments["ItemProcessor"]["States"]
    assert child["ScanSegment"]["Next"] == "SegmentDone"
    (loop,) = child["SegmentDone"]["Choices"]
    assert loop == {"Variable": "$.done", "BooleanEquals": False, "Next": "ScanSegment"}
    assert child["SegmentDone"]["Default"] == "SegmentScanned"
    assert states["Plan"]["Next"] == "Segments"


def test_invocations_retry_throttling_with_backoff_and_never_a_refusal(stack: cdk.Stack) -> None:
    ViewBackfill(stack, "Backfill", consumer=_consumer(stack), segment_timeout=Duration.minutes(5))
    states = _definition(_template(stack))["States"]
    scan = states["Segments"]["ItemProcessor"]["States"]["ScanSegment"]
    permanent = ["BackfillRefusedError", "AccessDeniedError", "ConfigurationError"]
    assert list(BACKFILL_PERMANENT_ERRORS) == permanent
    (refused,) = states["Plan"]["Catch"]
    assert refused == {"ErrorEquals": permanent, "Next": "Refused"}
    assert states["Refused"]["Type"] == "Fail" and states["Refused"]["CausePath"] == "$.Cause"
    for task in (states["Plan"], scan):
        assert task["TimeoutSeconds"] == 5 * 60 + 60  # the function's, and a minute to start
        refusal, transient = task["Retry"]
        assert refusal == {"ErrorEquals": permanent, "MaxAttempts": 0}
        assert {"Lambda.TooManyRequestsException", "States.TaskFailed", "States.Timeout"} <= set(
            transient["ErrorEquals"]
        )
        assert transient["BackoffRate"] == 2 and transient["JitterStrategy"] == "FULL"
        assert transient["MaxAttempts"] == 6 and transient["MaxDelaySeconds"] == 300
        assert task["Resource"].endswith(":states:::lambda:invoke")
        assert task["OutputPath"] == "$.Payload"


def test_the_segment_function_runs_the_layer_handler_with_its_share_of_the_rate(
    stack: cdk.Stack,
) -> None:
    consumer = _consumer(stack)
    ViewBackfill(
        stack,
        "Backfill",
        consumer=consumer,
        items_per_second=500,
        max_concurrency=4,
        page_size=50,
        clock_skew_margin=Duration.seconds(10),
    )
    template = _template(stack)
    function = _segment_function(template)
    assert function["Handler"] == BACKFILL_HANDLER
    assert function["Layers"] == [{"Ref": logical_id(template, "CdcConsumerRuntimeLayer")}]
    assert function["Timeout"] == 900
    assert function["ReservedConcurrentExecutions"] == 5  # the segments and the start step
    variables = function["Environment"]["Variables"]
    table = logical_id(template, "OrdersTable")
    assert variables[BACKFILL_TABLE_ENV] == {"Ref": table}
    assert variables[STREAM_ARN_ENV] == {"Fn::GetAtt": [table, "StreamArn"]}
    assert variables[CONSUMER_FUNCTION_NAME_ENV] == {
        "Ref": logical_id(template, "ConsumerFunction")
    }
    assert variables[CONSUMER_NAME_ENV] == "Consumer"
    assert variables[IDEMPOTENCY_TABLE_ENV] == {
        "Ref": logical_id(template, "ConsumerIdempotencyTable")
    }
    assert variables[BACKFILL_ITEMS_PER_SECOND_ENV] == "125"  # 500 / 4 at once
    assert variables[BACKFILL_PAGE_SIZE_ENV] == "50"
    assert variables[BACKFILL_SKEW_SECONDS_ENV] == "10"
    # The progress records live as the consumer's markers (issue 23 §1).
    assert variables["CDC_MARKER_TTL_SECONDS"] == str(3600 + (14 + 1 + 14 + 1) * 24 * 3600)
    consumer_env = _function(template, "ConsumerFunction")["Environment"]["Variables"]
    assert consumer_env[CONSUMER_PROGRESS_ENV] == "1"


def test_no_rate_limit_when_asked_and_the_runtime_default_skew(stack: cdk.Stack) -> None:
    ViewBackfill(stack, "Backfill", consumer=_consumer(stack), items_per_second=None)
    variables = _segment_function(_template(stack))["Environment"]["Variables"]
    assert BACKFILL_ITEMS_PER_SECOND_ENV not in variables
    assert BACKFILL_SKEW_SECONDS_ENV not in variables


def test_the_default_page_is_the_largest_accepted_and_the_runtimes(stack: cdk.Stack) -> None:
    """Issue 29: a page's deltas merge per view item, so the default page is the largest
    ViewBackfill accepts (1,000 rows: about 2 + 2 V/P write units a row), and the runtime's
    own default is the same."""
    ViewBackfill(stack, "Backfill", consumer=_consumer(stack))
    variables = _segment_function(_template(stack))["Environment"]["Variables"]
    assert variables[BACKFILL_PAGE_SIZE_ENV] == "1000"
    assert RUNTIME_PAGE_SIZE == 1000


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return sorted(action if isinstance(action, list) else [action])


def test_the_segment_function_may_scan_this_table_and_invoke_this_consumer_only(
    stack: cdk.Stack,
) -> None:
    ViewBackfill(stack, "Backfill", consumer=_consumer(stack))
    template = _template(stack)
    granted = {
        tuple(_actions(s)): s["Resource"]
        for s in statements(template, logical_id(template, "BackfillSegmentFunctionRole"))
    }
    assert granted == {
        ("logs:CreateLogStream", "logs:PutLogEvents"): {
            "Fn::GetAtt": [logical_id(template, "BackfillSegmentFunctionLogGroup"), "Arn"]
        },
        ("dynamodb:DescribeTable", "dynamodb:Scan"): {
            "Fn::GetAtt": [logical_id(template, "OrdersTable"), "Arn"]
        },
        ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"): {
            "Fn::GetAtt": [logical_id(template, "ConsumerIdempotencyTable"), "Arn"]
        },
        ("lambda:InvokeFunction",): {
            "Fn::GetAtt": [logical_id(template, "ConsumerFunction"), "Arn"]
        },
        ("lambda:ListEventSourceMappings",): "*",
        ("states:ListExecutions",): {"Ref": logical_id(template, "BackfillStateMachine")},
    }


def test_the_state_machine_may_invoke_the_segment_function_only(stack: cdk.Stack) -> None:
    ViewBackfill(stack, "Backfill", consumer=_consumer(stack))
    template = _template(stack)
    role = logical_id(template, "BackfillStateMachineRole")
    invokes = [s for s in statements(template, role) if s["Action"] == "lambda:InvokeFunction"]
    (invoke,) = invokes
    function = logical_id(template, "BackfillSegmentFunction")
    assert invoke["Resource"] == [
        {"Fn::GetAtt": [function, "Arn"]},
        {"Fn::Join": ["", [{"Fn::GetAtt": [function, "Arn"]}, ":*"]]},
    ]
    others = [a for s in statements(template, role) for a in _actions(s)]
    assert not [
        a for a in others if a.startswith(("dynamodb:", "lambda:")) and a != "lambda:InvokeFunction"
    ]


def test_logs_kept_with_retention_without_execution_data(stack: cdk.Stack) -> None:
    ViewBackfill(
        stack, "Backfill", consumer=_consumer(stack), log_retention=logs.RetentionDays.ONE_WEEK
    )
    template = _template(stack)
    machine = only(template, "AWS::StepFunctions::StateMachine")
    assert machine["LoggingConfiguration"]["Level"] == "ALL"
    assert machine["LoggingConfiguration"]["IncludeExecutionData"] is False
    groups = resources(template, "AWS::Logs::LogGroup")
    backfill_groups = [g for lid, g in groups.items() if lid.startswith("Backfill")]
    assert len(backfill_groups) == 2
    assert {g["Properties"]["RetentionInDays"] for g in backfill_groups} == {7}


def test_an_execution_longer_than_the_timeout_is_stopped(stack: cdk.Stack) -> None:
    ViewBackfill(stack, "Backfill", consumer=_consumer(stack), timeout=Duration.hours(2))
    assert _definition(_template(stack))["TimeoutSeconds"] == 7200


def test_failed_timed_out_and_aborted_executions_alarm_to_the_consumers_topic(
    stack: cdk.Stack,
) -> None:
    consumer = _consumer(stack)
    backfill = ViewBackfill(stack, "Backfill", consumer=consumer)
    template = _template(stack)
    assert set(backfill.alarms) == {
        "ExecutionsFailed",
        "ExecutionsTimedOut",
        "ExecutionsAborted",
        "SegmentErrors",
        "SegmentThrottles",
    }
    machine = logical_id(template, "BackfillStateMachine")
    function = logical_id(template, "BackfillSegmentFunction")
    topic = logical_id(template, "ConsumerAlarmTopic")
    alarms = [
        a["Properties"]
        for lid, a in resources(template, "AWS::CloudWatch::Alarm").items()
        if lid.startswith("BackfillMonitoring")
    ]
    names = {"SegmentErrors": "Errors", "SegmentThrottles": "Throttles"}
    assert sorted(a["MetricName"] for a in alarms) == sorted(
        names.get(name, name) for name in backfill.alarms
    )
    for alarm in alarms:
        if alarm["Namespace"] == "AWS/Lambda":
            assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function}}]
        else:
            assert alarm["Namespace"] == "AWS/States"
            assert alarm["Dimensions"] == [{"Name": "StateMachineArn", "Value": {"Ref": machine}}]
        assert alarm["Threshold"] == 1 and alarm["TreatMissingData"] == "notBreaching"
        assert alarm["AlarmActions"] == [{"Ref": topic}]


def test_the_widgets_go_on_the_consumers_dashboard(stack: cdk.Stack) -> None:
    dashboard = cloudwatch.Dashboard(stack, "Board")
    consumer = _consumer(stack, dashboard=dashboard)
    ViewBackfill(stack, "Backfill", consumer=consumer)
    body = json.dumps(only(_template(stack), "AWS::CloudWatch::Dashboard")["DashboardBody"])
    assert "Backfill of `Consumer`" in body and "BackfillItems" in body


def test_the_segment_count_is_decided_when_the_backfill_starts(stack: cdk.Stack) -> None:
    backfill = ViewBackfill(stack, "Backfill", consumer=_consumer(stack), max_concurrency=7)
    assert backfill.total_segments is None
    template = _template(stack)
    defaults = _definition(template)["States"]["Request"]["Parameters"]["defaults"]
    assert "totalSegments" not in defaults  # the start step reads the table's size
    variables = _segment_function(template)["Environment"]["Variables"]
    assert variables["CDC_BACKFILL_MAX_CONCURRENCY"] == "7"


def test_total_segments_given_is_the_default_of_the_request(stack: cdk.Stack) -> None:
    ViewBackfill(stack, "Backfill", consumer=_consumer(stack), total_segments=30)
    defaults = _definition(_template(stack))["States"]["Request"]["Parameters"]["defaults"]
    assert defaults["totalSegments"] == 30


def test_the_state_machine_may_reach_its_own_child_executions(stack: cdk.Stack) -> None:
    ViewBackfill(stack, "Backfill", consumer=_consumer(stack))
    template = _template(stack)
    machine = logical_id(template, "BackfillStateMachine")
    policy = template["Resources"][logical_id(template, "BackfillStateMachineDistributedMapPolicy")]
    children = {  # labelled executions: execution:<state machine>/<map run label>:<id>
        "Fn::Join": [
            "",
            [
                "arn:aws:states:eu-west-1:111111111111:execution:",
                {"Fn::GetAtt": [machine, "Name"]},
                "/Segments:*",
            ],
        ]
    }
    granted = {
        tuple(_actions(s)): s["Resource"]
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    }
    assert granted == {
        ("states:StartExecution",): {"Ref": machine},
        (
            "states:DescribeExecution",
            "states:RedriveExecution",
            "states:StopExecution",
        ): children,
    }


def test_the_start_step_may_list_its_state_machines_executions(stack: cdk.Stack) -> None:
    ViewBackfill(stack, "Backfill", consumer=_consumer(stack))
    template = _template(stack)
    policy = template["Resources"][logical_id(template, "BackfillListExecutionsPolicy")]
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "states:ListExecutions"
    assert statement["Resource"] == {"Ref": logical_id(template, "BackfillStateMachine")}
    role = logical_id(template, "BackfillSegmentFunctionRole")
    assert policy["Properties"]["Roles"] == [{"Ref": role}]


def test_a_clock_skew_margin_below_a_second_is_refused(stack: cdk.Stack) -> None:
    with pytest.raises(CdcConfigurationError, match="clock_skew_margin"):
        ViewBackfill(
            stack, "Backfill", consumer=_consumer(stack), clock_skew_margin=Duration.seconds(0)
        )


def _group(stack: cdk.Stack) -> StreamConsumer:
    return StreamConsumer(
        stack,
        "Group",
        table=orders_table(stack),
        **consumer_code(),
        members=[
            ConsumerGroupMember("stats"),
            ConsumerGroupMember("archive", [StreamFilters.ttl_deletions_only()]),
        ],
    )


def test_a_group_member_is_backfilled_under_its_own_name(stack: cdk.Stack) -> None:
    backfill = ViewBackfill(stack, "Backfill", consumer=_group(stack), member="stats")
    assert backfill.consumer_name == "stats"
    variables = _segment_function(_template(stack))["Environment"]["Variables"]
    assert variables[CONSUMER_NAME_ENV] == "stats"


def _error(stack: cdk.Stack, **props: Any) -> str:
    with pytest.raises(CdcConfigurationError) as caught:
        ViewBackfill(stack, "Backfill", **props)
    assert stack.node.try_find_child("Backfill") is None, "nothing may be built on error"
    return str(caught.value)


def test_a_group_needs_one_of_its_members(stack: cdk.Stack) -> None:
    group = _group(stack)
    assert (
        "member=None: the consumer_name of the member of Test/Group to backfill, one of "
        "['stats', 'archive']" in _error(stack, consumer=group)
    )
    assert "member='stat'" in _error(stack, consumer=group, member="stat")


def test_a_member_is_refused_for_a_consumer_of_its_own(stack: cdk.Stack) -> None:
    message = _error(stack, consumer=_consumer(stack), member="stats")
    assert "member='stats': None: consumer Test/Consumer has no members" in message


def test_a_kinesis_consumer_is_refused(stack: cdk.Stack) -> None:
    consumer = KinesisConsumer(stack, "Replica", table=kinesis_table(stack), **consumer_code())
    message = _error(stack, consumer=consumer)
    assert "consumer='Test/Replica': a StreamConsumer of a DynamoDB stream" in message
    assert "KinesisConsumer" in message


def test_something_not_a_consumer_is_refused(stack: cdk.Stack) -> None:
    assert "consumer='orders': a StreamConsumer" in _error(stack, consumer="orders")


def test_every_bad_prop_is_named_in_one_error(stack: cdk.Stack) -> None:
    message = _error(
        stack,
        consumer=_consumer(stack),
        total_segments=20_000,
        max_concurrency=0,
        items_per_second=0,
        page_size=5000,
        timeout=Duration.seconds(10),
        segment_timeout=Duration.minutes(20),
        clock_skew_margin=Duration.hours(2),
    )
    assert message.startswith("ViewBackfill 'Backfill': 7 invalid props:")
    for expected in (
        "total_segments=20000: a number in 1..10000",
        "max_concurrency=0: a number in 1..1000",
        "items_per_second=0: a number",
        "page_size=5000: a number in 1..1000",
        "timeout='10 s': whole seconds in 60..31536000",
        "segment_timeout='1200 s': whole seconds in 1..900",
        "clock_skew_margin='7200 s': whole seconds in 1..3600",
    ):
        assert expected in message, expected


@pytest.mark.parametrize("segments", [0, 1.5, True])
def test_a_segment_count_out_of_range_is_refused(stack: cdk.Stack, segments: Any) -> None:
    message = _error(stack, consumer=_consumer(stack), total_segments=segments)
    assert f"total_segments={segments!r}: " in message and "number in 1..10000" in message


def test_cfn_lint_is_clean(stack: cdk.Stack) -> None:
    ViewBackfill(stack, "Backfill", consumer=_consumer(stack))
    assert cfn_lint(_template(stack)) == []


@pytest.mark.parametrize("env", [True, False], ids=["account-and-region", "environment-agnostic"])
def test_the_nag_packs_find_nothing_unacknowledged(
    tmp_path: Any, cdk_context: dict, env: bool
) -> None:
    from aws_cdk import Validations
    from cdk_nag import AwsSolutionsChecks, ServerlessChecks

    from cdc_constructs.nag import CdcChecks

    app = cdk.App(outdir=str(tmp_path), context=cdk_context)
    where = cdk.Environment(account="111111111111", region="eu-west-1") if env else None
    stack = cdk.Stack(app, "Test", env=where)
    ViewBackfill(stack, "Backfill", consumer=_consumer(stack))
    Validations.of(app).add_plugins(AwsSolutionsChecks(app), ServerlessChecks(app), CdcChecks())
    app.synth()  # raises ValidationFailed on any unacknowledged finding
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [v for r in report["pluginReports"] for v in r["violations"]] == []


def test_a_member_that_takes_no_insert_is_refused(stack: cdk.Stack) -> None:
    message = _error(stack, consumer=_group(stack), member="archive")
    assert (
        "member='archive': a consumer that takes INSERT changes: the filters of member "
        "'archive' admit no INSERT, and a backfill hands each item over as one"
    ) in message


def test_a_consumer_whose_mapping_takes_no_insert_is_refused(stack: cdk.Stack) -> None:
    consumer = _consumer(stack, filters=[StreamFilters.event_names("MODIFY", "REMOVE")])
    message = _error(stack, consumer=consumer)
    assert (
        "consumer='Test/Consumer': a consumer that takes INSERT changes: the filters of "
        "its mapping admit no INSERT" in message
    )


def test_the_mappings_filters_go_to_the_segment_function(stack: cdk.Stack) -> None:
    paid = StreamFilters.new_image_attribute_equals("status", "paid")
    ViewBackfill(stack, "Backfill", consumer=_consumer(stack, filters=[paid]))
    variables = _segment_function(_template(stack))["Environment"]["Variables"]
    # Invoked directly, a snapshot batch skips the mapping's filter: the worker applies it.
    assert json.loads(variables[CONSUMER_FILTERS_ENV]) == [paid]
