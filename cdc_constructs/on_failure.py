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
and customer-key grants add wildcard KMS actions).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jsii
from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.acknowledge import acknowledge, acknowledge_objects, skip_check
from cdc_constructs.exceptions import Problem
from cdc_constructs.permissions import allow

__all__ = [
    "BUCKET_REDRIVE_ACTIONS",
    "BUCKET_WRITE_ACTIONS",
    "FailedBatchBucket",
    "LeastPrivilegeDestination",
    "OnFailureKind",
    "OnFailureTarget",
    "check_failed_batch_retention",
    "check_on_failure",
]

BUCKET_WRITE_ACTIONS = ("s3:PutObject",)
"""What Lambda's mapping does with an S3 destination's objects (on ``<bucket>/*``). AWS also
lists ``s3:ListBucket`` (on the bucket) for an S3 destination: :data:`BUCKET_LIST_ACTIONS`."""
BUCKET_LIST_ACTIONS = ("s3:ListBucket",)
"""On the bucket itself: the mapping (AWS's documented requirement) and the redrive list it."""
BUCKET_WRITE_KEY_ACTIONS = ("kms:GenerateDataKey",)
"""Writing an object into a bucket under a customer key (AWS's documented requirement)."""
BUCKET_REDRIVE_ACTIONS = ("s3:DeleteObject", "s3:GetObject")
"""The redrive reads an object and deletes it once replayed (on ``<bucket>/*``); it never
writes one."""
BUCKET_READ_KEY_ACTIONS = ("kms:Decrypt",)
"""Reading an object of a bucket under a customer key."""
QUEUE_SEND_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")
TOPIC_PUBLISH_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")
_DESTINATION_ACTIONS = {"sqs": ("sqs:SendMessage",), "sns": ("sns:Publish",)}
_SCRATCH_STREAM_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/scratch/stream/scratch"
_SUPPORTED = "aws-cdk-lib's SqsDlq, SnsDlq or S3OnFailureDestination"


class OnFailureKind(enum.StrEnum):
    """Where failed batches go."""

    S3 = "s3"
    SQS = "sqs"
    SNS = "sns"

    @property
    def keeps_records(self) -> bool:
        """Whether the destination holds the batch itself (S3), not only a pointer."""
        return self is OnFailureKind.S3


@dataclass(frozen=True)
class OnFailureTarget:
    """What the consumer, its redrive and its alarms need to know of the destination."""

    kind: OnFailureKind
    arn: str
    key_arns: tuple[str, ...] = ()
    bucket: s3.IBucket | None = None
    queue: sqs.IQueue | None = None

    @classmethod
    def of_bucket(cls, bucket: s3.IBucket) -> OnFailureTarget:
        key = bucket.encryption_key
        return cls(OnFailureKind.S3, bucket.bucket_arn, _arns(key), bucket=bucket)

    @classmethod
    def of_queue(cls, queue: sqs.IQueue) -> OnFailureTarget:
        key = queue.encryption_master_key
        return cls(OnFailureKind.SQS, queue.queue_arn, _arns(key), queue=queue)

    @classmethod
    def of_destination(
        cls, scope: Construct, destination: lambda_.IEventSourceDlq
    ) -> OnFailureTarget:
        """The target of one of aws-cdk-lib's destinations (see :func:`check_on_failure`).

        aws-cdk-lib keeps a destination's queue, topic or bucket private, so the destination is
        bound once to a scratch function whose role records what it would grant: the ARN it
        returns is the destination, the KMS statements name its key. The scratch construct is
        removed at once; nothing of it is synthesized.
        """
        kind = _kind_of(destination)
        if kind is None:
            raise TypeError(f"on_failure: {destination!r} is not {_SUPPORTED}")
        arn, statements = _bind_to_scratch(scope, destination)
        key_arns = tuple(
            resource
            for statement in statements
            if any(str(action).startswith("kms:") for action in _list(statement["Action"]))
            for resource in _list(statement["Resource"])
        )
        if kind is OnFailureKind.S3:
            bucket = s3.Bucket.from_bucket_attributes(
                scope,
                "OnFailureBucketRef",
                bucket_arn=arn,
                encryption_key=(
                    kms.Key.from_key_arn(scope, "OnFailureBucketKeyRef", key_arns[0])
                    if key_arns
                    else None
                ),
            )
            return cls(kind, arn, key_arns, bucket=bucket)
        if kind is OnFailureKind.SQS:
            queue = sqs.Queue.from_queue_attributes(
                scope,
                "OnFailureQueueRef",
                queue_arn=arn,
                key_arn=key_arns[0] if key_arns else None,
            )
            return cls(kind, arn, key_arns, queue=queue)
        return cls(kind, arn, key_arns)

    def grant_put(self, grantee: iam.IGrantable) -> None:
        """What the mapping (on the function's role) needs to deliver, and nothing more."""
        key_actions: tuple[str, ...]
        if self.kind is OnFailureKind.S3:
            statements = [
                allow(BUCKET_WRITE_ACTIONS, [f"{self.arn}/*"]),
                allow(BUCKET_LIST_ACTIONS, [self.arn]),
            ]
            key_actions = BUCKET_WRITE_KEY_ACTIONS
        else:
            statements = [allow(_DESTINATION_ACTIONS[self.kind.value], [self.arn])]
            key_actions = (
                QUEUE_SEND_KEY_ACTIONS
                if self.kind is OnFailureKind.SQS
                else TOPIC_PUBLISH_KEY_ACTIONS
            )
        if self.key_arns:
            statements.append(allow(key_actions, list(self.key_arns)))
        for statement in statements:
            grantee.grant_principal.add_to_principal_policy(statement)
        if self.kind is OnFailureKind.S3:
            acknowledge_objects(
                grantee,
                self.arn,
                "s3:PutObject on the on-failure bucket's objects only: Lambda names each failed "
                "batch's object itself (aws/lambda/<mapping>/<shard>/<date>/<time>-<uuid>), so "
                "the keys cannot be listed in the policy.",
            )

    def grant_redrive(self, grantee: iam.IGrantable) -> None:
        """An S3 destination: list, read and delete its objects (the redrive), nothing more."""
        if self.kind is not OnFailureKind.S3:
            return
        statements = [
            allow(BUCKET_LIST_ACTIONS, [self.arn]),
            allow(BUCKET_REDRIVE_ACTIONS, [f"{self.arn}/*"]),
        ]
        if self.key_arns:
            statements.append(allow(BUCKET_READ_KEY_ACTIONS, list(self.key_arns)))
        for statement in statements:
            grantee.grant_principal.add_to_principal_policy(statement)
        acknowledge_objects(
            grantee,
            self.arn,
            "s3:GetObject and s3:DeleteObject on the on-failure bucket's objects only: they are "
            "the failed batches Lambda wrote under keys it names, read and deleted once replayed.",
        )


@jsii.implements(lambda_.IEventSourceDlq)
class LeastPrivilegeDestination:
    """An on-failure destination that grants the function only what delivering needs:
    ``s3:PutObject`` on the bucket's objects and ``s3:ListBucket`` on the bucket (plus
    ``kms:GenerateDataKey`` on its key), ``sqs:SendMessage``, or ``sns:Publish`` (plus the
    key's data-key actions)."""

    def __init__(self, target: OnFailureTarget) -> None:
        self.target = target

    def bind(
        self, _target: lambda_.IEventSourceMapping, target_handler: lambda_.IFunction
    ) -> lambda_.DlqDestinationConfig:
        self.target.grant_put(target_handler)
        return lambda_.DlqDestinationConfig(destination=self.target.arn)


class FailedBatchBucket(Construct):
    """The default on-failure destination: a bucket that keeps each failed batch whole.

    Encrypted (S3-managed keys, or ``encryption_key``), TLS-only (a bucket policy denies
    requests without ``aws:SecureTransport``), all public access blocked, objects owned by the
    bucket owner, **versioned** (a redriven object is deleted, which keeps it as a noncurrent
    version: recoverable and auditable for ``retention``), and retained when the stack is
    deleted or the bucket replaced (``removal_policy``, default ``RemovalPolicy.RETAIN``: it may
    hold the only copy of changes the stream has trimmed; ``defaults.RECORD_REMOVAL_POLICY``).
    Its lifecycle expires objects and noncurrent versions ``retention`` after they were
    written or redriven (default 14 days, as long as SQS keeps a message: the time to
    notice the alarm and redrive) and aborts incomplete uploads after a day.

    Escape hatch: :attr:`bucket`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        retention: Duration | None = None,
        encryption_key: kms.IKey | None = None,
        removal_policy: RemovalPolicy = defaults.RECORD_REMOVAL_POLICY,
    ) -> None:
        super().__init__(scope, construct_id)
        retention = retention or Duration.days(defaults.FAILED_BATCH_RETENTION_DAYS)
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=(
                s3.BucketEncryption.KMS
                if encryption_key is not None
                else s3.BucketEncryption.S3_MANAGED
            ),
            encryption_key=encryption_key,
            bucket_key_enabled=True if encryption_key is not None else None,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=True,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="FailedBatchRetention",
                    expiration=retention,
                    noncurrent_version_expiration=retention,
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
            removal_policy=removal_policy,
        )
        """The bucket (escape hatch)."""
        no_access_logs = (
            "Only the stream mapping writes here (one object per failed batch); people read it, "
            "and so does the consumer's redrive function where it has one (a KinesisConsumer "
            "has none), deleting an object once replayed; the objects' versions are the record "
            "of what failed and was redriven. Give the bucket server access logs (on_failure="
            "S3OnFailureDestination(your_bucket)) where an access log per request is required."
        )
        resource = self.bucket.node.default_child
        acknowledge(resource, "AwsSolutions-S1", no_access_logs)  # type: ignore[arg-type]
        skip_check(resource, "CKV_AWS_18", no_access_logs)  # type: ignore[arg-type]


def check_on_failure(on_failure: Any, on_failure_queue: Any) -> list[Problem]:
    """``on_failure`` is one of aws-cdk-lib's three destinations, and not given together with
    the older ``on_failure_queue``."""
    problems = []
    if on_failure is not None and _kind_of(on_failure) is None:
        problems.append(Problem("on_failure", on_failure, _SUPPORTED))
    if on_failure is not None and on_failure_queue is not None:
        problems.append(
            Problem(
                "on_failure_queue",
                "given with on_failure",
                "one destination: on_failure=SqsDlq(queue) replaces on_failure_queue=queue",
            )
        )
    return problems


def check_failed_batch_retention(retention: Any) -> list[Problem]:
    """The default bucket keeps failed batches at least 14 days."""
    if retention is None:
        return []
    days = retention.to_days(integral=False) if isinstance(retention, Duration) else None
    if days is not None and days >= defaults.FAILED_BATCH_RETENTION_DAYS and days == int(days):
        return []
    return [
        Problem(
            "failed_batch_retention",
            retention if days is None else f"{days:g} days",
            f"a whole number of days, at least {defaults.FAILED_BATCH_RETENTION_DAYS} (the time "
            "to notice the alarm and redrive)",
        )
    ]


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


def _kind_of(destination: Any) -> OnFailureKind | None:
    if isinstance(destination, sources.S3OnFailureDestination):
        return OnFailureKind.S3
    if isinstance(destination, sources.SqsDlq):
        return OnFailureKind.SQS
    if isinstance(destination, sources.SnsDlq):
        return OnFailureKind.SNS
    return None


def _arns(key: kms.IKey | None) -> tuple[str, ...]:
    return (key.key_arn,) if key is not None else ()


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else [value]
