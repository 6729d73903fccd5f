"""A consumer's monitoring props: whether it has alarms and a dashboard, where alarms go."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sns as sns
from cdc_consumer.metric_names import DEFAULT_METRICS_NAMESPACE
from constructs import Construct

from cdc_constructs.alarm_topic import AlarmTopic
from cdc_constructs.exceptions import Problem
from cdc_constructs.monitoring import check_iterator_age_threshold
from cdc_constructs.validation import check_flag, check_name

__all__ = ["MonitoringOptions"]


@dataclass(frozen=True)
class MonitoringOptions:
    """The consumer's monitoring props.

    :param monitoring: Default True: alarms and a dashboard (StreamConsumerMonitoring): lag and
        loss must page, not wait to be noticed.
    :param alarm_topic: SNS topic every alarm of the consumer notifies, the redrive's
        included. Default: with monitoring, a new encrypted :class:`AlarmTopic`
        (``<consumer id>/AlarmTopic``); without monitoring, none.
    :param dashboard: add the widgets to this dashboard. Default: a new dashboard. Refused
        with ``monitoring=False`` (nothing would be added to it).
    :param iterator_age_alarm_threshold: Default a quarter of ``max_record_age``, leaving
        three quarters of the budget to react before records are given up on. Refused with
        ``monitoring=False`` (there is no lag alarm).
    :param metrics_namespace: the runtime's metric namespace. Default ``CdcConstructs``.
    """

    monitoring: bool = True
    alarm_topic: sns.ITopic | None = None
    dashboard: cloudwatch.Dashboard | None = None
    iterator_age_alarm_threshold: Duration | None = None
    metrics_namespace: str = DEFAULT_METRICS_NAMESPACE

    def problems(self, max_record_age: Duration) -> list[Problem]:
        found = check_iterator_age_threshold(
            "iterator_age_alarm_threshold", self.iterator_age_alarm_threshold, max_record_age
        )
        found += check_flag("monitoring", self.monitoring)
        found += self._without_monitoring_problems()
        found += check_name("metrics_namespace", self.metrics_namespace)
        return found

    def resolve_topic(self, scope: Construct) -> sns.ITopic | None:
        """The topic every alarm of the consumer notifies: ``alarm_topic``; with monitoring and
        no topic given, a new :class:`AlarmTopic` ``AlarmTopic`` in ``scope``; else None."""
        if self.alarm_topic is not None or not self.monitoring:
            return self.alarm_topic
        return AlarmTopic(scope, "AlarmTopic").topic

    def _without_monitoring_problems(self) -> list[Problem]:
        if self.monitoring:
            return []
        given = {
            name: value
            for name, value in (
                ("dashboard", self.dashboard),
                ("iterator_age_alarm_threshold", self.iterator_age_alarm_threshold),
            )
            if value is not None
        }
        if not given:
            return []
        return [
            Problem(
                "/".join(given),
                "given with monitoring=False",
                "omitted, or monitoring=True: without monitoring there is no dashboard and no "
                "lag alarm",
            )
        ]
