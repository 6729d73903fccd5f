"""The SQS queue failure kind: an on-failure destination that keeps a pointer into the stream
(shard, first and last sequence numbers), not the records (docs/design.md §5).

The records must be read back from the stream before it trims them (24 h), so the queue's own
retention adds no replay window. This module is the construct side of the kind: the mapping's
and the redrive's grants, the redrive's variable and the queue's depth alarm. The redrive reads
it with ``cdc_consumer.redrive.sources.queue``; the local pipeline writes it with
``cdc_local.destinations.queue``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from cdc_consumer.environment_variables import ON_FAILURE_QUEUE_ENV
from constructs import Construct

from cdc_constructs.exceptions import Problem
from cdc_constructs.failure_age import oldest_message_age
from cdc_constructs.failure_kinds.kind import (
    OnFailureTarget,
    RedriveAccess,
    RedriveSource,
    key_arns_of,
)
from cdc_constructs.permissions import STREAM_REPLAY_ACTIONS, allow

__all__ = ["QUEUE", "QUEUE_SEND_KEY_ACTIONS", "QueueKind"]

QUEUE_SEND_ACTIONS = ("sqs:SendMessage",)
QUEUE_SEND_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")


class QueueKind:
    """An SQS queue (``SqsDlq``, or the older ``on_failure_queue``): a pointer per batch."""

    name = "sqs"
    destination_type: type = sources.SqsDlq
    keeps_records = False
    cfn_type = "AWS::SQS::Queue"
    age_checked_by_redrive = False
    redrive_source: RedriveSource | None = None  # in the runtime layer

    def target(self, queue: sqs.IQueue) -> OnFailureTarget:
        """``queue`` as the destination."""
        keys = key_arns_of(queue.encryption_master_key)
        return OnFailureTarget(self, queue.queue_arn, keys, queue=queue)

    def reference(self, scope: Construct, arn: str, key_arns: tuple[str, ...]) -> OnFailureTarget:
        queue = sqs.Queue.from_queue_attributes(
            scope, "OnFailureQueueRef", queue_arn=arn, key_arn=key_arns[0] if key_arns else None
        )
        return OnFailureTarget(self, arn, key_arns, queue=queue)

    def grant_put(self, target: OnFailureTarget, grantee: iam.IGrantable) -> None:
        """``sqs:SendMessage`` (plus the key's data-key actions)."""
        grantee.grant_principal.add_to_principal_policy(allow(QUEUE_SEND_ACTIONS, [target.arn]))
        if target.key_arns:
            statement = allow(QUEUE_SEND_KEY_ACTIONS, list(target.key_arns))
            grantee.grant_principal.add_to_principal_policy(statement)

    def grant_redrive(self, target: OnFailureTarget, access: RedriveAccess) -> None:
        """Drain the queue; read the records it points at back from the stream."""
        assert target.queue is not None
        access.drain(target.queue)
        access.read_stream(STREAM_REPLAY_ACTIONS)

    def redrive_environment(self, target: OnFailureTarget) -> dict[str, str]:
        assert target.queue is not None
        return {ON_FAILURE_QUEUE_ENV: target.queue.queue_url}

    def retention(
        self, consumer: Construct, target: OnFailureTarget
    ) -> tuple[int | None, list[Problem]]:
        """0: a pointer into the stream, whose retention bounds the replay."""
        return 0, []

    def arn_retention(self, arn: str) -> int | None:
        """0: a pointer into the stream."""
        return 0

    def template_retention(self, properties: Mapping[str, Any]) -> int | None:
        """0: a pointer into the stream."""
        return 0

    def alarm_metrics(
        self, target: OnFailureTarget, period: Duration, consumer_name: str
    ) -> dict[str, tuple[cloudwatch.IMetric, str]]:
        """``OnFailureQueueDepth``: visible messages ≥ 1."""
        assert target.queue is not None
        depth = target.queue.metric_approximate_number_of_messages_visible(
            statistic=cloudwatch.Stats.MAXIMUM, period=period
        )
        return {
            "OnFailureQueueDepth": (
                depth,
                f"{consumer_name}: a batch ran out of retries or record age; redrive it before "
                "the stream trims its records (24 h)",
            )
        }

    def age_metric(
        self, target: OnFailureTarget, consumer_name: str, namespace: str
    ) -> tuple[str, cloudwatch.IMetric, str]:
        """``OnFailureQueueAge``: the queue's ``ApproximateAgeOfOldestMessage``."""
        assert target.queue is not None
        return "OnFailureQueueAge", oldest_message_age(target.queue), "the stream trims its records"


QUEUE = QueueKind()
"""The SQS queue kind."""
