"""Where the runtime keeps a quarantined record too big for a queue message (docs/design.md §4).

SQS refuses a message over the queue's ``MaximumMessageSize`` (256 KiB unless set), and a
record can be larger: a DynamoDB item reaches 400 KB, a record carries two images, binary
travels as base64. The runtime then keeps the whole quarantine message as an object under
``cdc-quarantine/<consumer>/`` (:data:`cdc_consumer.contract.QUARANTINE_S3_PREFIX`) and sends a
pointer; the redrive reads the object back and deletes it with the message.

The bucket is the consumer's failed-batch bucket when its on-failure destination is S3 (the
default: one bucket of failures, one lifecycle, already read and cleaned by the redrive), else a
:class:`~cdc_constructs.on_failure.FailedBatchBucket` of its own (SQS and SNS destinations have
no bucket). The function may only put objects under that prefix.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from cdc_consumer.contract import QUARANTINE_S3_PREFIX
from constructs import Construct

from cdc_constructs.acknowledge import acknowledge_objects
from cdc_constructs.on_failure import FailedBatchBucket, OnFailureTarget
from cdc_constructs.permissions import allow, grant_key

__all__ = [
    "QUARANTINE_PUT_ACTIONS",
    "QUARANTINE_READ_ACTIONS",
    "grant_quarantine_put",
    "grant_quarantine_redrive",
    "quarantine_bucket",
]

QUARANTINE_PUT_ACTIONS = ("s3:PutObject",)
"""What the consumer does with a quarantined record too big for a message (on the prefix)."""
QUARANTINE_READ_ACTIONS = ("s3:DeleteObject", "s3:GetObject")
"""What the redrive does with it: read it back, delete it once replayed."""


def quarantine_bucket(
    consumer: Construct,
    target: OnFailureTarget,
    *,
    retention: Duration | None,
    encryption_key: kms.IKey | None,
    removal_policy: RemovalPolicy,
) -> s3.IBucket:
    """The failed-batch bucket when the destination is S3, else a bucket made here (as the
    default failed-batch bucket: ``retention``, ``encryption_key``, ``removal_policy``)."""
    if target.bucket is not None:
        return target.bucket
    return FailedBatchBucket(
        consumer,
        "QuarantineRecords",
        retention=retention,
        encryption_key=encryption_key,
        removal_policy=removal_policy,
    ).bucket


def _objects(bucket: s3.IBucket) -> str:
    return f"{bucket.bucket_arn}/{QUARANTINE_S3_PREFIX}*"


def grant_quarantine_put(grantee: iam.IGrantable, bucket: s3.IBucket) -> None:
    """``s3:PutObject`` under ``cdc-quarantine/`` (and the key's data-key action), nothing
    more."""
    grantee.grant_principal.add_to_principal_policy(
        allow(QUARANTINE_PUT_ACTIONS, [_objects(bucket)])
    )
    grant_key(grantee, bucket.encryption_key, ("kms:GenerateDataKey",))
    acknowledge_objects(
        grantee,
        bucket.bucket_arn,
        "s3:PutObject under cdc-quarantine/ only: the runtime names "
        "each record's object (<consumer>/<eventID>-<uuid>.json) when it quarantines it",
        key_prefix=QUARANTINE_S3_PREFIX,
    )


def grant_quarantine_redrive(grantee: iam.IGrantable, bucket: s3.IBucket) -> None:
    """Read and delete under ``cdc-quarantine/`` (and decrypt), nothing more."""
    grantee.grant_principal.add_to_principal_policy(
        allow(QUARANTINE_READ_ACTIONS, [_objects(bucket)])
    )
    grant_key(grantee, bucket.encryption_key, ("kms:Decrypt",))
    acknowledge_objects(
        grantee,
        bucket.bucket_arn,
        "s3:GetObject and s3:DeleteObject under cdc-quarantine/ only: "
        "the quarantined records too big for a message, read and deleted once replayed",
        key_prefix=QUARANTINE_S3_PREFIX,
    )
