"""StreamConsumer: a Lambda function consuming a DynamoDB stream, with safe defaults."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsii
from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs import environment as env  # `environment` is a prop here
from cdc_constructs.assets import ASSET_EXCLUDES, handlers_dir
from cdc_constructs.exceptions import Problem
from cdc_constructs.function import make_function
from cdc_constructs.idempotency_table import IdempotencyTable
from cdc_constructs.monitoring import StreamConsumerMonitoring, check_iterator_age_threshold
from cdc_constructs.permissions import (
    IDEMPOTENCY_TABLE_ACTIONS,
    STREAM_KEY_ACTIONS,
    STREAM_READ_ACTIONS,
    TABLE_KEY_ACTIONS,
    VIEW_TABLE_READ_ACTIONS,
    VIEW_TABLE_WRITE_ACTIONS,
    allow,
    grant_key,
    grant_send,
)
from cdc_constructs.queues import dead_letter_queue
from cdc_constructs.redrive import StreamRedrive, consumer_timeout_of, reserve_seconds
from cdc_constructs.runtime_layer import ConsumerRuntimeLayer
from cdc_constructs.source_table import (
    SourceTable,
    as_table,
    check_source_table,
    stream_view_type_of,
)
from cdc_constructs.validation import (
    check_batch_size,
    check_filters,
    check_function_timeout,
    check_max_batching_window,
    check_max_record_age,
    check_name,
    check_parallelization_factor,
    check_range,
    check_retry_attempts,
    check_starting_position,
    raise_if_any,
    seconds,
    view_type_name,
)

REFERENCE_HANDLER = "order_stats.handler"
"""The bundled reference handler (lambda_src/handlers/order_stats.py), used when neither
``code`` nor ``handler`` is given."""


@jsii.implements(lambda_.IEventSourceDlq)
class _OnFailureQueue:
    """The mapping's on-failure destination, granting only ``sqs:SendMessage``.

    Written instead of aws-cdk-lib's ``SqsDlq`` because that grants GetQueueAttributes and
    GetQueueUrl too and, for a queue with a customer key, wildcard KMS actions.
    """

    def __init__(self, queue: sqs.IQueue) -> None:
        self._queue = queue

    def bind(
        self, _target: lambda_.IEventSourceMapping, target_handler: lambda_.IFunction
    ) -> lambda_.DlqDestinationConfig:
        grant_send(target_handler, self._queue)
        return lambda_.DlqDestinationConfig(destination=self._queue.queue_arn)


class StreamConsumer(Construct):
    """A Lambda function fed by a DynamoDB stream, set up so records are neither lost nor
    stuck: in order, finite retries, bisect, an on-failure queue, alarms.

    The function runs the bundled reference handler, or ``code`` + ``handler``, or an
    existing ``function``; in every case the consumer runtime layer (``cdc_consumer``) is
    attached and the environment variables the runtime reads are set.

    Source:

    :param table: a :class:`ChangeCaptureTable`, or any ``dynamodb.ITable``/``ITableV2`` with
        a stream.
    :param stream_view_type: the stream's view type, to check ``filters`` against. Default:
        read from the table when it is defined in this app; unknown for an imported table
        (image filters are then not checked).
    :param consumer_name: the consumer's stable name: namespaces its idempotency markers
        and is the ``Consumer`` metric dimension. Default: the construct id. Changing it
        forgets which records were applied.

    Function:

    :param code: the function code. Default: the bundled handlers (lambda_src/handlers).
    :param handler: the handler string. Default ``order_stats.handler`` when ``code`` is
        omitted; required when ``code`` is given.
    :param function: an existing ``lambda_.Function`` instead: the layer and environment are
        added to it, its role gets the grants. ``code``, ``handler``, ``memory_size``,
        ``timeout``, ``tracing`` and ``reserved_concurrent_executions`` are then refused (set
        them on the function); the redrive reads the function's own timeout.
    :param memory_size: Default 256 MB. :param timeout: Default 60 s.
    :param log_retention: Default one month (the function's and the redrive's log groups).
    :param tracing: Default none (the runtime does not use the X-Ray SDK; lag and loss are
        measured by metrics and alarms).
    :param environment: extra environment variables.
    :param reserved_concurrent_executions: Default none (a stream consumer's concurrency is
        bounded by shards times parallelization factor anyway).

    Event source mapping (AWS limits are enforced; see defaults.py for the reasons):

    :param starting_position: Default TRIM_HORIZON. LATEST also needs
        ``allow_latest_starting_position=True``.
    :param batch_size: Default 100 (1..10000).
    :param max_batching_window: Default 0 s (0..300 s).
    :param parallelization_factor: Default 1 (1..10).
    :param retry_attempts: Default 5 (0..10000; -1 = infinite is rejected).
    :param max_record_age: Default 1 h (60 s .. below the 24 h retention).
    :param bisect_batch_on_error: Default True.
    :param filters: up to 5 filter patterns (see :class:`StreamFilters`); a record is
        delivered when it matches any. Default: none (every record).

    Failure handling:

    :param on_failure_queue: an existing queue for the mapping's on-failure destination.
        Default: a new queue, encrypted, TLS-only, 14 days retention.
    :param quarantine_queue: an existing queue for poison records. Default: likewise.
    :param encryption_key: a customer KMS key for the queues made here. Default:
        SQS-managed encryption.
    :param idempotency_table: an :class:`IdempotencyTable` or ITable (pk ``id``, TTL
        ``expiration``). Default: a new IdempotencyTable; share one between consumers.

    Monitoring:

    :param monitoring: Default True: alarms and a dashboard (StreamConsumerMonitoring).
    :param alarm_topic: SNS topic for alarm actions. Default: a new encrypted topic. With
        ``monitoring=False`` it still receives the redrive's lost-records alarm.
    :param dashboard: add the widgets to this dashboard. Default: a new dashboard. Refused
        with ``monitoring=False`` (nothing would be added to it).
    :param iterator_age_alarm_threshold: Default a quarter of ``max_record_age``. Refused
        with ``monitoring=False`` (there is no lag alarm).
    :param metrics_namespace: the runtime's metric namespace. Default ``CdcConstructs``.

    Recovery:

    :param redrive: Default True: a :class:`StreamRedrive` function that replays the
        on-failure and quarantine queues through this consumer once a fault is fixed (docs/operations.md,
        "Redrive"). The on-failure queue holds only pointers and the stream
        forgets their records after 24 h, so the way to replay them must exist before the
        alarm fires; idle, it costs nothing. Turn it off only if you redrive another way.

    Escape hatches: :attr:`function`, :attr:`role`, :attr:`log_group`,
    :attr:`event_source_mapping`, :attr:`dead_letter_queue` (the on-failure queue),
    :attr:`quarantine_queue`, :attr:`idempotency_table`, :attr:`redrive`, :attr:`monitoring`,
    :attr:`alarms`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: SourceTable,
        stream_view_type: dynamodb.StreamViewType | None = None,
        consumer_name: str | None = None,
        code: lambda_.Code | None = None,
        handler: str | None = None,
        function: lambda_.Function | None = None,
        memory_size: int | None = None,
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
        redrive: bool = defaults.REDRIVE,
    ) -> None:
        function_only = {
            "code": code,
            "handler": handler,
            "memory_size": memory_size,
            "timeout": timeout,
            "tracing": tracing,
            "reserved_concurrent_executions": reserved_concurrent_executions,
        }
        memory_size = defaults.MEMORY_SIZE_MB if memory_size is None else memory_size
        timeout = timeout or Duration.seconds(defaults.TIMEOUT_SECONDS)
        # What the redrive must outlast: the existing function's own timeout, or ours.
        consumer_timeout = consumer_timeout_of(function) if function is not None else timeout
        max_batching_window = max_batching_window or Duration.seconds(
            defaults.MAX_BATCHING_WINDOW_SECONDS
        )
        max_record_age = max_record_age or Duration.seconds(defaults.MAX_RECORD_AGE_SECONDS)
        consumer_name = construct_id if consumer_name is None else consumer_name

        # Validate everything before creating anything: one error lists every problem.
        problems: list[Problem] = []
        table_problems = check_source_table(table)
        problems += table_problems
        problems += check_name("consumer_name", consumer_name, forbidden="#")
        problems += _check_code(code, handler, function, function_only)
        problems += check_range("memory_size", memory_size, *defaults.LAMBDA_MEMORY_RANGE_MB, "MB")
        problems += check_function_timeout("timeout", timeout)
        problems += check_starting_position(starting_position, allow_latest_starting_position)
        problems += check_batch_size(batch_size)
        problems += check_max_batching_window(max_batching_window)
        problems += check_parallelization_factor(parallelization_factor)
        problems += check_retry_attempts(retry_attempts)
        problems += check_max_record_age(max_record_age)
        view_type = view_type_name(stream_view_type) or (
            None if table_problems else stream_view_type_of(table)
        )
        problems += check_filters(filters, view_type)
        problems += check_iterator_age_threshold(
            "iterator_age_alarm_threshold", iterator_age_alarm_threshold, max_record_age
        )
        problems += _check_monitoring(monitoring, dashboard, iterator_age_alarm_threshold)
        problems += check_name("metrics_namespace", metrics_namespace)
        problems += _check_redrive(redrive, consumer_timeout)
        raise_if_any(f"StreamConsumer {construct_id!r}", problems)

        super().__init__(scope, construct_id)
        self.consumer_name = consumer_name
        self.metrics_namespace = metrics_namespace
        self.max_record_age = max_record_age
        self.retry_attempts = retry_attempts
        self.source_table = as_table(table)
        """The table whose stream is consumed."""
        self.stream_arn: str = self.source_table.table_stream_arn  # type: ignore[assignment]
        """The consumed stream's ARN."""

        self.dead_letter_queue: sqs.IQueue = on_failure_queue or dead_letter_queue(
            self,
            "OnFailureQueue",
            purpose="on-failure destination of the stream mapping: pointers to failed batches",
            encryption_key=encryption_key,
            retention_days=defaults.ON_FAILURE_QUEUE_RETENTION_DAYS,
        )
        """The mapping's on-failure destination: metadata of batches that ran out of retries
        or record age (AWS's message shape; the records must be read back from the stream)."""
        self.quarantine_queue: sqs.IQueue = quarantine_queue or dead_letter_queue(
            self,
            "QuarantineQueue",
            purpose="poison records quarantined by the consumer runtime, with their payload",
            encryption_key=encryption_key,
            retention_days=defaults.QUARANTINE_QUEUE_RETENTION_DAYS,
        )
        """Where the runtime sends poison records, whole, with the error."""
        self.idempotency_table: dynamodb.ITable = as_table(
            idempotency_table or IdempotencyTable(self, "IdempotencyTable")
        )
        """The idempotency table (pk ``id``, TTL ``expiration``)."""

        runtime_environment = {
            env.CONSUMER_NAME: consumer_name,
            env.IDEMPOTENCY_TABLE: self.idempotency_table.table_name,
            env.QUARANTINE_QUEUE_URL: self.quarantine_queue.queue_url,
            env.METRICS_NAMESPACE: metrics_namespace,
            **(environment or {}),
        }
        self.role: iam.IRole | None
        self.log_group: logs.LogGroup | None
        self.function: lambda_.Function
        if function is None:
            self.role, self.log_group, self.function = make_function(
                self,
                description=f"cdc-constructs stream consumer {consumer_name}",
                code=code
                or lambda_.Code.from_asset(str(handlers_dir()), exclude=list(ASSET_EXCLUDES)),
                handler=handler or REFERENCE_HANDLER,
                layers=[ConsumerRuntimeLayer.of(self)],
                environment=runtime_environment,
                memory_size=memory_size,
                timeout=timeout,
                log_retention=log_retention,
                invoked_by="Invoked only by the stream event source mapping (failed batches go "
                "to the mapping's on-failure queue)",
                tracing=tracing,
                reserved_concurrent_executions=reserved_concurrent_executions,
            )
        else:
            self.function = function
            self.role = function.role
            self.log_group = None
            function.add_layers(ConsumerRuntimeLayer.of(self))
            for name, value in runtime_environment.items():
                function.add_environment(name, value)

        self.function.add_to_role_policy(allow(STREAM_READ_ACTIONS, [self.stream_arn]))
        grant_key(self.function, self.source_table.encryption_key, STREAM_KEY_ACTIONS)
        self._grant_table(self.idempotency_table, IDEMPOTENCY_TABLE_ACTIONS)
        grant_send(self.function, self.quarantine_queue)

        self.event_source_mapping: lambda_.EventSourceMapping = (
            self.function.add_event_source_mapping(
                "StreamMapping",
                event_source_arn=self.stream_arn,
                starting_position=starting_position,
                batch_size=batch_size,
                max_batching_window=max_batching_window if seconds(max_batching_window) else None,
                parallelization_factor=parallelization_factor,
                retry_attempts=retry_attempts,
                max_record_age=max_record_age,
                bisect_batch_on_error=bisect_batch_on_error,
                report_batch_item_failures=defaults.REPORT_BATCH_ITEM_FAILURES,
                on_failure=_OnFailureQueue(self.dead_letter_queue),
                # A raw dict here would synthesize as `{}`: each pattern goes through
                # FilterCriteria.filter, which renders it as {"Pattern": "<json>"}.
                filters=[lambda_.FilterCriteria.filter(dict(p)) for p in filters] or None,
                metrics_config=lambda_.MetricsConfig(metrics=[lambda_.MetricType.EVENT_COUNT]),
            )
        )
        """The event source mapping (escape hatch)."""

        self.redrive: StreamRedrive | None = (
            StreamRedrive(
                self,
                "Redrive",
                consumer_function=self.function,
                consumer_name=consumer_name,
                stream_arn=self.stream_arn,
                on_failure_queue=self.dead_letter_queue,
                quarantine_queue=self.quarantine_queue,
                layer=ConsumerRuntimeLayer.of(self),
                consumer_timeout=consumer_timeout,
                filters=filters,
                log_retention=log_retention,
                metrics_namespace=metrics_namespace,
                # With monitoring, StreamConsumerMonitoring wires its (given or made) topic.
                alarm_topic=None if monitoring else alarm_topic,
            )
            if redrive
            else None
        )
        """The redrive function (escape hatch), or None with ``redrive=False``. Its
        lost-records alarm notifies the monitoring topic (``alarm_topic`` without monitoring)."""

        self.monitoring: StreamConsumerMonitoring | None = (
            StreamConsumerMonitoring(
                self,
                "Monitoring",
                consumer=self,
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

    def grant_view_table(
        self, table: dynamodb.ITable, *, env_var: str | None = None, read: bool = False
    ) -> None:
        """Let the runtime write a projection's view table, and nothing more.

        Grants PutItem, UpdateItem, DeleteItem and ConditionCheckItem (the TransactWriteItems
        actions a projection uses), plus GetItem when ``read`` is True. With ``env_var``, the
        table's name is put in that environment variable (the reference handler reads
        ``VIEW_TABLE_NAME``).
        """
        actions = VIEW_TABLE_WRITE_ACTIONS + (VIEW_TABLE_READ_ACTIONS if read else ())
        self._grant_table(table, tuple(sorted(actions)))
        if env_var:
            self.function.add_environment(env_var, table.table_name)

    def _grant_table(self, table: dynamodb.ITable, actions: Sequence[str]) -> None:
        self.function.add_to_role_policy(allow(actions, [table.table_arn]))
        grant_key(self.function, table.encryption_key, TABLE_KEY_ACTIONS)


def _check_code(
    code: lambda_.Code | None,
    handler: str | None,
    function: lambda_.Function | None,
    function_only: Mapping[str, Any],
) -> list[Problem]:
    if function is not None:
        problems = []
        if not isinstance(function, lambda_.Function):
            problems.append(
                Problem(
                    "function",
                    function,
                    "a lambda_.Function made in this app (its environment and layers are set)",
                )
            )
        given = {name: value for name, value in function_only.items() if value is not None}
        if given:
            problems.append(
                Problem(
                    "/".join(given),
                    tuple(given.values()),
                    "omitted when an existing function is given: set them on that function",
                )
            )
        return problems
    if code is not None and not handler:
        return [
            Problem("handler", handler, "the handler string (module.function) for the given code")
        ]
    if handler is not None:
        return check_name("handler", handler)
    return []


def _check_monitoring(
    monitoring: bool, dashboard: cloudwatch.Dashboard | None, threshold: Duration | None
) -> list[Problem]:
    if monitoring:
        return []
    given = {
        name: value
        for name, value in (("dashboard", dashboard), ("iterator_age_alarm_threshold", threshold))
        if value is not None
    }
    if not given:
        return []
    return [
        Problem(
            "/".join(given),
            "given with monitoring=False",
            "omitted, or monitoring=True: without monitoring there is no dashboard and no lag "
            "alarm",
        )
    ]


def _check_redrive(redrive: bool, consumer_timeout: Duration | None) -> list[Problem]:
    """The redrive function must outlast one consumer invocation plus its margin."""
    # An invalid or unknown timeout is reported by the timeout (or function) check alone.
    if not redrive or consumer_timeout is None or check_function_timeout("", consumer_timeout):
        return []
    if reserve_seconds(consumer_timeout) < defaults.REDRIVE_TIMEOUT_SECONDS:
        return []
    limit = defaults.REDRIVE_TIMEOUT_SECONDS - defaults.REDRIVE_DEADLINE_MARGIN_SECONDS
    return [
        Problem(
            "redrive",
            f"True with a consumer timeout of {consumer_timeout.to_seconds():g} s",
            f"a consumer timeout below {limit} s (the redrive runs at most "
            f"{defaults.REDRIVE_TIMEOUT_SECONDS} s and must wait for one consumer invocation "
            f"plus {defaults.REDRIVE_DEADLINE_MARGIN_SECONDS} s), or redrive=False",
        )
    ]
