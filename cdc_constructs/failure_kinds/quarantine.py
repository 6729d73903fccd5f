"""The quarantine failure kind: where the consumer runtime keeps a poison record whole, with its
error (docs/design.md §4).

A queue (given, or made here: encrypted, TLS-only, 14 days) holds one message per record. SQS
refuses a message over the queue's ``MaximumMessageSize`` (256 KiB unless set), and a record can
be larger: a DynamoDB item reaches 400 KB, a record carries two images, binary travels as
base64. The runtime then keeps the whole quarantine message as an object under
``cdc-quarantine/<consumer>/`` (:data:`cdc_consumer.quarantine_shapes.QUARANTINE_S3_PREFIX`) and
sends a
pointer; the redrive reads the object back and deletes it with the message. That bucket is the
consumer's failed-batch bucket when its on-failure destination has one (the default: one bucket
of failures, one lifecycle, already read and cleaned by the redrive), else a
:class:`~cdc_constructs.failure_kinds.bucket.FailedBatchBucket` of its own.

This module is the construct side: what is made, what the consumer (send, put under the prefix)
and the redrive (drain, read and delete under the prefix) are granted, the queue's retention (a
replay window the markers must outlive) and its depth alarm. The redrive reads it with
``cdc_consumer.redrive.sources.quarantine``.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from cdc_consumer.environment_variables import QUARANTINE_QUEUE_ENV
from cdc_consumer.quarantine_shapes import QUARANTINE_S3_PREFIX
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.acknowledge import acknowledge_objects
from cdc_constructs.failure_age import oldest_message_age
from cdc_constructs.failure_kinds.bucket import FailedBatchBucket
from cdc_constructs.failure_kinds.kind import OnFailureTarget, RedriveAccess
from cdc_constructs.permissions import allow, grant_key, grant_send
from cdc_constructs.queues import dead_letter_queue

__all__ = [
    "QUARANTINE_PUT_ACTIONS",
    "QUARANTINE_READ_ACTIONS",
    "Quarantine",
    "queue_retention_of",
]

QUARANTINE_PUT_ACTIONS = ("s3:PutObject",)
"""What the consumer does with a quarantined record too big for a message (on the prefix)."""
QUARANTINE_READ_ACTIONS = ("s3:DeleteObject", "s3:GetObject")
"""What the redrive does with it: read it back, delete it once replayed."""


class Quarantine:
    """A consumer's quarantine: its queue and the bucket for records too big for a message
    (``shared``: the on-failure destination's bucket, which needs no grant of its own). A
    redrive may be given either alone (``StreamRedrive(quarantine_queue=...)``)."""

    def __init__(self, queue: sqs.IQueue | None, bucket: s3.IBucket | None, shared: bool) -> None:
        self.queue = queue
        self.bucket = bucket
        self.shared = shared

    @classmethod
    def provision(
        cls,
        consumer: Construct,
        on_failure: OnFailureTarget,
        *,
        queue: sqs.IQueue | None,
        retention: Duration | None,
        encryption_key: kms.IKey | None,
        removal_policy: RemovalPolicy,
    ) -> Quarantine:
        """The queue given or made here; the on-failure destination's bucket when it has one,
        else a bucket made here (as the default failed-batch bucket: ``retention``,
        ``encryption_key``, ``removal_policy``)."""
        queue = queue or dead_letter_queue(
            consumer,
            "QuarantineQueue",
            purpose="poison records quarantined by the consumer runtime, with their payload",
            encryption_key=encryption_key,
            retention_days=defaults.QUARANTINE_QUEUE_RETENTION_DAYS,
            removal_policy=removal_policy,
        )
        if on_failure.bucket is not None:
            return cls(queue, on_failure.bucket, shared=True)
        bucket = FailedBatchBucket(
            consumer,
            "QuarantineRecords",
            retention=retention,
            encryption_key=encryption_key,
            removal_policy=removal_policy,
        ).bucket
        return cls(queue, bucket, shared=False)

    def grant_put(self, grantee: iam.IGrantable) -> None:
        """Send to the queue; put a record too big for a message under ``cdc-quarantine/``
        (the on-failure bucket's grant, PutObject on its objects, covers a shared bucket)."""
        assert self.queue is not None and self.bucket is not None  # a consumer has both
        grant_send(grantee, self.queue)
        if not self.shared:
            _grant_objects(grantee, self.bucket, put=True)

    def grant_redrive(self, access: RedriveAccess) -> None:
        """Drain the queue; read and delete under ``cdc-quarantine/`` (and decrypt)."""
        if self.queue is not None:
            access.drain(self.queue)
        bucket = self.bucket
        if bucket is not None and not self.shared:
            access.add(lambda grantee: _grant_objects(grantee, bucket, put=False))

    def redrive_environment(self) -> dict[str, str]:
        return {QUARANTINE_QUEUE_ENV: self.queue.queue_url} if self.queue is not None else {}

    def retention(self) -> int:
        """How long the queue keeps a record, seconds (SQS's 14-day maximum when the queue is
        not made in this app)."""
        assert self.queue is not None  # a consumer has one
        cfn = self.queue.node.default_child if isinstance(self.queue, sqs.Queue) else None
        if cfn is None:
            return defaults.SQS_MAX_RETENTION_SECONDS
        resolved = Stack.of(self.queue).resolve(cfn.message_retention_period)  # type: ignore[attr-defined]
        found = queue_retention_of(resolved)
        return defaults.SQS_MAX_RETENTION_SECONDS if found is None else found

    def alarm_metrics(
        self, period: Duration, consumer_name: str
    ) -> dict[str, tuple[cloudwatch.IMetric, str]]:
        """``QuarantineQueueDepth``: visible messages ≥ 1."""
        assert self.queue is not None  # a consumer has one
        depth = self.queue.metric_approximate_number_of_messages_visible(
            statistic=cloudwatch.Stats.MAXIMUM, period=period
        )
        return {
            "QuarantineQueueDepth": (
                depth,
                f"{consumer_name}: poison records are waiting in the quarantine queue",
            )
        }

    def age_metric(self) -> tuple[str, cloudwatch.IMetric, str]:
        """``QuarantineAge``: the queue's ``ApproximateAgeOfOldestMessage``."""
        assert self.queue is not None  # a consumer has one
        return "QuarantineAge", oldest_message_age(self.queue), "the queue deletes it"


def queue_retention_of(retention: object) -> int | None:
    """A queue's ``MessageRetentionPeriod`` as synthesized: SQS's default 4 days when unset;
    None when not known at synthesis."""
    if retention is None:
        return defaults.SQS_DEFAULT_RETENTION_SECONDS
    if isinstance(retention, int):
        return retention
    if isinstance(retention, str) and retention.isdigit():
        return int(retention)
    return None


def _grant_objects(grantee: iam.IGrantable, bucket: s3.IBucket, *, put: bool) -> None:
    """Put (the consumer) or read and delete (the redrive) under ``cdc-quarantine/``, and the
    key's matching action, nothing more."""
    actions, key_action = (
        (QUARANTINE_PUT_ACTIONS, "kms:GenerateDataKey")
        if put
        else (QUARANTINE_READ_ACTIONS, "kms:Decrypt")
    )
    objects = f"{bucket.bucket_arn}/{QUARANTINE_S3_PREFIX}*"
    grantee.grant_principal.add_to_principal_policy(allow(actions, [objects]))
    grant_key(grantee, bucket.encryption_key, (key_action,))
    acknowledge_objects(
        grantee,
        bucket.bucket_arn,
        "s3:PutObject under cdc-quarantine/ only: the runtime names "
        "each record's object (<consumer>/<eventID>-<uuid>.json) when it quarantines it"
        if put
        else "s3:GetObject and s3:DeleteObject under cdc-quarantine/ only: "
        "the quarantined records too big for a message, read and deleted once replayed",
        key_prefix=QUARANTINE_S3_PREFIX,
    )
