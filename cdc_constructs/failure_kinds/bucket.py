"""The S3 bucket failure kind: the default on-failure destination, which keeps each failed batch
whole (docs/design.md §3, §5).

Lambda writes an S3 destination the invocation record *and* the batch (``payload``: AWS Lambda
developer guide, "Retain discarded records for a DynamoDB event source"), so a redrive replays
it whenever it runs, whatever the stream still holds. This module is the construct side of the
kind: the bucket made by default (:class:`FailedBatchBucket`), the mapping's and the redrive's
grants, the redrive's variable, and how long a batch is kept (the bucket's lifecycle). The
redrive reads it with ``cdc_consumer.redrive.sources.bucket``; the local pipeline writes it
with ``cdc_local.destinations.bucket``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_s3 as s3
from cdc_consumer.environment_variables import ON_FAILURE_BUCKET_ENV
from cdc_consumer.metric_names import OLDEST_FAILURE_AGE
from cdc_consumer.redrive_shapes import ON_FAILURE_S3_PREFIX
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.acknowledge import acknowledge, acknowledge_objects, skip_check
from cdc_constructs.alarms import consumer_metric
from cdc_constructs.exceptions import Problem
from cdc_constructs.failure_kinds.kind import (
    OnFailureTarget,
    RedriveAccess,
    RedriveSource,
    key_arns_of,
)
from cdc_constructs.permissions import STREAM_LINEAGE_ACTIONS, allow

__all__ = [
    "BUCKET",
    "BUCKET_LIST_ACTIONS",
    "BUCKET_READ_KEY_ACTIONS",
    "BUCKET_REDRIVE_ACTIONS",
    "BUCKET_WRITE_ACTIONS",
    "BUCKET_WRITE_KEY_ACTIONS",
    "BucketKind",
    "FailedBatchBucket",
    "check_failed_batch_retention",
    "failed_batch_retention_of",
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
DAY_SECONDS = 24 * 3600


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


class BucketKind:
    """An S3 bucket (``S3OnFailureDestination``): keeps the batch itself."""

    name = "s3"
    destination_type: type = sources.S3OnFailureDestination
    keeps_records = True
    cfn_type = "AWS::S3::Bucket"
    age_checked_by_redrive = True
    redrive_source: RedriveSource | None = None  # in the runtime layer

    def provision(
        self,
        consumer: Construct,
        *,
        retention: Duration | None,
        encryption_key: kms.IKey | None,
        removal_policy: RemovalPolicy,
    ) -> OnFailureTarget:
        """The consumer's default destination: a :class:`FailedBatchBucket` made here."""
        bucket = FailedBatchBucket(
            consumer,
            "FailedBatches",
            retention=retention,
            encryption_key=encryption_key,
            removal_policy=removal_policy,
        )
        made = retention or Duration.days(defaults.FAILED_BATCH_RETENTION_DAYS)
        return self.target(bucket.bucket, made_retention=made)

    def target(
        self, bucket: s3.IBucket, *, made_retention: Duration | None = None
    ) -> OnFailureTarget:
        """``bucket`` as the destination (``made_retention``: its lifecycle, when made here)."""
        keys = key_arns_of(bucket.encryption_key)
        return OnFailureTarget(
            self, bucket.bucket_arn, keys, bucket=bucket, made_retention=made_retention
        )

    def reference(self, scope: Construct, arn: str, key_arns: tuple[str, ...]) -> OnFailureTarget:
        key = (
            kms.Key.from_key_arn(scope, "OnFailureBucketKeyRef", key_arns[0]) if key_arns else None
        )
        bucket = s3.Bucket.from_bucket_attributes(
            scope, "OnFailureBucketRef", bucket_arn=arn, encryption_key=key
        )
        return OnFailureTarget(self, arn, key_arns, bucket=bucket)

    def grant_put(self, target: OnFailureTarget, grantee: iam.IGrantable) -> None:
        """``s3:PutObject`` on its objects and ``s3:ListBucket`` on it (plus
        ``kms:GenerateDataKey`` on its key)."""
        statements = [
            allow(BUCKET_WRITE_ACTIONS, [f"{target.arn}/*"]),
            allow(BUCKET_LIST_ACTIONS, [target.arn]),
        ]
        if target.key_arns:
            statements.append(allow(BUCKET_WRITE_KEY_ACTIONS, list(target.key_arns)))
        for statement in statements:
            grantee.grant_principal.add_to_principal_policy(statement)
        acknowledge_objects(
            grantee,
            target.arn,
            "s3:PutObject on the on-failure bucket's objects only: Lambda names each failed "
            "batch's object itself (aws/lambda/<mapping>/<shard>/<date>/<time>-<uuid>), so "
            "the keys cannot be listed in the policy.",
        )

    def grant_redrive(self, target: OnFailureTarget, access: RedriveAccess) -> None:
        """List, read and delete its objects; describe the stream (a child shard's batches are
        replayed after its parent's)."""
        access.read_stream(STREAM_LINEAGE_ACTIONS)
        access.add(lambda grantee: _grant_objects(target, grantee))

    def redrive_environment(self, target: OnFailureTarget) -> dict[str, str]:
        assert target.bucket is not None
        return {ON_FAILURE_BUCKET_ENV: target.bucket.bucket_name}

    def retention(
        self, consumer: Construct, target: OnFailureTarget
    ) -> tuple[int | None, list[Problem]]:
        """The lifecycle of the bucket made here, else of the bucket of this app it names."""
        if target.made_retention is not None:
            return int(target.made_retention.to_days()) * DAY_SECONDS, []
        bucket = _bucket_in_app(consumer, target.arn)
        found = None if bucket is None else failed_batch_retention_of(_lifecycle(bucket))
        if found is not None:
            return found, []
        where = "keeps them forever" if bucket is not None else "is not defined in this app"
        return None, [
            Problem(
                "on_failure",
                "S3OnFailureDestination of a bucket whose lifecycle " + where,
                "a bucket of this app with a lifecycle rule expiring its objects (say "
                "s3.LifecycleRule(expiration=Duration.days(14))), or marker_lifetime set to at "
                "least the time the bucket keeps a failed batch plus the consumer's other "
                "windows: markers must outlive every copy of their records (docs/design.md)",
            )
        ]

    def arn_retention(self, arn: str) -> int | None:
        """None: its lifecycle is in its own configuration, not in its ARN."""
        return None

    def template_retention(self, properties: Mapping[str, Any]) -> int | None:
        """The lifecycle's expiration that applies to every on-failure object."""
        return failed_batch_retention_of(properties.get("LifecycleConfiguration"))

    def alarm_metrics(
        self, target: OnFailureTarget, period: Duration, consumer_name: str
    ) -> dict[str, tuple[cloudwatch.IMetric, str]]:
        """None of its own: ``DroppedRecords`` counts what went to it."""
        return {}

    def age_metric(
        self, target: OnFailureTarget, consumer_name: str, namespace: str
    ) -> tuple[str, cloudwatch.IMetric, str]:
        """``FailedBatchAge``: S3 publishes no age of its objects; the redrive function's
        scheduled check lists the mapping's prefix and puts the oldest one's age
        (``OldestFailedBatchAge``, dimension Consumer)."""
        metric = consumer_metric(
            namespace, consumer_name, OLDEST_FAILURE_AGE.name, cloudwatch.Stats.MAXIMUM
        ).with_(period=Duration.seconds(defaults.FAILURE_AGE_PERIOD_SECONDS))
        return "FailedBatchAge", metric, "the bucket's lifecycle deletes it"


BUCKET = BucketKind()
"""The S3 bucket kind."""


def _grant_objects(target: OnFailureTarget, grantee: iam.IGrantable) -> None:
    statements = [
        allow(BUCKET_LIST_ACTIONS, [target.arn]),
        allow(BUCKET_REDRIVE_ACTIONS, [f"{target.arn}/*"]),
    ]
    if target.key_arns:
        statements.append(allow(BUCKET_READ_KEY_ACTIONS, list(target.key_arns)))
    for statement in statements:
        grantee.grant_principal.add_to_principal_policy(statement)
    acknowledge_objects(
        grantee,
        target.arn,
        "s3:GetObject and s3:DeleteObject on the on-failure bucket's objects only: they are "
        "the failed batches Lambda wrote under keys it names, read and deleted once replayed.",
    )


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


def failed_batch_retention_of(lifecycle: Any) -> int | None:
    """How long a bucket whose ``LifecycleConfiguration`` (CloudFormation's shape) is
    ``lifecycle`` keeps an on-failure object (``aws/lambda/...``), whole seconds: the earliest
    expiration of the enabled rules that apply to every such object. None: kept forever (no
    such rule), or not known at synthesis (an intrinsic)."""
    rules = lifecycle.get("Rules") if isinstance(lifecycle, Mapping) else None
    days = [
        rule["ExpirationInDays"]
        for rule in (rules if isinstance(rules, list) else [])
        if isinstance(rule, Mapping)
        and rule.get("Status") == "Enabled"
        and isinstance(rule.get("ExpirationInDays"), int)
        and _applies_to_failed_batches(rule)
    ]
    return min(days) * DAY_SECONDS if days else None


def _applies_to_failed_batches(rule: Mapping[str, Any]) -> bool:
    """A rule without tag or size filters whose prefix (if any) every on-failure key has."""
    if any(key in rule for key in ("TagFilters", "ObjectSizeGreaterThan", "ObjectSizeLessThan")):
        return False
    prefix = rule.get("Prefix", "")
    return isinstance(prefix, str) and ON_FAILURE_S3_PREFIX.startswith(prefix)


def _bucket_in_app(consumer: Construct, arn: str) -> s3.Bucket | None:
    for construct in consumer.node.root.node.find_all():
        if isinstance(construct, s3.Bucket) and construct.bucket_arn == arn:
            return construct
    return None


def _lifecycle(bucket: s3.Bucket) -> Any:
    """The bucket's ``LifecycleConfiguration`` as it stands, in CloudFormation's shape (the L1's
    properties resolved: its own getter cannot return the L2's lazy value through jsii)."""
    properties = Stack.of(bucket).resolve(bucket.node.default_child._cfn_properties)  # type: ignore[union-attr]
    return _pascal_case(properties.get("lifecycleConfiguration"))


def _pascal_case(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key[:1].upper() + key[1:]: _pascal_case(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_pascal_case(item) for item in value]
    return value
