"""Alarms that fire on the first occurrence of something that must not happen silently, and
the strategies that decide what an alarm notifies (as cdk-monitoring-constructs'
``IAlarmActionStrategy``): a construct is given one strategy and applies it to each alarm it
makes, so no alarm is re-wired after it was made."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from cdc_consumer.metric_names import CONSUMER_DIMENSION
from constructs import Construct

from cdc_constructs import defaults

__all__ = [
    "AlarmActionStrategy",
    "NoAlarmAction",
    "SnsAlarmAction",
    "alarm_action_for",
    "alarm_on_any",
    "consumer_metric",
    "function_errors_alarm",
    "notify",
]


class AlarmActionStrategy(Protocol):
    """What an alarm does when it changes state."""

    def add_alarm_actions(self, alarm: cloudwatch.Alarm) -> None:
        """Add this strategy's actions to ``alarm``."""


@dataclass(frozen=True)
class SnsAlarmAction:
    """Notify ``topic`` when the alarm fires and when it clears."""

    topic: sns.ITopic

    def add_alarm_actions(self, alarm: cloudwatch.Alarm) -> None:
        action = cloudwatch_actions.SnsAction(self.topic)
        alarm.add_alarm_action(action)
        alarm.add_ok_action(action)


class NoAlarmAction:
    """No action: the alarm is only seen in the console and on dashboards."""

    def add_alarm_actions(self, alarm: cloudwatch.Alarm) -> None:
        return None


def alarm_action_for(topic: sns.ITopic | None) -> AlarmActionStrategy:
    """:class:`SnsAlarmAction` on ``topic``, or :class:`NoAlarmAction` without one."""
    return SnsAlarmAction(topic) if topic is not None else NoAlarmAction()


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
    SnsAlarmAction(topic).add_alarm_actions(alarm)


def alarm_on_any(
    scope: Construct,
    construct_id: str,
    metric: cloudwatch.IMetric,
    *,
    description: str,
    topic: sns.ITopic | None = None,
    action: AlarmActionStrategy | None = None,
) -> cloudwatch.Alarm:
    """An alarm on ``metric`` >= 1 in one period (a DLQ message, a lost record, a failed
    execution), with ``action`` applied (or notifying ``topic`` if given). Missing data is not
    breaching: nothing happening is healthy."""
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
    (action or alarm_action_for(topic)).add_alarm_actions(alarm)
    return alarm


def function_errors_alarm(
    scope: Construct,
    construct_id: str,
    function: lambda_.IFunction,
    *,
    description: str,
    topic: sns.ITopic | None = None,
) -> cloudwatch.Alarm:
    """An alarm on ``function``'s Errors (Sum, one alarm period) >= 1, notifying ``topic`` if
    given: for a function run by hand or by a state machine (a redrive, a backfill segment),
    whose failure nothing else reports."""
    metric = function.metric_errors(
        statistic=cloudwatch.Stats.SUM, period=Duration.seconds(defaults.ALARM_PERIOD_SECONDS)
    )
    return alarm_on_any(scope, construct_id, metric, description=description, topic=topic)
