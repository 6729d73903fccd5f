"""Alarms that fire on the first occurrence of something that must not happen silently."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_sns as sns
from constructs import Construct

from cdc_constructs import defaults

CONSUMER_DIMENSION = "Consumer"
"""The one dimension of the runtime's and the redrive's metrics: the consumer's name."""


def consumer_metric(
    namespace: str, consumer_name: str, metric_name: str, statistic: str
) -> cloudwatch.Metric:
    """One consumer's embedded-metric-format metric (dimension ``Consumer``), over one alarm
    period (defaults.ALARM_PERIOD_SECONDS)."""
    return cloudwatch.Metric(
        namespace=namespace,
        metric_name=metric_name,
        dimensions_map={CONSUMER_DIMENSION: consumer_name},
        statistic=statistic,
        period=Duration.seconds(defaults.ALARM_PERIOD_SECONDS),
    )


def notify(alarm: cloudwatch.Alarm, topic: sns.ITopic) -> None:
    """Notify ``topic`` when ``alarm`` fires and when it clears."""
    action = cloudwatch_actions.SnsAction(topic)
    alarm.add_alarm_action(action)
    alarm.add_ok_action(action)


def alarm_on_any(
    scope: Construct,
    construct_id: str,
    metric: cloudwatch.IMetric,
    *,
    description: str,
    topic: sns.ITopic | None = None,
) -> cloudwatch.Alarm:
    """An alarm on ``metric`` >= 1 in one period (a DLQ message, a lost record, a failed
    execution), notifying ``topic`` if given. Missing data is not breaching: nothing
    happening is healthy."""
    alarm = cloudwatch.Alarm(
        scope,
        construct_id,
        metric=metric,
        alarm_description=description,
        threshold=1,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )
    if topic is not None:
        notify(alarm, topic)
    return alarm
