"""The second alarm on every place a failure waits: the age of the oldest failure it keeps,
firing well before its retention deletes it (``defaults.FAILURE_AGE_ALARM_FRACTION``).

A failure alarms once when it happens (a dropped record, a message in a queue); acknowledged and
forgotten, that alarm says nothing more while the retention runs out. So each failure kind gives
the age of its oldest failure (:meth:`FailureKind.age_metric`; SQS publishes
``ApproximateAgeOfOldestMessage``, the failed-batch bucket's is measured by the redrive
function's scheduled check) and how long a failure stays replayable; this module turns the two
into an alarm. docs/operations.md lists each one.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from cdc_consumer.replay_windows import ReplayWindows
from cdc_consumer.service_limits import UNLIMITED_RECORD_AGE
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.alarms import AlarmActionStrategy

__all__ = [
    "age_alarm",
    "age_threshold_seconds",
    "oldest_message_age",
    "pointer_window",
]


def age_threshold_seconds(window_seconds: int) -> int:
    """When a failure kept ``window_seconds`` (how long it stays replayable) alarms by its age."""
    return max(
        defaults.ALARM_PERIOD_SECONDS, int(window_seconds * defaults.FAILURE_AGE_ALARM_FRACTION)
    )


def pointer_window(stream_retention: int, max_record_age: int) -> int:
    """How long a pointer into the stream (an SQS or SNS on-failure message, a pipe's
    dead-letter message) stays useful after it was sent: the stream keeps the records its
    retention after their write, and the mapping gave up on them at most ``max_record_age``
    after it."""
    age = max_record_age
    discarded_by = (
        stream_retention if age == UNLIMITED_RECORD_AGE or age >= stream_retention else age
    )
    return max(defaults.ALARM_PERIOD_SECONDS, stream_retention - discarded_by)


def windows_pointer(windows: ReplayWindows) -> int:
    """:func:`pointer_window` of a consumer's replay windows."""
    return pointer_window(windows.stream_retention, windows.max_record_age)


def oldest_message_age(queue: sqs.IQueue) -> cloudwatch.IMetric:
    """``ApproximateAgeOfOldestMessage`` of ``queue`` (Maximum over the age alarms' period)."""
    return queue.metric_approximate_age_of_oldest_message(
        statistic=cloudwatch.Stats.MAXIMUM,
        period=Duration.seconds(defaults.FAILURE_AGE_PERIOD_SECONDS),
    )


def age_alarm(
    scope: Construct,
    construct_id: str,
    metric: cloudwatch.IMetric,
    *,
    window_seconds: int,
    what: str,
    ends: str,
    action: AlarmActionStrategy,
) -> cloudwatch.Alarm:
    """An alarm on ``metric`` (an age in seconds) at :func:`age_threshold_seconds` of
    ``window_seconds``, saying ``what`` waits, since when, and what ``ends`` it (say "the
    bucket's lifecycle deletes it") how long after it failed. Missing data is not breaching:
    nothing waiting is healthy."""
    threshold = age_threshold_seconds(window_seconds)
    alarm = cloudwatch.Alarm(
        scope,
        construct_id,
        metric=metric,
        alarm_description=(
            f"{what} has waited {_span(threshold)}; {ends} {_span(window_seconds)} after it "
            "failed, with no further alarm. Redrive it, or read it and decide, now "
            "(docs/operations.md, 'Failure kinds')"
        ),
        threshold=threshold,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )
    action.add_alarm_actions(alarm)
    return alarm


def _span(seconds: int) -> str:
    """``seconds`` as people say it: days, else hours, else minutes."""
    if seconds % 86_400 == 0 or seconds >= 3 * 86_400:
        return f"{seconds / 86_400:g} days"
    if seconds >= 3600:
        return f"{seconds / 3600:g} hours"
    return f"{seconds / 60:g} minutes"
