"""The on-failure destination of a stream consumer's event source mapping (docs/design.md §3, §5).

When a batch runs out of retries or record age, Lambda sends an invocation record to the
mapping's on-failure destination. An SQS queue or SNS topic gets the batch's *metadata* only
(shard, first and last sequence numbers): the records must be read back from the stream, which
trims them after 24 hours. An **S3 bucket also gets the batch itself** (AWS Lambda developer
guide, "Retain discarded records for a DynamoDB event source"), so a redrive replays it whenever
it runs. That is why the default destination is a bucket (:class:`FailedBatchBucket`).

``StreamConsumer(on_failure=...)`` takes aws-cdk-lib's own destinations - ``SqsDlq``,
``SnsDlq``, ``S3OnFailureDestination`` - and grants each with least privilege
(:class:`LeastPrivilegeDestination`) instead of their own grants (``SqsDlq`` adds
GetQueueAttributes and GetQueueUrl, ``S3OnFailureDestination`` read-write on the whole bucket,
and customer-key grants add wildcard KMS actions). What each kind grants, keeps and alarms on
is its module's (:mod:`cdc_constructs.failure_kinds`); this module finds the kind and binds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jsii
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from cdc_constructs.exceptions import Problem
from cdc_constructs.failure_kinds import (
    BUCKET_REDRIVE_ACTIONS,
    BUCKET_WRITE_ACTIONS,
    FailedBatchBucket,
    OnFailureTarget,
    check_failed_batch_retention,
    kind_of,
    supported,
)

__all__ = [
    "BUCKET_REDRIVE_ACTIONS",
    "BUCKET_WRITE_ACTIONS",
    "FailedBatchBucket",
    "LeastPrivilegeDestination",
    "OnFailureTarget",
    "check_failed_batch_retention",
    "check_on_failure",
    "target_of_destination",
]

_SCRATCH_STREAM_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/scratch/stream/scratch"


def target_of_destination(
    scope: Construct, destination: lambda_.IEventSourceDlq
) -> OnFailureTarget:
    """The target of one of aws-cdk-lib's destinations (see :func:`check_on_failure`).

    aws-cdk-lib keeps a destination's queue, topic or bucket private, so the destination is
    bound once to a scratch function whose role records what it would grant: the ARN it
    returns is the destination, the KMS statements name its key. The scratch construct is
    removed at once; nothing of it is synthesized. The destination's kind makes the target.
    """
    kind = kind_of(destination)
    if kind is None:
        raise TypeError(f"on_failure: {destination!r} is not {supported()}")
    arn, statements = _bind_to_scratch(scope, destination)
    key_arns = tuple(
        resource
        for statement in statements
        if any(str(action).startswith("kms:") for action in _list(statement["Action"]))
        for resource in _list(statement["Resource"])
    )
    return kind.reference(scope, arn, key_arns)


@jsii.implements(lambda_.IEventSourceDlq)
class LeastPrivilegeDestination:
    """An on-failure destination that grants the function only what delivering needs:
    ``s3:PutObject`` on the bucket's objects and ``s3:ListBucket`` on the bucket (plus
    ``kms:GenerateDataKey`` on its key), ``sqs:SendMessage``, or ``sns:Publish`` (plus the
    key's data-key actions): its kind's :meth:`~cdc_constructs.failure_kinds.kind.FailureKind.
    grant_put`."""

    def __init__(self, target: OnFailureTarget) -> None:
        self.target = target

    def bind(
        self, _target: lambda_.IEventSourceMapping, target_handler: lambda_.IFunction
    ) -> lambda_.DlqDestinationConfig:
        self.target.grant_put(target_handler)
        return lambda_.DlqDestinationConfig(destination=self.target.arn)


def check_on_failure(on_failure: Any, on_failure_queue: Any) -> list[Problem]:
    """``on_failure`` is a destination of a known kind, and not given together with the older
    ``on_failure_queue``."""
    problems = []
    if on_failure is not None and kind_of(on_failure) is None:
        problems.append(Problem("on_failure", on_failure, supported()))
    if on_failure is not None and on_failure_queue is not None:
        problems.append(
            Problem(
                "on_failure_queue",
                "given with on_failure",
                "one destination: on_failure=SqsDlq(queue) replaces on_failure_queue=queue",
            )
        )
    return problems


def _bind_to_scratch(
    scope: Construct, destination: lambda_.IEventSourceDlq
) -> tuple[str, list[Any]]:
    """Bind ``destination`` to a scratch function; return the ARN it names and the statements
    it would grant. The scratch construct is removed before anything else happens."""
    scratch = Construct(scope, "OnFailureScratch")
    try:
        role = iam.Role(scratch, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
        function = lambda_.Function(
            scratch,
            "Function",
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler="index.handler",
            code=lambda_.Code.from_inline("def handler(event, context):\n    pass\n"),
            role=role,
        )
        mapping = lambda_.EventSourceMapping(
            scratch,
            "Mapping",
            target=function,
            event_source_arn=_SCRATCH_STREAM_ARN,
            starting_position=lambda_.StartingPosition.TRIM_HORIZON,
        )
        config = destination.bind(mapping, function)
        policy = role.node.try_find_child("DefaultPolicy")
        document = policy.document.to_json() if policy is not None else {}  # type: ignore[attr-defined]
    finally:
        scope.node.try_remove_child("OnFailureScratch")
    return config.destination, list(document.get("Statement", []))


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else [value]
