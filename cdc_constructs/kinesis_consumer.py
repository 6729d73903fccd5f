"""KinesisConsumer: a Lambda function consuming a table's changes from a Kinesis data stream.

The Kinesis route (docs/design.md §9): retention up to 365 days, more readers, enhanced fan-out;
in exchange one item's changes may arrive out of order and more than once. The consumer gets
StreamConsumer's safety defaults and checks, with the record age bounded by the Kinesis stream's
own retention instead of DynamoDB Streams' 24 h, and its runtime orders changes by version
(``cdc_consumer.LatestImage`` and the version guard).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs import environment as env
from cdc_constructs.assets import ASSET_EXCLUDES, handlers_dir
from cdc_constructs.change_capture_table import ChangeCaptureTable
from cdc_constructs.exceptions import Problem
from cdc_constructs.function import make_function
from cdc_constructs.idempotency_table import IdempotencyTable
from cdc_constructs.monitoring import StreamConsumerMonitoring, check_iterator_age_threshold
from cdc_constructs.permissions import (
    IDEMPOTENCY_TABLE_ACTIONS,
    TABLE_KEY_ACTIONS,
    VIEW_TABLE_READ_ACTIONS,
    VIEW_TABLE_WRITE_ACTIONS,
    allow,
    grant_key,
    grant_send,
)
from cdc_constructs.queues import dead_letter_queue
from cdc_constructs.runtime_layer import ConsumerRuntimeLayer
from cdc_constructs.stream_consumer import _OnFailureQueue
from cdc_constructs.validation import (
    check_batch_size,
    check_duration,
    check_filters,
    check_function_timeout,
    check_max_batching_window,
    check_name,
    check_parallelization_factor,
    check_range,
    check_retry_attempts,
    check_starting_position,
    raise_if_any,
    seconds,
)

__all__ = ["KINESIS_FILTER_FIELDS", "KinesisConsumer", "KinesisFilters"]

KINESIS_READ_ACTIONS: Final = (
    "kinesis:DescribeStream",
    "kinesis:DescribeStreamSummary",
    "kinesis:GetRecords",
    "kinesis:GetShardIterator",
    "kinesis:ListShards",
)
"""What a Lambda mapping polling a Kinesis stream uses (shared-throughput iterators)."""

KINESIS_FAN_OUT_ACTIONS: Final = ("kinesis:DescribeStreamConsumer", "kinesis:SubscribeToShard")
"""Reading through an enhanced fan-out consumer (on the consumer's ARN)."""

KINESIS_KEY_ACTIONS: Final = ("kms:Decrypt",)
"""Reading a stream encrypted with a customer key."""

KINESIS_FILTER_FIELDS: Final = (
    "approximateArrivalTimestamp",
    "data",
    "kinesisSchemaVersion",
    "partitionKey",
    "sequenceNumber",
)
"""What a Kinesis filter pattern can match: the record's metadata and its ``data`` (the
DynamoDB change, decoded from base64 JSON by Lambda before filtering)."""

KINESIS_MARKER_MARGIN_SECONDS: Final = 24 * 3600
"""Markers outlive the stream's retention by a day: a duplicate can arrive as long as the
stream holds the record (a mapping re-created at TRIM_HORIZON reads it again)."""


class KinesisFilters:
    """Filter patterns for a KinesisConsumer: the DynamoDB change is under ``data``."""

    @staticmethod
    def on_data(pattern: Mapping[str, Any]) -> dict[str, Any]:
        """A :class:`~cdc_constructs.StreamFilters` pattern (which matches a DynamoDB stream
        record) made to match the same change in a Kinesis record: ``{"data": pattern}``.
        ``KinesisFilters.on_data(StreamFilters.ttl_deletions_only())`` keeps TTL deletions."""
        return {"data": dict(pattern)}


class KinesisConsumer(Construct):
    """A Lambda function fed by the Kinesis data stream a table streams its changes to, with
    StreamConsumer's safety: TRIM_HORIZON, finite retries, bisect, ReportBatchItemFailures, an
    on-failure destination, a record age below the stream's retention, alarms, least privilege.

    Source (one of):

    :param table: a :class:`ChangeCaptureTable` made with ``kinesis=KinesisDestination(...)``:
        its stream and retention are used.
    :param stream: an existing Kinesis stream carrying a table's changes, with
    :param stream_retention: its retention period (required with ``stream``).
    :param enhanced_fan_out: Default False. True reads through a dedicated enhanced fan-out
        consumer (its own 2 MB/s per shard and push delivery, billed per consumer-shard hour):
        for many readers of one stream, or latency below the shared 200 ms poll.

    :param consumer_name: the consumer's stable name (markers, metric dimension). Default: the
        construct id.

    Function (as StreamConsumer): ``code``, ``handler`` (default ``order_stats.handler``, the
    bundled handlers), ``memory_size`` (256 MB), ``timeout`` (60 s), ``log_retention`` (one
    month), ``tracing``, ``environment``, ``reserved_concurrent_executions``.

    Mapping (as StreamConsumer, AWS's Kinesis limits): ``starting_position`` (TRIM_HORIZON;
    LATEST needs ``allow_latest_starting_position``), ``batch_size`` (100), ``max_batching_window``
    (0 s), ``parallelization_factor`` (1), ``retry_attempts`` (5, never infinite),
    ``max_record_age`` (1 h; 60 s up to, not including, the stream's retention and at most
    AWS's 7 days: refused otherwise), ``bisect_batch_on_error`` (True), ``filters`` (up to 5
    patterns on the record's fields, the change under ``data``; see :class:`KinesisFilters`).

    Failure handling: ``on_failure_queue`` (default a new encrypted queue, as StreamConsumer's),
    ``quarantine_queue``, ``encryption_key``, ``idempotency_table``. Its markers are kept for
    the stream's retention plus a day (``CDC_MARKER_TTL_SECONDS``). There is no redrive
    function on this route yet: the on-failure messages name Kinesis sequence numbers, read
    back with the Kinesis API while the stream retains them.

    Monitoring (as StreamConsumer): ``monitoring``, ``alarm_topic``, ``dashboard``,
    ``iterator_age_alarm_threshold`` (a quarter of ``max_record_age``), ``metrics_namespace``.
    Alarms: IteratorAge, OnFailureQueueDepth, QuarantineQueueDepth, RecordsQuarantined,
    FunctionErrors, FunctionThrottles.

    Escape hatches: :attr:`function`, :attr:`role`, :attr:`log_group`,
    :attr:`event_source_mapping`, :attr:`stream`, :attr:`fan_out_consumer`,
    :attr:`dead_letter_queue`, :attr:`quarantine_queue`, :attr:`idempotency_table`,
    :attr:`monitoring`, :attr:`alarms`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: ChangeCaptureTable | None = None,
        stream: kinesis.IStream | None = None,
        stream_retention: Duration | None = None,
        enhanced_fan_out: bool = False,
        consumer_name: str | None = None,
        code: lambda_.Code | None = None,
        handler: str | None = None,
        memory_size: int = defaults.MEMORY_SIZE_MB,
        timeout: Duration | None = None,
        log_retention: logs.RetentionDays = defaults.LOG_RETENTION,
        tracing: lambda_.Tracing | None = None,
        environment: Mapping[str, str] | None = None,
        reserved_concurrent_executions: int | None = None,
        starting_position: lambda_.StartingPosition = defaults.STARTING_POSITION,
        allow_latest_starting_position: bool = False,
        batch_size: int = defaults.BATCH_SIZE,
        max_batching_window: Duration | None = None,
        parallelization_factor: int = defaults.PARALLELIZATION_FACTOR,
        retry_attempts: int = defaults.RETRY_ATTEMPTS,
        max_record_age: Duration | None = None,
        bisect_batch_on_error: bool = defaults.BISECT_BATCH_ON_ERROR,
        filters: Sequence[Mapping[str, Any]] = (),
        on_failure_queue: sqs.IQueue | None = None,
        quarantine_queue: sqs.IQueue | None = None,
        encryption_key: kms.IKey | None = None,
        idempotency_table: IdempotencyTable | dynamodb.ITable | None = None,
        monitoring: bool = True,
        alarm_topic: sns.ITopic | None = None,
        dashboard: cloudwatch.Dashboard | None = None,
        iterator_age_alarm_threshold: Duration | None = None,
        metrics_namespace: str = defaults.METRICS_NAMESPACE,
    ) -> None:
        timeout = timeout or Duration.seconds(defaults.TIMEOUT_SECONDS)
        max_batching_window = max_batching_window or Duration.seconds(
            defaults.MAX_BATCHING_WINDOW_SECONDS
        )
        max_record_age = max_record_age or Duration.seconds(defaults.MAX_RECORD_AGE_SECONDS)
        consumer_name = construct_id if consumer_name is None else consumer_name
        source_stream, retention, problems = _source(table, stream, stream_retention)
        problems += check_name("consumer_name", consumer_name, forbidden="#")
        if code is not None and not handler:
            problems.append(Problem("handler", handler, "the handler string for the given code"))
        problems += check_range("memory_size", memory_size, *defaults.LAMBDA_MEMORY_RANGE_MB, "MB")
        problems += check_function_timeout("timeout", timeout)
        problems += check_starting_position(starting_position, allow_latest_starting_position)
        problems += check_batch_size(batch_size)
        problems += check_max_batching_window(max_batching_window)
        problems += check_parallelization_factor(parallelization_factor)
        problems += check_retry_attempts(retry_attempts)
        problems += check_kinesis_record_age(max_record_age, retention)
        problems += check_kinesis_filters(filters)
        if monitoring:
            problems += check_iterator_age_threshold(
                "iterator_age_alarm_threshold", iterator_age_alarm_threshold, max_record_age
            )
        elif dashboard is not None or iterator_age_alarm_threshold is not None:
            problems.append(
                Problem(
                    "dashboard/iterator_age_alarm_threshold",
                    "given with monitoring=False",
                    "omitted, or monitoring=True",
                )
            )
        problems += check_name("metrics_namespace", metrics_namespace)
        raise_if_any(f"KinesisConsumer {construct_id!r}", problems)
        assert source_stream is not None and retention is not None

        super().__init__(scope, construct_id)
        self.consumer_name = consumer_name
        self.metrics_namespace = metrics_namespace
        self.max_record_age = max_record_age
        self.retry_attempts = retry_attempts
        self.stream: kinesis.IStream = source_stream
        """The Kinesis stream read."""
        self.stream_retention: Duration = retention
        """Its retention period (the record age stays below it)."""
        self.redrive = None
        """No redrive function on the Kinesis route (see the class docstring)."""

        self.dead_letter_queue: sqs.IQueue = on_failure_queue or dead_letter_queue(
            self,
            "OnFailureQueue",
            purpose="on-failure destination of the Kinesis mapping: pointers to failed batches",
            encryption_key=encryption_key,
            retention_days=defaults.ON_FAILURE_QUEUE_RETENTION_DAYS,
        )
        """The mapping's on-failure destination (Kinesis batch info: shard, sequence numbers)."""
        self.quarantine_queue: sqs.IQueue = quarantine_queue or dead_letter_queue(
            self,
            "QuarantineQueue",
            purpose="poison records quarantined by the consumer runtime, with their payload",
            encryption_key=encryption_key,
            retention_days=defaults.QUARANTINE_QUEUE_RETENTION_DAYS,
        )
        """Where the runtime sends poison records, whole, with the error."""
        self.idempotency_table: dynamodb.ITable = _as_table(
            idempotency_table or IdempotencyTable(self, "IdempotencyTable")
        )
        """The idempotency table (pk ``id``, TTL ``expiration``)."""

        marker_ttl = int(seconds(retention) or 0) + KINESIS_MARKER_MARGIN_SECONDS
        self.role: iam.IRole | None
        self.log_group: logs.LogGroup | None
        self.function: lambda_.Function
        self.role, self.log_group, self.function = make_function(
            self,
            description=f"cdc-constructs Kinesis consumer {consumer_name}",
            code=code or lambda_.Code.from_asset(str(handlers_dir()), exclude=list(ASSET_EXCLUDES)),
            handler=handler or "order_stats.handler",
            layers=[ConsumerRuntimeLayer.of(self)],
            environment={
                env.CONSUMER_NAME: consumer_name,
                env.IDEMPOTENCY_TABLE: self.idempotency_table.table_name,
                env.QUARANTINE_QUEUE_URL: self.quarantine_queue.queue_url,
                env.METRICS_NAMESPACE: metrics_namespace,
                env.MARKER_TTL_SECONDS: str(marker_ttl),
                **(environment or {}),
            },
            memory_size=memory_size,
            timeout=timeout,
            log_retention=log_retention,
            invoked_by="Invoked only by the Kinesis event source mapping (failed batches go to "
            "the mapping's on-failure queue)",
            tracing=tracing,
            reserved_concurrent_executions=reserved_concurrent_executions,
        )

        self.function.add_to_role_policy(allow(KINESIS_READ_ACTIONS, [self.stream.stream_arn]))
        grant_key(self.function, self.stream.encryption_key, KINESIS_KEY_ACTIONS)
        self._grant_table(self.idempotency_table, IDEMPOTENCY_TABLE_ACTIONS)
        grant_send(self.function, self.quarantine_queue)

        self.fan_out_consumer: kinesis.StreamConsumer | None = None
        """The enhanced fan-out consumer, or None (shared-throughput polling)."""
        source_arn = self.stream.stream_arn
        if enhanced_fan_out:
            self.fan_out_consumer = kinesis.StreamConsumer(
                self,
                "FanOutConsumer",
                stream=self.stream,
                stream_consumer_name=f"cdc-{consumer_name}"[:128],
            )
            source_arn = self.fan_out_consumer.stream_consumer_arn
            self.function.add_to_role_policy(allow(KINESIS_FAN_OUT_ACTIONS, [source_arn]))

        self.event_source_mapping: lambda_.EventSourceMapping = (
            self.function.add_event_source_mapping(
                "KinesisMapping",
                event_source_arn=source_arn,
                starting_position=starting_position,
                batch_size=batch_size,
                max_batching_window=max_batching_window if seconds(max_batching_window) else None,
                parallelization_factor=parallelization_factor,
                retry_attempts=retry_attempts,
                max_record_age=max_record_age,
                bisect_batch_on_error=bisect_batch_on_error,
                report_batch_item_failures=defaults.REPORT_BATCH_ITEM_FAILURES,
                on_failure=_OnFailureQueue(self.dead_letter_queue),
                filters=[lambda_.FilterCriteria.filter(dict(p)) for p in filters] or None,
                metrics_config=lambda_.MetricsConfig(metrics=[lambda_.MetricType.EVENT_COUNT]),
            )
        )
        """The event source mapping (escape hatch)."""
        if self.fan_out_consumer is not None:
            # The mapping must not start before the consumer is ACTIVE and its grants exist.
            self.event_source_mapping.node.add_dependency(self.fan_out_consumer)

        self.monitoring: StreamConsumerMonitoring | None = (
            StreamConsumerMonitoring(
                self,
                "Monitoring",
                consumer=self,  # type: ignore[arg-type]
                alarm_topic=alarm_topic,
                dashboard=dashboard,
                iterator_age_threshold=iterator_age_alarm_threshold,
            )
            if monitoring
            else None
        )
        """Alarms and dashboard, or None with ``monitoring=False``."""

    @property
    def alarms(self) -> dict[str, cloudwatch.Alarm]:
        """The alarms by name (empty with ``monitoring=False``)."""
        return dict(self.monitoring.alarms) if self.monitoring else {}

    @property
    def related_alarms(self) -> dict[str, cloudwatch.Alarm]:
        """None: there is no redrive function on this route."""
        return {}

    def grant_view_table(
        self, table: dynamodb.ITable, *, env_var: str | None = None, read: bool = False
    ) -> None:
        """Let the runtime write a projection's view table (as StreamConsumer's)."""
        actions = VIEW_TABLE_WRITE_ACTIONS + (VIEW_TABLE_READ_ACTIONS if read else ())
        self._grant_table(table, tuple(sorted(actions)))
        if env_var:
            self.function.add_environment(env_var, table.table_name)

    def _grant_table(self, table: dynamodb.ITable, actions: Sequence[str]) -> None:
        self.function.add_to_role_policy(allow(actions, [table.table_arn]))
        grant_key(self.function, table.encryption_key, TABLE_KEY_ACTIONS)


def _as_table(table: Any) -> dynamodb.ITable:
    return table.table if isinstance(table, IdempotencyTable) else table


def _source(
    table: ChangeCaptureTable | None,
    stream: kinesis.IStream | None,
    retention: Duration | None,
) -> tuple[kinesis.IStream | None, Duration | None, list[Problem]]:
    """The stream, its retention, and what is wrong with the source props."""
    if (table is None) == (stream is None):
        return (
            None,
            None,
            [
                Problem(
                    "table/stream",
                    "both" if table is not None else "neither",
                    "exactly one: a ChangeCaptureTable with a Kinesis destination, or a Kinesis "
                    "stream with its stream_retention",
                )
            ],
        )
    if table is not None:
        if not isinstance(table, ChangeCaptureTable) or table.kinesis_stream is None:
            return (
                None,
                None,
                [
                    Problem(
                        "table",
                        type(table).__name__,
                        "a ChangeCaptureTable made with kinesis=KinesisDestination(...)",
                    )
                ],
            )
        if retention is not None:
            return (
                None,
                None,
                [Problem("stream_retention", retention, "omitted with table (read from it)")],
            )
        return table.kinesis_stream, table.kinesis_retention, []
    if retention is None:
        return (
            None,
            None,
            [
                Problem(
                    "stream_retention", None, "the stream's retention period (given with stream)"
                )
            ],
        )
    low, high = 24 * 3600, 8760 * 3600
    problems = check_duration("stream_retention", retention, low, high, "24 h to 365 days")
    return stream, retention, problems


def check_kinesis_record_age(value: Duration | None, retention: Duration | None) -> list[Problem]:
    """60 s up to, not including, the stream's retention, and within AWS's 7 days."""
    low, high = defaults.MAX_RECORD_AGE_RANGE_SECONDS
    retention_seconds = int(seconds(retention) or 0)
    if not retention_seconds:
        return []  # the source's problem is reported already
    limit = min(high, retention_seconds - 1)
    return check_duration(
        "max_record_age",
        value,
        low,
        limit,
        f"1 minute up to, not including, the Kinesis stream's retention "
        f"({retention_seconds} s) and at most AWS's {high} s: an age the stream never reaches "
        "means records are never given up on",
    )


def check_kinesis_filters(filters: Sequence[Mapping[str, Any]]) -> list[Problem]:
    """StreamConsumer's checks (count, size, JSON), on Kinesis record fields; a ``data``
    pattern is checked as a pattern on a DynamoDB change (both images are in the data)."""
    if isinstance(filters, Mapping) or not isinstance(filters, Sequence):
        return [Problem("filters", filters, "a list of filter patterns (dicts)")]
    problems = [
        problem
        for problem in check_filters(
            [{"eventName": ["INSERT"]} for _ in filters], "NEW_AND_OLD_IMAGES"
        )
        if problem.prop == "filters"  # the count
    ]
    for index, pattern in enumerate(filters):
        prop = f"filters[{index}]"
        if not isinstance(pattern, Mapping) or not pattern:
            problems.append(Problem(prop, pattern, "a non-empty dict (a filter pattern)"))
            continue
        unknown = sorted(set(pattern) - set(KINESIS_FILTER_FIELDS))
        if unknown:
            problems.append(
                Problem(
                    prop,
                    pattern,
                    f"fields of a Kinesis record ({', '.join(KINESIS_FILTER_FIELDS)}), not "
                    f"{unknown}: the DynamoDB change is under 'data' (KinesisFilters.on_data)",
                )
            )
            continue
        data = pattern.get("data")
        if data is not None:
            for problem in check_filters([data], "NEW_AND_OLD_IMAGES"):
                problems.append(
                    Problem(
                        problem.prop.replace("filters[0]", f"{prop}.data"),
                        problem.value,
                        problem.allowed,
                    )
                )
    return problems
