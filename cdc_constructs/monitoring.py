"""StreamConsumerMonitoring: alarms on lag and loss, and a dashboard of the pipeline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from cdc_consumer.metric_names import (
    BOOKKEEPING_METRICS,
    CONTENTION_FAILURES,
    COUNT_METRICS,
    FOREIGN_MARKERS,
    ITERATOR_LAG_MS,
    RECORDS_QUARANTINED,
    Metric,
)
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.alarm_topic import AlarmTopic
from cdc_constructs.alarms import AlarmActionStrategy, SnsAlarmAction, alarm_on_any, consumer_metric
from cdc_constructs.exceptions import Problem
from cdc_constructs.failure_age_alarms import age_alarms, age_widget, failure_ages
from cdc_constructs.failure_kinds import OnFailureTarget, Quarantine
from cdc_constructs.validation import raise_if_any, seconds

__all__ = [
    "DESTINATION_DELIVERY_FAILURES_METRIC",
    "DROPPED_RECORDS_METRIC",
    "MAPPING_COUNT_METRICS",
    "MonitoredConsumer",
    "StreamConsumerMonitoring",
    "check_iterator_age_threshold",
]

# The runtime's embedded-metric-format metrics (COUNT_METRICS, BOOKKEEPING_METRICS,
# ITERATOR_LAG_MS, all with the dimension Consumer) are cdc_consumer.metric_names'.
# The mapping's records given up on (retries or record age ran out): the on-failure alarm's
# metric, whatever the destination. Not OnFailureDestinationDeliveredEventCount: that one misses
# a batch whose delivery to the destination failed.
DROPPED_RECORDS_METRIC = "DroppedEventCount"
# The function's count of failed deliveries to its on-failure destination (AWS/Lambda,
# FunctionName): a bucket policy, a key or a quota refused the batch, which Lambda then drops.
# DroppedEventCount counts those records too, but its alarm says "redrive them"; this one says
# they are not in the destination.
DESTINATION_DELIVERY_FAILURES_METRIC = "DestinationDeliveryFailures"
# The mapping's event-count metrics (MetricsConfig EventCount), dimension EventSourceMappingUUID.
MAPPING_COUNT_METRICS = (
    "PolledEventCount",
    "FilteredOutEventCount",
    "InvokedEventCount",
    "FailedInvokeEventCount",
    "DroppedEventCount",
    "OnFailureDestinationDeliveredEventCount",
)


class MonitoredConsumer(Protocol):
    """What :class:`StreamConsumerMonitoring` reads of a consumer, and nothing more.

    :class:`~cdc_constructs.StreamConsumer` is one; any object with these attributes is too.
    """

    @property
    def consumer_name(self) -> str:
        """The ``Consumer`` dimension of the runtime's metrics."""

    @property
    def runtime_consumers(self) -> Sequence[str]:
        """The ``Consumer`` dimensions the runtime's metrics carry: ``[consumer_name]``, or
        the names of the members of a consumer group behind one function."""

    @property
    def metrics_namespace(self) -> str: ...

    @property
    def max_record_age(self) -> Duration:
        """The mapping's max record age: the lag alarm's default threshold derives from it."""

    @property
    def function(self) -> lambda_.IFunction: ...

    @property
    def event_source_mapping(self) -> lambda_.IEventSourceMapping: ...

    @property
    def on_failure(self) -> OnFailureTarget:
        """The mapping's on-failure destination: its kind adds its own alarms (an SQS queue's
        depth)."""

    @property
    def quarantine_queue(self) -> sqs.IQueue: ...

    @property
    def related_alarms(self) -> Mapping[str, cloudwatch.Alarm]:
        """Alarms the consumer's other parts made (the redrive's lost records and errors, a
        Kinesis table's replication), with their actions already set: listed in
        :attr:`StreamConsumerMonitoring.alarms` and on the dashboard, never re-wired."""


class StreamConsumerMonitoring(Construct):
    """Alarms and a dashboard for one stream consumer (:class:`MonitoredConsumer`).

    Alarms (each given ``alarm_action``, by default: notify ``alarm_topic`` on ALARM and OK):

    - ``IteratorAge``: the function's IteratorAge (Maximum, 1 min) above the threshold for
      3 minutes. Default threshold: a quarter of the consumer's max record age (15 min of
      1 h), so there is time to act before records go to the on-failure destination
      (KinesisConsumer passes at most 15 minutes: its record age is days).
    - ``DroppedRecords``: the mapping's ``DroppedEventCount`` (Sum, 1 min) ≥ 1: records were
      given up on and sent to the on-failure destination, whatever it is (see
      ``cdc_constructs.monitoring.DROPPED_RECORDS_METRIC``).
    - ``DestinationDeliveryFailures``: the function's ``DestinationDeliveryFailures`` (Sum)
      ≥ 1: Lambda could not write a failed batch to the on-failure destination (a bucket
      policy, a key, a quota) and dropped it; only the stream still holds its records.
    - ``OnFailureQueueDepth`` (SQS destinations): visible on-failure messages ≥ 1.
    - ``QuarantineQueueDepth``: visible messages in the quarantine queue ≥ 1.
    - the runtime's metrics (Sum) ≥ 1: ``RecordsQuarantined``; ``ForeignMarkers`` (a marker of
      another stream's consumer under the same name: the record is failed, never skipped);
      ``ContentionFailures`` (a batch met other writers past its contention budget).
    - ``FunctionErrors``: function errors (Sum) ≥ 1: crashes and timeouts, which the
      runtime's own failure reporting never causes.
    - ``FunctionThrottles``: throttles (Sum) ≥ 1: the shard waits.
    - ``FailedBatchAge``, ``OnFailureQueueAge`` (SQS), ``QuarantineAge``: see failure_age.
    - the consumer's ``related_alarms`` (StreamConsumer: ``RedriveLostRecords``, the
      redrive's alarm on records the stream no longer holds, and ``RedriveErrors``, its
      function's errors; KinesisConsumer adds the table's replication to its stream:
      ``ReplicationAge``, ``ReplicationThrottled``, ``ReplicationFailed``), listed and shown,
      their actions set by whoever made them (StreamConsumer gives its redrive the same topic).

    Missing data is "not breaching": an idle consumer is healthy.

    The dashboard shows lag, the function, failures and their age, the runtime's records and
    bookkeeping (markers, ledger entries and the records they list, kept for the marker
    lifetime), the mapping's records; then the related alarms' metrics.

    :param consumer: the consumer to watch (a StreamConsumer, or anything with the
        attributes of :class:`MonitoredConsumer`).
    :param alarm_action: what each alarm does (an :class:`~cdc_constructs.alarms.
        AlarmActionStrategy`, as in cdk-monitoring-constructs). Default: notify
        ``alarm_topic``.
    :param alarm_topic: Default: a new :class:`AlarmTopic` (encrypted, TLS-only); not made when
        ``alarm_action`` is given.
    :param dashboard: add this consumer's widgets to an existing dashboard. Default: a new one.
    :param iterator_age_threshold: Default a quarter of ``max_record_age``.

    Escape hatches: :attr:`alarms` (by name), :attr:`alarm_topic`, :attr:`dashboard`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        consumer: MonitoredConsumer,
        alarm_action: AlarmActionStrategy | None = None,
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
        self._consumer = consumer
        self._period = Duration.seconds(defaults.ALARM_PERIOD_SECONDS)
        self._age_seconds = consumer.max_record_age.to_seconds(integral=False)
        self._threshold_seconds = (
            iterator_age_threshold.to_seconds(integral=False)
            if iterator_age_threshold is not None
            else self._age_seconds * defaults.ITERATOR_AGE_ALARM_FRACTION
        )
        self.iterator_age_threshold_ms = int(self._threshold_seconds * 1000)
        """The lag alarm's threshold, in milliseconds (IteratorAge's unit)."""
        if alarm_action is None:
            alarm_topic = alarm_topic or AlarmTopic(self, "AlarmTopic").topic
            alarm_action = SnsAlarmAction(alarm_topic)
        self.alarm_topic: sns.ITopic | None = alarm_topic
        """The topic the alarms notify (None when only an ``alarm_action`` was given)."""
        self.alarm_action: AlarmActionStrategy = alarm_action
        """What each alarm made here does."""
        self._metrics = self._alarm_metrics()
        self.alarms: dict[str, cloudwatch.Alarm] = self._make_alarms()
        """The alarms by name."""
        self._ages = failure_ages(consumer)  # each place a failure waits: its age alarm
        self.alarms.update(age_alarms(self, self._ages, self.alarm_action))
        self.alarms.update(consumer.related_alarms)
        self.dashboard = dashboard or cloudwatch.Dashboard(self, "Dashboard")
        """The dashboard the widgets were added to."""
        self.dashboard.add_widgets(*self._widgets())

    def _alarm_metrics(self) -> dict[str, cloudwatch.IMetric]:
        function, period = self._consumer.function, self._period
        maximum, total = cloudwatch.Stats.MAXIMUM, cloudwatch.Stats.SUM
        metrics: dict[str, cloudwatch.IMetric] = {
            "IteratorAge": function.metric("IteratorAge", statistic=maximum, period=period),
            "DroppedRecords": mapping_metric(self._consumer, DROPPED_RECORDS_METRIC, period),
            DESTINATION_DELIVERY_FAILURES_METRIC: function.metric(
                DESTINATION_DELIVERY_FAILURES_METRIC, statistic=total, period=period
            ),
        }
        return metrics | {
            **{name: metric for name, (metric, _) in self._kind_alarms().items()},
            **{
                key: _runtime_metric(self._consumer, metric, member)
                for key, (metric, member) in _runtime_alarms(self._consumer).items()
            },
            "FunctionErrors": function.metric_errors(statistic=total, period=period),
            "FunctionThrottles": function.metric_throttles(statistic=total, period=period),
        }

    def _kind_alarms(self) -> dict[str, tuple[cloudwatch.IMetric, str]]:
        """The failure kinds' own alarms: the on-failure destination's, the quarantine's."""
        consumer, period, name = self._consumer, self._period, self._consumer.consumer_name
        target = consumer.on_failure
        quarantine = Quarantine(consumer.quarantine_queue, None, shared=True)
        return {
            **target.failure_kind.alarm_metrics(target, period, name),
            **quarantine.alarm_metrics(period, name),
        }

    def _make_alarms(self) -> dict[str, cloudwatch.Alarm]:
        name = self._consumer.consumer_name
        descriptions = _descriptions(name, self._threshold_seconds, self._age_seconds)
        descriptions.update({key: text for key, (_, text) in self._kind_alarms().items()})
        for key, (metric_name, member) in _runtime_alarms(self._consumer).items():
            descriptions[key] = _descriptions(member, 0, 0)[metric_name]
        lag = cloudwatch.Alarm(
            self,
            "IteratorAge",
            metric=self._metrics["IteratorAge"],
            alarm_description=descriptions["IteratorAge"],
            threshold=self.iterator_age_threshold_ms,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=defaults.ITERATOR_AGE_EVALUATION_PERIODS,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        self.alarm_action.add_alarm_actions(lag)
        alarms = {"IteratorAge": lag}
        for alarm_name, metric in self._metrics.items():
            if alarm_name != "IteratorAge":
                alarms[alarm_name] = alarm_on_any(
                    self,
                    alarm_name,
                    metric,
                    description=descriptions[alarm_name],
                    action=self.alarm_action,
                )
        return alarms

    def _widgets(self) -> list[cloudwatch.IWidget]:
        consumer, metrics, period = self._consumer, self._metrics, self._period
        function = consumer.function
        lag_ms = _runtime_metric(
            consumer, ITERATOR_LAG_MS.name, consumer.runtime_consumers[0], cloudwatch.Stats.MAXIMUM
        )
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
            _failures_widget(metrics),
            age_widget(self._ages),
            _runtime_widget(consumer, "Runtime (records)", COUNT_METRICS),
            _runtime_widget(consumer, "Bookkeeping (items written)", BOOKKEEPING_METRICS),
            cloudwatch.GraphWidget(
                title="Event source mapping (records)", left=self._mapping_metrics(), width=8
            ),
            *_related_widgets(consumer),
        ]

    def _mapping_metrics(self) -> list[cloudwatch.IMetric]:
        return [
            mapping_metric(self._consumer, name, self._period) for name in MAPPING_COUNT_METRICS
        ]


def _runtime_widget(
    consumer: MonitoredConsumer, title: str, metrics: Sequence[Metric]
) -> cloudwatch.IWidget:
    """A graph of the runtime's ``metrics`` (Sum), for each of the consumer's runtime names."""
    return cloudwatch.GraphWidget(
        title=title,
        left=[
            _runtime_metric(consumer, metric.name, member)
            for member in consumer.runtime_consumers
            for metric in metrics
        ],
        width=8,
    )


def _failures_widget(metrics: Mapping[str, cloudwatch.IMetric]) -> cloudwatch.IWidget:
    """Records dropped to the on-failure destination, batches it refused, queued messages."""
    names = (
        "DroppedRecords",
        DESTINATION_DELIVERY_FAILURES_METRIC,
        "OnFailureQueueDepth",
        "QuarantineQueueDepth",
    )
    return cloudwatch.GraphWidget(
        title="Failures: records dropped to the on-failure destination, queued messages",
        left=[metrics[name] for name in names if name in metrics],
        width=8,
    )


def _related_widgets(consumer: MonitoredConsumer) -> list[cloudwatch.IWidget]:
    """A graph of what the consumer's other alarms watch (its redrive's lost records and errors;
    a Kinesis consumer's replication from the table), when it has any."""
    related = consumer.related_alarms
    if not related:
        return []
    return [
        cloudwatch.GraphWidget(
            title="Redrive and replication",
            left=[alarm.metric for alarm in related.values()],
            width=24,
        )
    ]


def mapping_metric(
    consumer: MonitoredConsumer, metric_name: str, period: Duration
) -> cloudwatch.Metric:
    """One of the mapping's event-count metrics (AWS/Lambda, EventSourceMappingUUID), Sum."""
    return cloudwatch.Metric(
        namespace="AWS/Lambda",
        metric_name=metric_name,
        dimensions_map={
            "EventSourceMappingUUID": consumer.event_source_mapping.event_source_mapping_id
        },
        statistic=cloudwatch.Stats.SUM,
        period=period,
    )


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
    consumer: MonitoredConsumer,
    metric_name: str,
    dimension: str,
    statistic: str = cloudwatch.Stats.SUM,
) -> cloudwatch.Metric:
    """The runtime's metric of one consumer (``dimension``: a runtime consumer's name)."""
    return consumer_metric(consumer.metrics_namespace, dimension, metric_name, statistic)


#: The runtime's metrics alarmed at >= 1 per consumer (or group member).
_RUNTIME_ALARMED = (RECORDS_QUARANTINED, FOREIGN_MARKERS, CONTENTION_FAILURES)


def _runtime_alarms(consumer: MonitoredConsumer) -> dict[str, tuple[str, str]]:
    """Alarm name -> (runtime metric, Consumer dimension): ``RecordsQuarantined``,
    ``ForeignMarkers`` and ``ContentionFailures`` of the consumer, or ``<metric>-<member>`` of
    each group member."""
    members = list(consumer.runtime_consumers)
    if members == [consumer.consumer_name]:
        return {m.name: (m.name, members[0]) for m in _RUNTIME_ALARMED}
    return {f"{m.name}-{member}": (m.name, member) for m in _RUNTIME_ALARMED for member in members}


def _descriptions(name: str, threshold_seconds: float, age_seconds: float) -> dict[str, str]:
    """Each alarm's description: what fired and what to do."""
    return {
        "IteratorAge": (
            f"{name}: the oldest record waits more than {threshold_seconds:g} s; at "
            f"{age_seconds:g} s records go to the on-failure destination"
        ),
        "DroppedRecords": (
            f"{name}: records were given up on (retries or record age ran out) and sent to "
            "the on-failure destination; redrive them (docs/operations.md, 'When the "
            "on-failure alarm fires')"
        ),
        DESTINATION_DELIVERY_FAILURES_METRIC: (
            f"{name}: Lambda could not deliver a failed batch to the on-failure destination (a "
            "bucket policy, a key, a quota) and dropped it: it is not in the destination. Fix "
            "the destination's access, then replay the records from the stream while it holds "
            "them (docs/operations.md, 'Failure kinds')"
        ),
        RECORDS_QUARANTINED.name: f"{name}: the runtime quarantined records",
        FOREIGN_MARKERS.name: (
            f"{name}: a record's idempotency marker was written by a consumer of another "
            "stream under the same name; the record is failed, not skipped - give each "
            "consumer its own consumer_name (docs/operations.md)"
        ),
        CONTENTION_FAILURES.name: (
            f"{name}: a batch kept meeting other writers on its items (two deliveries of one "
            "shard, or DynamoDB's TransactionConflict) past its contention budget and was "
            "reported failed; Lambda retries it. Look for a second mapping or redrive of the "
            "same stream, or a view item every shard updates (docs/operations.md)"
        ),
        "FunctionErrors": f"{name}: the consumer function crashed or timed out",
        "FunctionThrottles": f"{name}: the consumer function was throttled",
    }
