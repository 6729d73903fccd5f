"""The Lambda functions the constructs make: own role (no managed policies), own log group
with retention, the library's runtime and architecture, and the cdk-nag acknowledgements that
follow from how the function is invoked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from aws_cdk import ArnFormat, CfnResource, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.acknowledge import acknowledge, skip_check

_TRACING_REASON = (
    "The consumer runtime does not use the X-Ray SDK (boto3 only), so active tracing would "
    "show little; lag, failures, quarantined and lost records are measured by metrics with "
    "alarms. Pass tracing=Tracing.ACTIVE to enable."
)


class FunctionParts(NamedTuple):
    role: iam.Role
    log_group: logs.ILogGroup
    function: lambda_.Function


def make_function(
    scope: Construct,
    *,
    description: str,
    code: lambda_.Code,
    handler: str,
    layers: Sequence[lambda_.ILayerVersion],
    environment: Mapping[str, str],
    memory_size: int,
    timeout: Duration,
    log_retention: logs.RetentionDays,
    invoked_by: str,
    tracing: lambda_.Tracing | None = None,
    reserved_concurrent_executions: int | None = None,
    log_group: logs.ILogGroup | None = None,
    log_encryption_key: kms.IKey | None = None,
) -> FunctionParts:
    """``Role``, ``LogGroup`` and ``Function`` children of ``scope``.

    The role is assumed by Lambda and gets only ``logs:CreateLogStream``/``PutLogEvents`` on
    the log group here; callers add what the code needs. ``invoked_by`` says how the function
    is invoked (always synchronously): the reason it has no asynchronous-invocation DLQ.
    """
    role = iam.Role(
        scope,
        "Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"{description}: least privilege",
    )
    log_group = log_group or make_log_group(scope, log_retention, log_encryption_key)
    function = lambda_.Function(
        scope,
        "Function",
        description=description,
        runtime=defaults.RUNTIME,
        architecture=defaults.ARCHITECTURE,
        code=code,
        handler=handler,
        layers=list(layers),
        role=role,
        log_group=log_group,
        memory_size=memory_size,
        timeout=timeout,
        tracing=tracing,
        environment=dict(environment),
        reserved_concurrent_executions=reserved_concurrent_executions,
    )
    log_group.grant_write(role)
    no_dlq = (
        f"{invoked_by}, synchronously: an asynchronous-invocation dead-letter queue would "
        "never receive anything."
    )
    acknowledge(function, "Serverless-LambdaDLQ", no_dlq)
    if tracing != lambda_.Tracing.ACTIVE:
        acknowledge(function, "Serverless-LambdaTracing", _TRACING_REASON)
    _skip_checks(function, no_dlq, reserved_concurrent_executions is None)
    return FunctionParts(role, log_group, function)


def _skip_checks(function: lambda_.Function, no_dlq: str, unreserved: bool) -> None:
    """checkov's findings that follow from the design, acknowledged with their reasons."""
    resource: CfnResource = function.node.default_child  # type: ignore[assignment]
    skip_check(resource, "CKV_AWS_116", no_dlq)
    skip_check(resource, "CKV_AWS_117", _NO_VPC_REASON)
    skip_check(resource, "CKV_AWS_173", _ENVIRONMENT_REASON)
    if unreserved:
        skip_check(resource, "CKV_AWS_115", _CONCURRENCY_REASON)


_NO_VPC_REASON = (
    "The function calls only AWS APIs (DynamoDB, SQS, S3, Lambda, CloudWatch) over TLS, "
    "authorized by its least-privilege role, and reaches nothing inside a VPC; a VPC would add "
    "NAT or endpoint costs without protecting anything. Pass an existing function= placed in "
    "your VPC where policy requires one."
)
_ENVIRONMENT_REASON = (
    "The environment holds resource names only (consumer name, table name, queue URL, metrics "
    "namespace), no secret; Lambda encrypts it at rest with an AWS-managed key."
)
_CONCURRENCY_REASON = (
    "A stream mapping bounds the function's concurrency itself (shards x parallelization "
    "factor), and reserving concurrency would take it from the account's pool; "
    "reserved_concurrent_executions sets a limit where one is wanted."
)


def make_log_group(
    scope: Construct,
    retention: logs.RetentionDays,
    encryption_key: kms.IKey | None,
    construct_id: str = "LogGroup",
) -> logs.LogGroup:
    """A ``LogGroup`` child of ``scope`` with ``retention``, encrypted with ``encryption_key``
    when given (log lines can carry item values: error messages quote them)."""
    if encryption_key is not None:
        allow_logs_to_use(encryption_key, scope)
    return logs.LogGroup(scope, construct_id, retention=retention, encryption_key=encryption_key)


_LOGS_KEY_ACTIONS = (
    "kms:Decrypt*",
    "kms:Describe*",
    "kms:Encrypt*",
    "kms:GenerateDataKey*",
    "kms:ReEncrypt*",
)


def allow_logs_to_use(key: kms.IKey, scope: Construct) -> None:
    """Let CloudWatch Logs use ``key`` for this account's log groups in this region (the key
    policy AWS documents for encrypting log data). Only a key made in this app can be changed;
    an imported key's policy must already allow it (docs/constructs.md says how)."""
    if not isinstance(key, kms.Key):
        return
    stack = Stack.of(scope)
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="AllowCloudWatchLogsOfThisAccount",
            principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
            actions=list(_LOGS_KEY_ACTIONS),
            resources=["*"],
            conditions={
                "ArnLike": {
                    "kms:EncryptionContext:aws:logs:arn": stack.format_arn(
                        service="logs",
                        resource="log-group",
                        resource_name="*",
                        arn_format=ArnFormat.COLON_RESOURCE_NAME,
                    )
                }
            },
        )
    )
