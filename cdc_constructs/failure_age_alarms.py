"""A stream consumer's age alarms: one per place its failures wait (its on-failure destination,
as its failure kind measures it, and its quarantine queue), each at half the time a failure
there stays replayable (:mod:`cdc_constructs.failure_age`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_cloudwatch as cloudwatch
from cdc_consumer.service_limits import STREAM_RETENTION_SECONDS
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.alarms import AlarmActionStrategy
from cdc_constructs.failure_age import age_alarm, pointer_window
from cdc_constructs.failure_kinds import OnFailureTarget, Quarantine

__all__ = ["FailureAge", "age_alarms", "age_widget", "failure_ages"]


@dataclass(frozen=True)
class FailureAge:
    """One place a failure waits: the age of its oldest one, what waits, what ends it, and how
    long it stays replayable (seconds)."""

    metric: cloudwatch.IMetric
    what: str
    ends: str
    window: int


def failure_ages(consumer: Any) -> dict[str, FailureAge]:
    """The consumer's (a :class:`~cdc_constructs.monitoring.MonitoredConsumer`) places, by
    alarm name. Its ``replay_windows`` (StreamConsumer's) give the windows when it has them."""
    target, windows = consumer.on_failure, getattr(consumer, "replay_windows", None)
    name = consumer.consumer_name
    kind_age = getattr(target.failure_kind, "age_metric", None)  # a kind of an older protocol
    found = kind_age(target, name, consumer.metrics_namespace) if kind_age else None
    ages = {}
    if found is not None:
        alarm_name, metric, ends = found
        window = _window(target, windows, int(consumer.max_record_age.to_seconds()))
        ages[alarm_name] = FailureAge(metric, f"{name}: a failed batch", ends, window)
    alarm_name, metric, ends = Quarantine(consumer.quarantine_queue, None, True).age_metric()
    retention = windows.quarantine_retention if windows else defaults.SQS_MAX_RETENTION_SECONDS
    ages[alarm_name] = FailureAge(metric, f"{name}: a quarantined record", ends, retention)
    return ages


def age_alarms(
    scope: Construct, ages: Mapping[str, FailureAge], action: AlarmActionStrategy
) -> dict[str, cloudwatch.Alarm]:
    """An age alarm (:func:`~cdc_constructs.failure_age.age_alarm`) per place, by its name."""
    return {
        name: age_alarm(
            scope,
            name,
            age.metric,
            window_seconds=age.window,
            what=age.what,
            ends=age.ends,
            action=action,
        )
        for name, age in ages.items()
    }


def age_widget(ages: Mapping[str, FailureAge]) -> cloudwatch.IWidget:
    """The dashboard's graph of each place's oldest failure's age."""
    return cloudwatch.GraphWidget(
        title="Age of the oldest kept failure (s)",
        left=[age.metric for age in ages.values()],
        width=8,
    )


def _window(target: OnFailureTarget, windows: Any, record_age: int) -> int:
    """How long a batch in ``target`` stays replayable: its retention when it keeps the batch,
    else as long as the stream still holds the records it points at."""
    if target.keeps_records:
        kept = windows.failed_batch_retention if windows else 0
        return kept or defaults.FAILED_BATCH_RETENTION_DAYS * 86_400
    if windows is not None:
        return pointer_window(windows.stream_retention, windows.max_record_age)
    return pointer_window(STREAM_RETENTION_SECONDS, record_age)
