"""The SNS topic failure kind: an on-failure destination that publishes a pointer into the
stream to the topic's subscribers; nothing of it is kept here, and the redrive cannot read it
(subscribe a queue and redrive that queue; docs/operations.md). The local pipeline publishes to
it with ``cdc_local.destinations.topic``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as sources
from constructs import Construct

from cdc_constructs.exceptions import Problem
from cdc_constructs.failure_kinds.kind import OnFailureTarget, RedriveAccess, RedriveSource
from cdc_constructs.permissions import allow

__all__ = ["TOPIC", "TOPIC_PUBLISH_KEY_ACTIONS", "TopicKind"]

TOPIC_PUBLISH_ACTIONS = ("sns:Publish",)
TOPIC_PUBLISH_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")


class TopicKind:
    """An SNS topic (``SnsDlq``): a pointer per batch, published."""

    name = "sns"
    destination_type: type = sources.SnsDlq
    keeps_records = False
    cfn_type = "AWS::SNS::Topic"
    age_checked_by_redrive = False
    redrive_source: RedriveSource | None = None  # in the runtime layer

    def reference(self, scope: Construct, arn: str, key_arns: tuple[str, ...]) -> OnFailureTarget:
        return OnFailureTarget(self, arn, key_arns)

    def grant_put(self, target: OnFailureTarget, grantee: iam.IGrantable) -> None:
        """``sns:Publish`` (plus the key's data-key actions)."""
        grantee.grant_principal.add_to_principal_policy(allow(TOPIC_PUBLISH_ACTIONS, [target.arn]))
        if target.key_arns:
            statement = allow(TOPIC_PUBLISH_KEY_ACTIONS, list(target.key_arns))
            grantee.grant_principal.add_to_principal_policy(statement)

    def grant_redrive(self, target: OnFailureTarget, access: RedriveAccess) -> None:
        """Nothing: the redrive does not read a topic."""

    def redrive_environment(self, target: OnFailureTarget) -> dict[str, str]:
        return {}

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
        return {}

    def age_metric(
        self, target: OnFailureTarget, consumer_name: str, namespace: str
    ) -> tuple[str, cloudwatch.IMetric, str] | None:
        """None: SNS keeps nothing (it delivers each pointer to the topic's subscribers and
        forgets it); a failure waits in the queue subscribed to it, whose age alarm is that
        queue's owner's (docs/operations.md, 'Failure kinds')."""
        return None


TOPIC = TopicKind()
"""The SNS topic kind."""
