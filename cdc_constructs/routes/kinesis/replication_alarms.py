"""Alarms on a table's replication to its Kinesis data stream (the Kinesis route, design §9).

On the Kinesis route a change reaches a consumer only after DynamoDB has put it into the stream.
When it cannot (the stream lacks shards, its policy or key refuses DynamoDB, a change is too
large for a Kinesis record), no consumer metric moves: the consumers see no lag, only nothing.
DynamoDB reports it in three metrics of ``AWS/DynamoDB`` with the dimensions ``TableName`` and
``DelegatedOperation`` (AWS DynamoDB developer guide, "DynamoDB Metrics and dimensions";
CloudWatch's recommended alarms for DynamoDB):

- ``AgeOfOldestUnreplicatedRecord`` (milliseconds): how long the oldest change not yet in the
  stream has waited; milliseconds in normal operation.
- ``ThrottledPutRecordCount``: records the stream throttled (DynamoDB retries them).
- ``FailedToReplicateRecordCount``: records DynamoDB could not put and skipped (a change whose
  record exceeds Kinesis' 1 MB): those changes reach no consumer of the stream.

The alarms query them with CloudWatch Metrics Insights over the dimension set
``(DelegatedOperation, TableName)`` filtered by the table's name, so they do not depend on the
value DynamoDB gives ``DelegatedOperation``. Thresholds and periods are in
:mod:`cdc_constructs.defaults`, with their reasons.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.alarms import AlarmActionStrategy, NoAlarmAction

__all__ = [
    "REPLICATION_AGE_METRIC",
    "REPLICATION_FAILED_METRIC",
    "REPLICATION_THROTTLED_METRIC",
    "KinesisReplicationAlarms",
    "replication_metric",
]

REPLICATION_AGE_METRIC = "AgeOfOldestUnreplicatedRecord"
REPLICATION_THROTTLED_METRIC = "ThrottledPutRecordCount"
REPLICATION_FAILED_METRIC = "FailedToReplicateRecordCount"


def replication_metric(table_name: str, metric_name: str) -> cloudwatch.MathExpression:
    """The table's ``metric_name`` (Maximum over one replication period) as a Metrics Insights
    query: every ``DelegatedOperation`` of the table, one time series."""
    return cloudwatch.MathExpression(
        expression=(
            f'SELECT MAX({metric_name}) FROM SCHEMA("AWS/DynamoDB", DelegatedOperation, '
            f"TableName) WHERE TableName = '{table_name}'"
        ),
        period=Duration.seconds(defaults.REPLICATION_ALARM_PERIOD_SECONDS),
        label=metric_name,
    )


class KinesisReplicationAlarms(Construct):
    """The three alarms on a table's replication to its Kinesis stream (module docstring).

    - ``ReplicationAge``: ``AgeOfOldestUnreplicatedRecord`` above
      ``defaults.REPLICATION_AGE_ALARM_SECONDS`` (15 minutes).
    - ``ReplicationThrottled``: ``ThrottledPutRecordCount`` >= 1 in
      ``defaults.REPLICATION_THROTTLED_EVALUATION_PERIODS`` periods in a row (10 minutes).
    - ``ReplicationFailed``: ``FailedToReplicateRecordCount`` >= 1 once: changes were skipped.

    Missing data is not breaching (DynamoDB sends these metrics only when they are not zero).

    :param table_name: the table whose changes stream to Kinesis.
    :param alarm_action: what each alarm does. Default: nothing (seen on dashboards only).

    Escape hatches: :attr:`alarms` (by name), :attr:`metrics` (by alarm name).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table_name: str,
        alarm_action: AlarmActionStrategy | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        action = alarm_action or NoAlarmAction()
        self.metrics: dict[str, cloudwatch.IMetric] = {
            "ReplicationAge": replication_metric(table_name, REPLICATION_AGE_METRIC),
            "ReplicationThrottled": replication_metric(table_name, REPLICATION_THROTTLED_METRIC),
            "ReplicationFailed": replication_metric(table_name, REPLICATION_FAILED_METRIC),
        }
        """The metrics the alarms watch, by alarm name."""
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        """The alarms by name."""
        for name, (threshold, periods, description) in _settings().items():
            alarm = cloudwatch.Alarm(
                self,
                name,
                metric=self.metrics[name],
                alarm_description=description,
                threshold=threshold,
                evaluation_periods=periods,
                comparison_operator=(
                    cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
                ),
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            action.add_alarm_actions(alarm)
            self.alarms[name] = alarm


def _settings() -> dict[str, tuple[float, int, str]]:
    """Alarm name -> (threshold, evaluation periods, description)."""
    age_seconds = defaults.REPLICATION_AGE_ALARM_SECONDS
    throttled_periods = defaults.REPLICATION_THROTTLED_EVALUATION_PERIODS
    throttled_minutes = throttled_periods * defaults.REPLICATION_ALARM_PERIOD_SECONDS // 60
    return {
        "ReplicationAge": (
            age_seconds * 1000,
            1,
            f"The table's oldest change not yet in its Kinesis stream waited {age_seconds:g} s "
            "or more (AgeOfOldestUnreplicatedRecord): no consumer on the Kinesis route sees it. "
            "Check the stream's shards (ThrottledPutRecordCount), its resource policy and its key.",
        ),
        "ReplicationThrottled": (
            1,
            throttled_periods,
            f"The Kinesis stream throttled the table's changes for {throttled_minutes} minutes "
            "(ThrottledPutRecordCount): DynamoDB retries them, late; give the stream more shards "
            "or on-demand capacity.",
        ),
        "ReplicationFailed": (
            1,
            1,
            "DynamoDB could not put some of the table's changes into its Kinesis stream and "
            "skipped them (FailedToReplicateRecordCount, e.g. a record over Kinesis' 1 MB): no "
            "consumer on the Kinesis route receives them. Rebuild the views from the table "
            "(ViewBackfill) or read those items from the table.",
        ),
    }
