"""The backfill's state machine: a start step, then a Distributed Map over the table's
parallel-scan segments, each segment one Lambda invocation after another until it is done.

::

    Request      Pass: the execution input over the defaults (backfillId: the execution's
                 name; totalSegments: the construct's, or null: the start step decides from the
                 table's size), and the execution's and state machine's ARNs, which the input
                 cannot override (the start step refuses a second execution of a backfill)
    Plan         the segment function's start step: checks, fixes the horizon, lists the
                 segments (BackfillRequest -> BackfillPlan); a refusal -> Refused
    Segments     Distributed Map over the plan's segments, MaxConcurrency from the props;
                 each child execution (standard: a segment may take longer than 5 minutes):
        ScanSegment   the segment function (SegmentTask -> SegmentResult)
        SegmentDone   done? -> SegmentScanned; not done -> ScanSegment again, from where it
                      stopped (the result is the next task)
    Backfilled   the plan, as the execution's output
    Refused      Fail: the start step's refusal, its message as the cause

Every invocation has a timeout (the function's, plus a minute for Lambda's own start) and
retries Lambda's and DynamoDB's transient failures with exponential backoff and full jitter;
a permanent error (a refusal, a call the role may not make, a function without its settings)
is never retried. The children's results are discarded (10,000 of them would pass the 256 KB
state limit); DescribeMapRun counts them, the segment function's metrics count the items.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from cdc_consumer.backfill.shapes import (
    BACKFILL_PERMANENT_ERRORS,
    BackfillPlan,
    BackfillRequest,
    SegmentResult,
    SegmentTask,
)
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.acknowledge import acknowledge
from cdc_constructs.permissions import allow

__all__ = [
    "MAP_LABEL",
    "RETRIED_ERRORS",
    "TASK_TIMEOUT_MARGIN_SECONDS",
    "acknowledge_engine",
    "backfill_definition",
    "let_list_executions",
    "own_map_policy",
    "task_timeout",
]

MAP_LABEL = "Segments"
"""The Distributed Map's label: its Map Runs' ARNs end in ``<execution>/Segments:<id>``."""

_MAP_POLICY = "DistributedMapPolicy"
"""aws-cdk-lib's name for the policy a Distributed Map adds to the state machine's role."""

RETRIED_ERRORS = (
    "Lambda.TooManyRequestsException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.ClientExecutionTimeoutException",
    sfn.Errors.TIMEOUT,
    sfn.Errors.TASKS_FAILED,
)
"""Retried with backoff: Lambda throttling the invocation or failing itself, the task timing
out, and any error the function raised (DynamoDB throttling it could not absorb, a transient
fault): a retry resumes from the segment's progress record. ``States.TaskFailed`` would also
match a permanent error (:data:`~cdc_consumer.backfill.shapes.BACKFILL_PERMANENT_ERRORS`), so their
own retrier (no attempts) comes first."""

TASK_TIMEOUT_MARGIN_SECONDS = 60
"""A task waits this much longer than the function's timeout before Step Functions times it
out: Lambda's own start (a cold start, the invoke's queueing) is not in the function's timeout.
Without a task timeout a lost invocation would hold the execution until its own timeout."""

_REQUEST_DEFAULTS = "defaults"
_REQUEST_INPUT = "input"
_REQUEST_CONTEXT = "context"


def backfill_definition(
    scope: Construct,
    function: lambda_.IFunction,
    total_segments: int | None,
    max_concurrency: int,
    task_timeout: Duration,
) -> sfn.IChainable:
    """The chain of states above, with ``function`` as the segment function."""
    request = sfn.Pass(
        scope,
        "Request",
        comment="The execution input over the defaults: {} starts a backfill.",
        parameters={
            _REQUEST_DEFAULTS: {
                f"{BackfillRequest.BACKFILL_ID}.$": "$$.Execution.Name",
                BackfillRequest.TOTAL_SEGMENTS: total_segments,
            },
            f"{_REQUEST_INPUT}.$": "$",
            _REQUEST_CONTEXT: {
                f"{BackfillRequest.EXECUTION}.$": "$$.Execution.Id",
                f"{BackfillRequest.STATE_MACHINE}.$": "$$.StateMachine.Id",
            },
        },
    )
    merged = sfn.Pass(
        scope,
        "WithDefaults",
        parameters={
            "request.$": f"States.JsonMerge($.{_REQUEST_DEFAULTS}, $.{_REQUEST_INPUT}, false)",
            f"{_REQUEST_CONTEXT}.$": f"$.{_REQUEST_CONTEXT}",
        },
    )
    identified = sfn.Pass(
        scope,
        "WithExecution",
        parameters={"request.$": f"States.JsonMerge($.request, $.{_REQUEST_CONTEXT}, false)"},
        output_path="$.request",
    )
    plan = _invoke(
        scope, "Plan", function, "Checks the consumer and table, lists the segments.", task_timeout
    )
    refused = sfn.Fail(
        scope,
        "Refused",
        comment="The start step refused (the cause says why); nothing was written.",
        cause_path="$.Cause",
        error_path="$.Error",
    )
    plan.add_catch(refused, errors=list(BACKFILL_PERMANENT_ERRORS))
    segments = _segments_map(scope, function, max_concurrency, task_timeout)
    done = sfn.Succeed(scope, "Backfilled", comment="Every segment is scanned to its end.")
    return request.next(merged).next(identified).next(plan).next(segments).next(done)


def _segments_map(
    scope: Construct, function: lambda_.IFunction, max_concurrency: int, task_timeout: Duration
) -> sfn.DistributedMap:
    plan = {
        key: f"$.{key}"
        for key in (
            BackfillRequest.BACKFILL_ID,
            BackfillRequest.TOTAL_SEGMENTS,
            BackfillRequest.HORIZON,
        )
    }
    segments = sfn.DistributedMap(
        scope,
        "Segments",
        comment="One child execution per parallel-scan segment.",
        items_path=f"$.{BackfillPlan.SEGMENTS}",
        item_selector={
            **{f"{key}.$": path for key, path in plan.items()},
            f"{SegmentTask.SEGMENT}.$": "$$.Map.Item.Value",
        },
        max_concurrency=max_concurrency,
        result_path=sfn.JsonPath.DISCARD,
        label=MAP_LABEL,
    )
    scan = _invoke(
        scope,
        "ScanSegment",
        function,
        "Scans the segment from where it stopped.",
        task_timeout,
    )
    scanned = sfn.Succeed(
        scope, "SegmentScanned", output_path=f"$.{SegmentTask.SEGMENT}"
    )  # a small output: the children's outputs add up
    loop = sfn.Choice(scope, "SegmentDone").when(
        sfn.Condition.boolean_equals(f"$.{SegmentResult.DONE}", False), scan
    )
    segments.item_processor(scan.next(loop.otherwise(scanned)))
    return segments


def _invoke(
    scope: Construct,
    state_id: str,
    function: lambda_.IFunction,
    comment: str,
    task_timeout: Duration,
) -> tasks.LambdaInvoke:
    """The segment function with the state's input, its response as the state's output."""
    invoke = tasks.LambdaInvoke(
        scope,
        state_id,
        comment=comment,
        lambda_function=function,
        output_path="$.Payload",
        retry_on_service_exceptions=False,  # the retriers below cover them, with backoff
        task_timeout=sfn.Timeout.duration(task_timeout),
    )
    invoke.add_retry(errors=list(BACKFILL_PERMANENT_ERRORS), max_attempts=0)
    invoke.add_retry(
        errors=list(RETRIED_ERRORS),
        max_attempts=defaults.BACKFILL_RETRY_ATTEMPTS,
        interval=Duration.seconds(defaults.BACKFILL_RETRY_INTERVAL_SECONDS),
        backoff_rate=defaults.BACKFILL_RETRY_BACKOFF_RATE,
        max_delay=Duration.seconds(defaults.BACKFILL_RETRY_MAX_DELAY_SECONDS),
        jitter_strategy=sfn.JitterType.FULL,
    )
    return invoke


_NO_XRAY = (
    "The segment function does not use the X-Ray SDK (boto3 only): a trace would show one "
    "Lambda call per state. Progress and failures are measured by the execution metrics and "
    "the segment function's, with alarms."
)


def acknowledge_engine(state_machine: sfn.StateMachine, function: lambda_.Function) -> None:
    """The cdk-nag findings that follow from how Step Functions works, each with its reason:
    no X-Ray, and the wildcards aws-cdk-lib's grants need (function versions, log delivery,
    the Distributed Map's own executions)."""
    acknowledge(state_machine, "AwsSolutions-SF2", _NO_XRAY)
    acknowledge(state_machine, "Serverless-StepFunctionStateMachineXray", _NO_XRAY)
    stack = Stack.of(state_machine)
    function_arn = f"<{stack.get_logical_id(function.node.default_child)}.Arn>"  # type: ignore[arg-type]
    for resource, reason in (
        (
            f"{function_arn}:*",
            "lambda:InvokeFunction on the segment function, its versions and aliases (the "
            "':*' aws-cdk-lib's LambdaInvoke adds), and on no other function.",
        ),
        (
            "*",
            "The CloudWatch Logs delivery actions a state machine's logging needs "
            "(logs:CreateLogDelivery, ...): they have no resource-level permission.",
        ),
    ):
        acknowledge(state_machine.role, f"AwsSolutions-IAM5[Resource::{resource}]", reason)
    executions = _executions_arn(state_machine)
    acknowledge(
        state_machine.node.find_child(_MAP_POLICY),
        f"AwsSolutions-IAM5[Resource::{executions}/{MAP_LABEL}:*]",
        "states:DescribeExecution, StopExecution and RedriveExecution on the Distributed Map's "
        "child executions (execution:<state machine>/<map run label>:<id>), whose ids are "
        "known only at run time.",
    )


def own_map_policy(state_machine: sfn.StateMachine) -> None:
    """The Distributed Map's policy with the state machine's name as ``GetAtt Name`` (what
    aws-cdk-lib writes as ``Fn::Select`` of its ARN), readable as ``<Name>`` in cdk-nag's
    findings and in the policy: StartExecution on the state machine, and Describe, Stop and
    Redrive on its Map Run's child executions, whose ARNs are labelled
    (``execution:<name>/<map run label>:<id>``, the Step Functions service reference)."""
    state_machine.node.try_remove_child(_MAP_POLICY)
    stack = Stack.of(state_machine)
    executions = stack.format_arn(
        service="states",
        resource="execution",
        resource_name=state_machine.state_machine_name,
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    iam.Policy(
        state_machine,
        _MAP_POLICY,
        roles=[state_machine.role],
        statements=[
            allow(["states:StartExecution"], [state_machine.state_machine_arn]),
            # The Map's children are labelled executions: execution:<name>/<label>:<id>.
            allow(
                ["states:DescribeExecution", "states:StopExecution", "states:RedriveExecution"],
                [f"{executions}/{MAP_LABEL}:*"],
            ),
        ],
    )


def task_timeout(function_timeout: Duration) -> Duration:
    """A task's timeout: the function's, and :data:`TASK_TIMEOUT_MARGIN_SECONDS`."""
    return Duration.seconds(function_timeout.to_seconds() + TASK_TIMEOUT_MARGIN_SECONDS)


def let_list_executions(scope: Construct, state_machine: sfn.StateMachine, role: iam.IRole) -> None:
    """The start step refuses a second execution of a running backfill: it lists the state
    machine's running executions. A policy of its own (``ListExecutionsPolicy``): the function's
    default policy must not depend on the state machine, which depends on the function."""
    iam.Policy(
        scope,
        "ListExecutionsPolicy",
        roles=[role],
        statements=[allow(["states:ListExecutions"], [state_machine.state_machine_arn])],
    )


def _executions_arn(state_machine: sfn.StateMachine) -> str:
    """The executions' ARN prefix as cdk-nag renders it (tokens as ``<Ref>``)."""
    stack = Stack.of(state_machine)
    partition, region, account = (
        f"<AWS::{pseudo}>" if Token.is_unresolved(value) else value
        for pseudo, value in (
            ("Partition", stack.partition),
            ("Region", stack.region),
            ("AccountId", stack.account),
        )
    )
    name = f"<{stack.get_logical_id(state_machine.node.default_child)}.Name>"  # type: ignore[arg-type]
    return f"arn:{partition}:states:{region}:{account}:execution:{name}"
