"""Dead-letter queues: encrypted, TLS-only, 14 days retention, retained by default."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.acknowledge import acknowledge, skip_check


def dead_letter_queue(
    scope: Construct,
    construct_id: str,
    *,
    purpose: str,
    encryption_key: kms.IKey | None = None,
    retention_days: int = defaults.ON_FAILURE_QUEUE_RETENTION_DAYS,
    removal_policy: RemovalPolicy = defaults.RECORD_REMOVAL_POLICY,
) -> sqs.Queue:
    """A queue that is itself a dead-letter destination.

    Encrypted (SQS-managed keys, or ``encryption_key``), TLS-only (``enforce_ssl``: a queue
    policy denies requests without ``aws:SecureTransport``), kept 14 days (the SQS maximum).
    ``purpose`` goes into the cdk-nag acknowledgement: a dead-letter queue has no
    dead-letter queue of its own, because nothing consumes from it automatically.
    """
    queue = sqs.Queue(
        scope,
        construct_id,
        encryption=(
            sqs.QueueEncryption.KMS
            if encryption_key is not None
            else sqs.QueueEncryption.SQS_MANAGED
        ),
        encryption_master_key=encryption_key,
        enforce_ssl=True,
        retention_period=Duration.days(retention_days),
        removal_policy=removal_policy,
    )
    reason = (
        f"This queue is itself a dead-letter destination ({purpose}); its messages are read "
        "by people (and by a redrive, where the consumer has one), never by an automatic "
        "consumer, so a further dead-letter queue would never receive anything."
    )
    # On the queue resource itself, not the construct: its queue policy is not acknowledged.
    for rule in ("AwsSolutions-SQS3", "Serverless-SQSRedrivePolicy"):
        acknowledge(queue.node.default_child, rule, reason)  # type: ignore[arg-type]
    if encryption_key is None:
        acknowledge_sqs_managed_encryption(queue)
    return queue


SQS_MANAGED_ENCRYPTION_REASON = (
    "Encrypted at rest with SQS-managed keys (SqsManagedSseEnabled); checkov's CKV_AWS_27 "
    "recognises only a KMS key. Pass encryption_key for a customer-managed key."
)


def acknowledge_sqs_managed_encryption(queue: sqs.Queue) -> None:
    """Acknowledge checkov's CKV_AWS_27 on a queue encrypted with SQS-managed keys."""
    resource = queue.node.default_child
    skip_check(resource, "CKV_AWS_27", SQS_MANAGED_ENCRYPTION_REASON)  # type: ignore[arg-type]
