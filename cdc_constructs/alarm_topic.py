"""AlarmTopic: the SNS topic alarms notify, encrypted and TLS-only."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from cdc_constructs.acknowledge import acknowledge
from cdc_constructs.exceptions import Problem
from cdc_constructs.validation import raise_if_any

# CloudWatch publishes alarm notifications with these actions on the topic's key.
_CLOUDWATCH_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")


def _cloudwatch_alarms_statement(scope: Construct) -> iam.PolicyStatement:
    """The key-policy statement letting CloudWatch use the key for this account's alarms only:
    ``aws:SourceAccount`` and ``aws:SourceArn`` (an alarm of this account and region) keep
    another account's alarm from using it through CloudWatch (the confused deputy; SNS
    developer guide, "Enable compatibility between event sources from AWS services and
    encrypted topics")."""
    stack = Stack.of(scope)
    alarms = stack.format_arn(
        service="cloudwatch",
        resource="alarm",
        resource_name="*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    return iam.PolicyStatement(
        sid="AllowCloudWatchAlarmsOfThisAccount",
        principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
        actions=list(_CLOUDWATCH_KEY_ACTIONS),
        resources=["*"],
        conditions={
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnLike": {"aws:SourceArn": alarms},
        },
    )


class AlarmTopic(Construct):
    """An SNS topic for alarm notifications.

    Encrypted with a customer managed key (rotation on): CloudWatch alarms cannot publish to
    a topic encrypted with the AWS-managed SNS key, so the key policy lets
    ``cloudwatch.amazonaws.com`` use this key, for this account's alarms only
    (``aws:SourceAccount`` and ``aws:SourceArn`` conditions). A topic policy denies publishing
    without TLS.

    :param emails: e-mail addresses to subscribe (each must confirm). Default: none.
    :param encryption_key: an existing key instead of a new one (its policy must allow
        CloudWatch to use it).

    Escape hatches: :attr:`topic`, :attr:`key`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        emails: Sequence[str] = (),
        encryption_key: kms.IKey | None = None,
    ) -> None:
        raise_if_any(
            f"AlarmTopic {construct_id!r}",
            [
                Problem("emails", email, "an e-mail address (name@domain)")
                for email in emails
                if not isinstance(email, str) or "@" not in email
            ],
        )
        super().__init__(scope, construct_id)
        self.key: kms.IKey = encryption_key or kms.Key(
            self,
            "Key",
            description="Encrypts the cdc-constructs alarm topic",
            enable_key_rotation=True,
        )
        if encryption_key is None:
            self.key.add_to_resource_policy(_cloudwatch_alarms_statement(self))
        self.topic = sns.Topic(self, "Topic", master_key=self.key, enforce_ssl=True)
        for index, email in enumerate(emails):
            subscription = sns.Subscription(
                self,
                f"Email{index}",
                topic=self.topic,
                protocol=sns.SubscriptionProtocol.EMAIL,
                endpoint=email,
            )
            acknowledge(
                subscription,
                "Serverless-SNSRedrivePolicy",
                "An e-mail subscription: SNS retries e-mail delivery itself and counts "
                "failures in the topic's NumberOfNotificationsFailed metric; a dead-letter "
                "queue of alarm e-mails would have no reader.",
            )
