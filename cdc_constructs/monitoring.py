"""StreamConsumerMonitoring: alarms on lag and loss, and a dashboard of the pipeline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sns as sns
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.alarm_topic import AlarmTopic
from cdc_constructs.alarms import alarm_on_any, consumer_metric, notify
from cdc_constructs.exceptions import Problem
from cdc_constructs.validation import raise_if_any, seconds

if TYPE_CHECKING:
    from cdc_constructs.stream_consumer import StreamConsumer

# The runtime's embedded-metric-format metrics (interfaces §3), all with dimension Consumer.
RUNTIME_COUNT_METRICS = (
    "RecordsProcessed",
    "DuplicatesSkipped",
    "RecordsQuarantined",
    "TtlExpiries",
    "BatchFailures",
)
RUNTIME_LAG_METRIC = "IteratorLagMs"
# The mapping's event-count metrics (MetricsConfig EventCount), dimension EventSourceMappingUUID.
MAPPING_COUNT_METRICS = (
    "PolledEventCount",
    "FilteredOutEventCount",
    "InvokedEventCount",
    "FailedInvokeEventCount",
    "DroppedEventCount",
)


class StreamConsumerMonitoring(Construct):
    """Alarms and a dashboard for one :class:`StreamConsumer`.

    Alarms (each notifies ``alarm_topic`` on ALARM and OK):

    - ``IteratorAge``: the function's IteratorAge (Maximum, 1 min) above the threshold for
      3 minutes. Default threshold: a quarter of the consumer's max record age (15 min of
      1 h), so there is time to act before records go to the on-failure queue.
    - ``OnFailureQueueDepth``: visible messages in the on-failure queue ≥ 1: a batch was
      given up on; its records must be redriven before the stream trims them (24 h).
    - ``QuarantineQueueDepth``: visible messages in the quarantine queue ≥ 1.
    - ``RecordsQuarantined``: the runtime's RecordsQuarantined metric (Sum) ≥ 1.
    - ``FunctionErrors``: function errors (Sum) ≥ 1: crashes and timeouts, which the
      runtime's own failure reporting never causes.
    - ``FunctionThrottles``: throttles (Sum) ≥ 1: the shard waits.
    - ``RedriveLostRecords``: the consumer's :class:`StreamRedrive` (when it has one) found
      records the stream no longer holds (StreamRedrive's own alarm, given this topic).

    Missing data is "not breaching": an idle consumer is healthy.

    :param consumer: the StreamConsumer to watch.
    :param alarm_topic: Default: a new :class:`AlarmTopic` (encrypted, TLS-only).
    :param dashboard: add this consumer's widgets to an existing dashboard. Default: a new one.
    :param iterator_age_threshold: Default a quarter of ``max_record_age``.

    Escape hatches: :attr:`alarms` (by name), :attr:`alarm_topic`, :attr:`dashboard`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        consumer: StreamConsumer,
        alarm_topic: sns.ITopic | None = None,
        dashboard: cloudwatch.Dashboard | None = None,
        iterator_age_threshold: Duration | None = None,
    ) -> None:
        raise_if_any(
            f"StreamConsumerMonitoring {construct_id!r}",
            check_iterator_age_threshold(
                "iterator_age_threshold", iterator_age_threshold, consumer.max_record_age
            ),
        )
        super().__init__(scope, construct_id)
        period = Duration.seconds(defaults.ALARM_PERIOD_SECONDS)
        age_seconds = consumer.max_record_age.to_seconds(integral=False)
        threshold_seconds = (
            iterator_age_threshold.to_seconds(integral=False)
            if iterator_age_threshold is not None
            else age_seconds * defaults.ITERATOR_AGE_ALARM_FRACTION
        )
        self.iterator_age_threshold_ms = int(threshold_seconds * 1000)
        """The lag alarm's threshold, in milliseconds (IteratorAge's unit)."""
        self.alarm_topic: sns.ITopic = alarm_topic or AlarmTopic(self, "AlarmTopic").topic
        name = consumer.consumer_name
        function = consumer.function

        on_failure_queue = consumer.dead_letter_queue
        quarantine_queue = consumer.quarantine_queue
        metrics = {
            "IteratorAge": function.metric(
                "IteratorAge", statistic=cloudwatch.Stats.MAXIMUM, period=period
            ),
            "OnFailureQueueDepth": on_failure_queue.metric_approximate_number_of_messages_visible(
                statistic=cloudwatch.Stats.MAXIMUM, period=period
            ),
            "QuarantineQueueDepth": quarantine_queue.metric_approximate_number_of_messages_visible(
                statistic=cloudwatch.Stats.MAXIMUM, period=period
            ),
            "RecordsQuarantined": _runtime_metric(consumer, "RecordsQuarantined"),
            "FunctionErrors": function.metric_errors(statistic=cloudwatch.Stats.SUM, period=period),
            "FunctionThrottles": function.metric_throttles(
                statistic=cloudwatch.Stats.SUM, period=period
            ),
        }
        descriptions = {
            "IteratorAge": (
                f"{name}: the oldest record waits more than {threshold_seconds:g} s; at "
                f"{age_seconds:g} s records go to the on-failure queue"
            ),
            "OnFailureQueueDepth": (
                f"{name}: a batch ran out of retries or record age; redrive it before the "
                "stream trims its records (24 h)"
            ),
            "QuarantineQueueDepth": f"{name}: poison records are waiting in the quarantine queue",
            "RecordsQuarantined": f"{name}: the runtime quarantined records",
            "FunctionErrors": f"{name}: the consumer function crashed or timed out",
            "FunctionThrottles": f"{name}: the consumer function was throttled",
        }
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        """The alarms by name."""
        lag = cloudwatch.Alarm(
            self,
            "IteratorAge",
            metric=metrics["IteratorAge"],
            alarm_description=descriptions["IteratorAge"],
            threshold=self.iterator_age_threshold_ms,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=defaults.ITERATOR_AGE_EVALUATION_PERIODS,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        notify(lag, self.alarm_topic)
        self.alarms["IteratorAge"] = lag
        for alarm_name, metric in metrics.items():
            if alarm_name != "IteratorAge":
                self.alarms[alarm_name] = alarm_on_any(
                    self,
                    alarm_name,
                    metric,
                    description=descriptions[alarm_name],
                    topic=self.alarm_topic,
                )
        if consumer.redrive is not None:
            # The redrive's own alarm (lost records), notifying the same topic.
            notify(consumer.redrive.lost_records_alarm, self.alarm_topic)
            self.alarms["RedriveLostRecords"] = consumer.redrive.lost_records_alarm

        self.dashboard = dashboard or cloudwatch.Dashboard(self, "Dashboard")
        """The dashboard the widgets were added to."""
        self.dashboard.add_widgets(*self._widgets(consumer, metrics, period))

    def _widgets(
        self,
        consumer: StreamConsumer,
        metrics: Mapping[str, cloudwatch.IMetric],
        period: Duration,
    ) -> list[cloudwatch.IWidget]:
        function = consumer.function
        mapping_id = consumer.event_source_mapping.event_source_mapping_id
        lag_ms = _runtime_metric(consumer, RUNTIME_LAG_METRIC, cloudwatch.Stats.MAXIMUM)
        mapping_counts = [
            cloudwatch.Metric(
                namespace="AWS/Lambda",
                metric_name=metric_name,
                dimensions_map={"EventSourceMappingUUID": mapping_id},
                statistic=cloudwatch.Stats.SUM,
                period=period,
            )
            for metric_name in MAPPING_COUNT_METRICS
        ]
        return [
            cloudwatch.TextWidget(
                markdown=f"## Stream consumer `{consumer.consumer_name}`", width=24, height=1
            ),
            cloudwatch.AlarmStatusWidget(
                title="Alarms", alarms=list(self.alarms.values()), width=24, height=3
            ),
            cloudwatch.GraphWidget(
                title="Lag (ms)",
                left=[metrics["IteratorAge"], lag_ms],
                left_annotations=[
                    cloudwatch.HorizontalAnnotation(
                        value=self.iterator_age_threshold_ms, label="alarm"
                    )
                ],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Function",
                left=[
                    function.metric_invocations(period=period),
                    metrics["FunctionErrors"],
                    metrics["FunctionThrottles"],
                ],
                right=[function.metric_duration(period=period, statistic=cloudwatch.Stats.p(99))],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Failure queues (visible messages)",
                left=[metrics["OnFailureQueueDepth"], metrics["QuarantineQueueDepth"]],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Runtime (records)",
                left=[_runtime_metric(consumer, name) for name in RUNTIME_COUNT_METRICS],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Event source mapping (records)", left=mapping_counts, width=12
            ),
        ]


def check_iterator_age_threshold(
    prop: str, threshold: Duration | None, max_record_age: Duration
) -> list[Problem]:
    """A lag alarm threshold (None: the default) must fire before records are given up on."""
    if threshold is None:
        return []
    value, age = seconds(threshold), seconds(max_record_age)
    if value is not None and age is not None and 0 < value < age:
        return []
    return [
        Problem(
            prop,
            f"{value:g} s" if value is not None else threshold,
            f"more than 0 and below max_record_age ({age:g} s): lag must alarm before records "
            "are given up on",
        )
    ]


def _runtime_metric(
    consumer: StreamConsumer, metric_name: str, statistic: str = cloudwatch.Stats.SUM
) -> cloudwatch.Metric:
    return consumer_metric(
        consumer.metrics_namespace, consumer.consumer_name, metric_name, statistic
    )
