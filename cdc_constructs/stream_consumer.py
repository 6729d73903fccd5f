"""StreamConsumer: a Lambda function consuming a DynamoDB stream, with safe defaults."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Annotations, Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from cdc_consumer.environment_variables import (
    CONSUMER_GROUP_ENV,
    CONSUMER_NAME_ENV,
    IDEMPOTENCY_TABLE_ENV,
    LEDGER_TABLE_ENV,
    MARKER_TTL_ENV,
    METRICS_NAMESPACE_ENV,
    QUARANTINE_BUCKET_ENV,
    QUARANTINE_QUEUE_ENV,
    USER_HANDLER_ENV,
)
from cdc_consumer.group_member_spec import GroupMemberSpec
from cdc_consumer.handler_paths import WINDOW_HANDLER
from cdc_consumer.metric_names import DEFAULT_METRICS_NAMESPACE
from cdc_consumer.replay_windows import ReplayWindows
from cdc_consumer.service_limits import STREAM_RETENTION_SECONDS
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.consumer_group import ConsumerGroupMember, GroupOfConsumers
from cdc_constructs.consumer_names import ConsumerNames, check_consumer_name
from cdc_constructs.consumer_options import ConsumerOptions
from cdc_constructs.exceptions import Problem
from cdc_constructs.failure_kinds import OnFailureTarget, Quarantine, default_target, queue_target
from cdc_constructs.failure_options import FailureHandlingOptions
from cdc_constructs.function import make_function
from cdc_constructs.function_options import FunctionOptions
from cdc_constructs.idempotency_table import IdempotencyTable
from cdc_constructs.mapping_options import StreamMappingOptions
from cdc_constructs.marker_lifetime import (
    check_marker_lifetime,
    marker_lifetime_seconds,
    replay_windows,
)
from cdc_constructs.monitoring import StreamConsumerMonitoring
from cdc_constructs.monitoring_options import MonitoringOptions
from cdc_constructs.on_failure import LeastPrivilegeDestination, target_of_destination
from cdc_constructs.permissions import (
    IDEMPOTENCY_TABLE_ACTIONS,
    LEDGER_TABLE_ACTIONS,
    TABLE_KEY_ACTIONS,
    VIEW_TABLE_READ_ACTIONS,
    VIEW_TABLE_WRITE_ACTIONS,
    allow,
    grant_key,
    grant_stream_read,
)
from cdc_constructs.redrive import StreamRedrive
from cdc_constructs.replication import Replication
from cdc_constructs.runtime_layer import ConsumerRuntimeLayer
from cdc_constructs.source_table import (
    SourceTable,
    as_table,
    check_source_table,
    stream_view_type_of,
)
from cdc_constructs.stream_readers import StreamReaders
from cdc_constructs.validation import raise_if_any, view_type_name

__all__ = ["StreamConsumer"]


class StreamConsumer(Construct):
    """A Lambda function fed by a DynamoDB stream, set up so records are neither lost nor
    stuck: in order, finite retries, bisect, an on-failure destination that keeps each batch
    given up on whole (an S3 bucket by default), a quarantine queue for poison records, alarms.

    The function runs ``code`` + ``handler``, or is an existing ``function``; in every case
    the consumer runtime layer (``cdc_consumer``) is attached and the environment variables
    the runtime reads are set. Props are flat keyword arguments, as in aws-cdk-lib, grouped
    by concern into option objects, each documenting its props (what, default, why) and
    checking them. Every invalid prop is refused at once, in one
    :class:`~cdc_constructs.CdcConfigurationError`, before anything is made.

    :param table: a :class:`ChangeCaptureTable`, or any ``dynamodb.ITable``/``ITableV2`` with
        a stream.
    :param stream_view_type: the stream's view type, to check ``filters`` against. Default:
        read from the table when it is defined in this app; unknown for an imported table
        (image filters are then not checked).
    :param consumer_name: the consumer's stable name: namespaces its idempotency markers
        and is the ``Consumer`` metric dimension. Changing it forgets which records were
        applied. Default: the construct id, whatever else the app holds (adding a consumer
        never renames another: :mod:`~cdc_constructs.consumer_names`). A name, given or
        default, that another consumer of the app (any stack) already writes markers under
        into the same idempotency table is refused, naming both: each would take the other's
        records for duplicates.
    :param members: several consumers behind this function and mapping, each a
        :class:`~cdc_constructs.ConsumerGroupMember` (name, filters, images): more consumers
        than the stream serves readers (:mod:`~cdc_constructs.consumer_group`). The mapping
        filters on their union. Default: none, one consumer.

    The function: ``code``, ``handler``, ``function``, ``memory_size``, ``timeout``,
    ``log_retention``, ``tracing``, ``environment``, ``reserved_concurrent_executions``,
    ``log_group``, ``log_encryption_key``
    (:class:`~cdc_constructs.function_options.FunctionOptions`).

    Reading the stream: ``starting_position``, ``allow_latest_starting_position``,
    ``batch_size``, ``max_batching_window``, ``parallelization_factor``, ``tumbling_window``,
    ``retry_attempts``, ``max_record_age``, ``bisect_batch_on_error``, ``filters``,
    ``reads_images``, ``extra_reader_reason`` (a third reader of one table's stream is refused
    without it: :mod:`~cdc_constructs.stream_readers`), each documented on
    :class:`~cdc_constructs.mapping_options.StreamMappingOptions` (shared with StreamFanOut).

    Failure handling: ``on_failure`` (default: an S3 bucket that keeps each failed batch
    whole), ``on_failure_queue``, ``failed_batch_retention``, ``quarantine_queue``,
    ``encryption_key``, ``idempotency_table``, ``marker_lifetime`` (default: derived from the
    replay windows; less is refused), ``redrive``, ``removal_policy`` (default RETAIN)
    (:class:`~cdc_constructs.failure_options.FailureHandlingOptions`).

    Monitoring: ``monitoring``, ``alarm_topic``, ``dashboard``, ``iterator_age_alarm_threshold``,
    ``metrics_namespace`` (:class:`~cdc_constructs.monitoring_options.MonitoringOptions`).

    Escape hatches: :attr:`function`, :attr:`role`, :attr:`log_group`, :attr:`event_source_mapping`,
    :attr:`on_failure` (the destination: kind, ARN, bucket or queue), :attr:`on_failure_bucket`,
    :attr:`dead_letter_queue` (the on-failure queue, None unless SQS), :attr:`quarantine_queue`,
    :attr:`quarantine_bucket`, :attr:`idempotency_table`, :attr:`ledger_table`, :attr:`source_table`
    and :attr:`stream_arn` (what is consumed), :attr:`redrive` (None with ``redrive=False``),
    :attr:`monitoring` (None with ``monitoring=False``), :attr:`alarms`, :attr:`alarm_topic` (the
    topic every alarm notifies; None without monitoring and without ``alarm_topic``),
    :attr:`consumer_name`, :attr:`marker_lifetime` and :attr:`replay_windows` (its source:
    :mod:`~cdc_constructs.marker_lifetime`), :attr:`options` (props by concern).
    """

    group = GroupOfConsumers()  # no members: one consumer (KinesisConsumer keeps this)
    quarantine_bucket: s3.IBucket  # records too big for a message (_failure_resources)
    quarantine: Quarantine  # its queue and bucket, as the quarantine kind (_failure_resources)

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: SourceTable,
        stream_view_type: dynamodb.StreamViewType | None = None,
        consumer_name: str | None = None,
        members: Sequence[ConsumerGroupMember] = (),
        code: lambda_.Code | None = None,
        handler: str | None = None,
        function: lambda_.Function | None = None,
        memory_size: int | None = None,
        timeout: Duration | None = None,
        log_retention: logs.RetentionDays = defaults.LOG_RETENTION,
        tracing: lambda_.Tracing | None = None,
        environment: Mapping[str, str] | None = None,
        reserved_concurrent_executions: int | None = None,
        log_group: logs.ILogGroup | None = None,
        log_encryption_key: kms.IKey | None = None,
        starting_position: lambda_.StartingPosition = defaults.STARTING_POSITION,
        allow_latest_starting_position: bool = False,
        batch_size: int = defaults.BATCH_SIZE,
        max_batching_window: Duration | None = None,
        parallelization_factor: int = defaults.PARALLELIZATION_FACTOR,
        tumbling_window: Duration | None = None,
        retry_attempts: int = defaults.RETRY_ATTEMPTS,
        max_record_age: Duration | None = None,
        bisect_batch_on_error: bool = defaults.BISECT_BATCH_ON_ERROR,
        filters: Sequence[Mapping[str, Any]] = (),
        reads_images: Sequence[str] | None = None,
        extra_reader_reason: str | None = None,
        on_failure: lambda_.IEventSourceDlq | None = None,
        on_failure_queue: sqs.IQueue | None = None,
        failed_batch_retention: Duration | None = None,
        quarantine_queue: sqs.IQueue | None = None,
        encryption_key: kms.IKey | None = None,
        idempotency_table: IdempotencyTable | dynamodb.ITable | None = None,
        marker_lifetime: Duration | None = None,
        monitoring: bool = True,
        alarm_topic: sns.ITopic | None = None,
        dashboard: cloudwatch.Dashboard | None = None,
        iterator_age_alarm_threshold: Duration | None = None,
        metrics_namespace: str = DEFAULT_METRICS_NAMESPACE,
        redrive: bool = defaults.REDRIVE,
        removal_policy: RemovalPolicy = defaults.RECORD_REMOVAL_POLICY,
    ) -> None:
        options, self.group = _options(scope, construct_id, dict(locals()))
        super().__init__(scope, construct_id)
        self.options, self.consumer_name = options, _register_names(self, consumer_name, options)
        self.metrics_namespace = options.monitoring.metrics_namespace
        self.source_table = as_table(table)
        self.stream_arn: str = self.source_table.table_stream_arn  # type: ignore[assignment]
        self._set_failure_resources(options)
        self._make_function(options.function)
        self.event_source_mapping = _make_mapping(self, options.mapping)
        self.alarm_topic: sns.ITopic | None = options.monitoring.resolve_topic(self)
        self.redrive = _make_redrive(self, options)
        self.monitoring = _make_monitoring(self, options.monitoring)

    @property
    def runtime_consumers(self) -> list[str]:
        """The runtime metrics' ``Consumer`` dimensions: the members', else the consumer's."""
        return self.group.names or [self.consumer_name]

    @property
    def alarms(self) -> dict[str, cloudwatch.Alarm]:
        """The alarms by name (empty with ``monitoring=False``)."""
        return dict(self.monitoring.alarms) if self.monitoring else {}

    @property
    def related_alarms(self) -> dict[str, cloudwatch.Alarm]:
        """Alarms of the consumer's parts besides the monitoring's (the redrive's)."""
        return dict(self.redrive.alarms) if self.redrive else {}

    def grant_view_table(
        self, table: dynamodb.ITable, *, env_var: str | None = None, read: bool = False
    ) -> None:
        """Let the runtime write a projection's view table, and nothing more (PutItem,
        UpdateItem, DeleteItem, ConditionCheckItem: the TransactWriteItems actions).

        :param table: the view table the projection writes.
        :param env_var: an environment variable to set to the table's name. Default: none.
        :param read: also grant GetItem (a projection that reads the view). Default False.
        """
        actions = VIEW_TABLE_WRITE_ACTIONS + (VIEW_TABLE_READ_ACTIONS if read else ())
        _grant_table(self.function, table, tuple(sorted(actions)))
        if env_var:
            self.function.add_environment(env_var, table.table_name)

    def _make_function(self, options: FunctionOptions) -> None:
        variables = _runtime_environment(self, options.environment)
        self.role: iam.IRole | None
        self.log_group: logs.ILogGroup | None
        self.function: lambda_.Function
        if options.function is not None:
            self.function, self.role, self.log_group = _adopt(self, options.function, variables)
        else:
            self.role, self.log_group, self.function = make_function(
                self,
                description=f"cdc-constructs stream consumer {self.consumer_name}",
                code=options.function_code,
                handler=options.function_handler,
                layers=[ConsumerRuntimeLayer.of(self)],
                environment=variables,
                memory_size=options.memory_mb,
                timeout=options.function_timeout,
                log_retention=options.log_retention,
                invoked_by=_INVOKED_BY,
                tracing=options.tracing,
                reserved_concurrent_executions=options.reserved_concurrent_executions,
                log_group=options.log_group,
                log_encryption_key=options.log_encryption_key,
            )
        self._grant_source()
        _grant_idempotency(self)
        _grant_quarantine(self)

    def _set_failure_resources(
        self, options: ConsumerOptions, stream_retention: Duration | None = None
    ) -> None:
        self.max_record_age = options.mapping.record_age  # what failure handling waits for
        self.retry_attempts = options.mapping.retry_attempts
        target, self.quarantine_queue, tables = _failure_resources(self, options.failure)
        self.idempotency_table, self.ledger_table = tables
        self.on_failure: OnFailureTarget = target
        self.on_failure_bucket: s3.IBucket | None = target.bucket
        self.dead_letter_queue: sqs.IQueue | None = target.queue
        self.replay_windows, self.marker_lifetime = _marker_lifetime(
            self, stream_retention, options
        )

    def _grant_source(self) -> None:
        """Let the function read what it consumes: this stream (KinesisConsumer overrides it)."""
        grant_stream_read(self.function, self.stream_arn, self.source_table.encryption_key)


_INVOKED_BY = (
    "Invoked only by the stream event source mapping (batches it gives up on go to the "
    "mapping's on-failure destination, an S3 bucket by default)"
)


def _adopt(
    consumer: StreamConsumer, function: lambda_.Function, variables: Mapping[str, str]
) -> tuple[lambda_.Function, iam.IRole | None, None]:
    """An existing function as the consumer's: the runtime layer and environment added."""
    function.add_layers(ConsumerRuntimeLayer.of(consumer))
    for name, value in variables.items():
        function.add_environment(name, value)
    return function, function.role, None


def _grant_quarantine(consumer: StreamConsumer) -> None:
    """Send to the quarantine queue; put a record too big for a message into the bucket (the
    on-failure bucket's grant, PutObject on its objects, covers a shared one already)."""
    consumer.quarantine.grant_put(consumer.function)


def _grant_table(
    function: lambda_.Function, table: dynamodb.ITable, actions: Sequence[str]
) -> None:
    function.add_to_role_policy(allow(actions, [table.table_arn]))
    grant_key(function, table.encryption_key, TABLE_KEY_ACTIONS)


def _grant_idempotency(consumer: StreamConsumer) -> None:
    """The runtime's markers and claims on the idempotency table, its entries on the ledger
    table (when the idempotency table is an :class:`IdempotencyTable`, which has one)."""
    _grant_table(consumer.function, consumer.idempotency_table, IDEMPOTENCY_TABLE_ACTIONS)
    if consumer.ledger_table is not None:
        _grant_table(consumer.function, consumer.ledger_table, LEDGER_TABLE_ACTIONS)


def _marker_lifetime(
    consumer: StreamConsumer, stream_retention: Duration | None, options: ConsumerOptions
) -> tuple[ReplayWindows | None, Duration]:
    """The consumer's replay windows (``stream_retention``: a Kinesis stream's; None: DynamoDB
    Streams' 24 h) and marker lifetime (``marker_lifetime``, else the rule's
    minimum for the windows); refused when ``marker_lifetime`` is below it, or when a window
    cannot be known and no ``marker_lifetime`` is given."""
    failure = options.failure
    windows, found = replay_windows(
        consumer,
        stream_retention=stream_retention or Duration.seconds(STREAM_RETENTION_SECONDS),
        record_age=options.mapping.record_age,
        target=consumer.on_failure,
        quarantine=consumer.quarantine,
    )
    if failure.marker_lifetime is not None:
        found = []  # the user states the lifetime for the window this app cannot read
    found += check_marker_lifetime(failure.marker_lifetime, windows, options.function.environment)
    raise_if_any(f"{type(consumer).__name__} {consumer.node.id!r}", found)
    lifetime = marker_lifetime_seconds(failure.marker_lifetime, windows)
    assert lifetime is not None  # refused above otherwise
    return windows, Duration.seconds(lifetime)


def _failure_resources(
    consumer: StreamConsumer, failure: FailureHandlingOptions
) -> tuple[OnFailureTarget, sqs.IQueue, tuple[dynamodb.ITable, dynamodb.ITable | None]]:
    """The on-failure destination (``on_failure``, the older ``on_failure_queue``, else a
    :class:`FailedBatchBucket`, which keeps each failed batch whole), the quarantine queue
    (poison records, whole, with the error) and the idempotency table (pk ``id``, TTL
    ``expiration``): given, or made here; and the ledger table beside an
    :class:`IdempotencyTable` (None beside a table given as a plain ``ITable``: per-record
    markers then)."""
    if failure.on_failure is not None:
        on_failure = target_of_destination(consumer, failure.on_failure)
    elif failure.on_failure_queue is not None:
        on_failure = queue_target(failure.on_failure_queue)
    else:
        on_failure = default_target(
            consumer,
            retention=failure.failed_batch_retention,
            encryption_key=failure.encryption_key,
            removal_policy=failure.removal_policy,
        )
    consumer.quarantine = Quarantine.provision(
        consumer,
        on_failure,
        queue=failure.quarantine_queue,
        retention=failure.failed_batch_retention,
        encryption_key=failure.encryption_key,
        removal_policy=failure.removal_policy,
    )
    assert consumer.quarantine.queue is not None and consumer.quarantine.bucket is not None
    consumer.quarantine_bucket = consumer.quarantine.bucket
    given = failure.idempotency_table or IdempotencyTable(consumer, "IdempotencyTable")
    ledger = given.ledger_table if isinstance(given, IdempotencyTable) else None
    return on_failure, consumer.quarantine.queue, (as_table(given), ledger)


def _make_mapping(
    consumer: StreamConsumer, mapping: StreamMappingOptions
) -> lambda_.EventSourceMapping:
    window = mapping.batching_window if mapping.batching_window_seconds else None
    tumbling = mapping.tumbling_window_seconds
    _answer_windows(consumer.function, tumbling)
    made = consumer.function.add_event_source_mapping(
        "StreamMapping",
        event_source_arn=consumer.stream_arn,
        starting_position=mapping.starting_position,
        batch_size=mapping.batch_size,
        max_batching_window=window,
        parallelization_factor=mapping.parallelization_factor,
        tumbling_window=Duration.seconds(tumbling) if tumbling else None,
        retry_attempts=mapping.retry_attempts,
        max_record_age=mapping.record_age,
        bisect_batch_on_error=mapping.bisect_batch_on_error,
        report_batch_item_failures=defaults.REPORT_BATCH_ITEM_FAILURES,
        on_failure=LeastPrivilegeDestination(consumer.on_failure),
        # A raw dict here would synthesize as `{}`: each pattern goes through
        # FilterCriteria.filter, which renders it as {"Pattern": "<json>"}.
        filters=[lambda_.FilterCriteria.filter(p) for p in mapping.filter_patterns] or None,
        metrics_config=lambda_.MetricsConfig(metrics=[lambda_.MetricType.EVENT_COUNT]),
    )
    table = getattr(consumer, "source_table", None)  # None: a Kinesis stream
    if table is not None:
        reason = mapping.extra_reader_reason
        StreamReaders.of(consumer).add(table, consumer.node.path, made, reason)
    return made


UNMEASURED_AGE_WARNING = "cdc:FailureAgeUnmeasured"
"""The synthesis warning on a consumer without a redrive function whose failed batches' age only
that function's scheduled check measures (an S3 bucket)."""


def _make_redrive(consumer: StreamConsumer, options: ConsumerOptions) -> StreamRedrive | None:
    if not options.failure.redrive:
        if getattr(consumer.on_failure.failure_kind, "age_checked_by_redrive", False):
            Annotations.of(consumer).add_warning_v2(
                UNMEASURED_AGE_WARNING,
                f"{consumer.node.id}: redrive=False, so nothing measures how long failed "
                "batches wait in the bucket (S3 publishes no age; the redrive function's hourly "
                "check does) and its FailedBatchAge alarm never fires: a batch is deleted by "
                "the bucket's lifecycle with no second alarm. Invoke a check of your own that "
                "puts CdcConstructs/OldestFailedBatchAge, or keep the redrive function",
            )
        return None
    return StreamRedrive(
        consumer,
        "Redrive",
        consumer_function=consumer.function,
        consumer_name=consumer.consumer_name,
        stream_arn=consumer.stream_arn,
        on_failure=consumer.on_failure,
        event_source_mapping_id=consumer.event_source_mapping.event_source_mapping_id,
        quarantine_queue=consumer.quarantine_queue,
        quarantine_bucket=consumer.quarantine_bucket,
        layer=ConsumerRuntimeLayer.of(consumer),
        consumer_timeout=options.function.consumer_timeout,
        filters=options.mapping.filter_patterns,
        members=consumer.group.specs(),
        marker_lifetime=consumer.marker_lifetime,
        idempotency_table=consumer.idempotency_table,
        log_retention=options.function.log_retention,
        log_encryption_key=options.function.log_encryption_key,
        metrics_namespace=consumer.metrics_namespace,
        alarm_topic=consumer.alarm_topic,  # given once: its alarm is never re-wired
    )


def _make_monitoring(
    consumer: StreamConsumer, options: MonitoringOptions
) -> StreamConsumerMonitoring | None:
    if not options.monitoring:
        return None
    return StreamConsumerMonitoring(
        consumer,
        "Monitoring",
        consumer=consumer,
        alarm_topic=consumer.alarm_topic,
        dashboard=options.dashboard,
        iterator_age_threshold=options.iterator_age_alarm_threshold,
    )


def _answer_windows(function: lambda_.Function, window_seconds: int) -> None:
    """Every answer to a windowed event must carry ``state``, or Lambda counts the invocation
    as failed: with a window, the function's handler becomes the runtime's window handler,
    which runs the function's own handler (named in its environment) and adds ``state`` when
    the answer has none (``cdc_consumer.window_handler``), whatever the handler is built on."""
    resource: lambda_.CfnFunction = function.node.default_child  # type: ignore[assignment]
    own = resource.handler
    if not window_seconds or own is None or own == WINDOW_HANDLER:
        return
    resource.handler = WINDOW_HANDLER
    function.add_environment(USER_HANDLER_ENV, own)


def _runtime_environment(
    consumer: StreamConsumer, extra: Mapping[str, str] | None
) -> dict[str, str]:
    """What the runtime reads (names in :mod:`cdc_consumer.environment_variables`), then
    ``extra``."""
    group = consumer.group.specs()
    return {
        CONSUMER_NAME_ENV: consumer.consumer_name,
        IDEMPOTENCY_TABLE_ENV: consumer.idempotency_table.table_name,
        **({LEDGER_TABLE_ENV: consumer.ledger_table.table_name} if consumer.ledger_table else {}),
        QUARANTINE_QUEUE_ENV: consumer.quarantine_queue.queue_url,
        QUARANTINE_BUCKET_ENV: consumer.quarantine_bucket.bucket_name,
        METRICS_NAMESPACE_ENV: consumer.metrics_namespace,
        **({CONSUMER_GROUP_ENV: GroupMemberSpec.encode(group)} if group else {}),
        **(extra or {}),
        MARKER_TTL_ENV: str(int(consumer.marker_lifetime.to_seconds())),
    }


def _options(
    scope: Construct, construct_id: str, props: dict[str, Any]
) -> tuple[ConsumerOptions, GroupOfConsumers]:
    """The props by concern (with ``members``: their filters and images), checked."""
    group = GroupOfConsumers.of(props["members"])
    filters, images = (
        group.mapping_filters(props["filters"]),
        group.reads_images(props["reads_images"]),
    )
    replication = Replication.of(props["table"])
    refused: list[Problem] = []
    if replication is not None:  # a table with replicas: docs/global-tables.md
        refused = replication.problems(filters)
        replication.warn(scope, construct_id, filters)
        variables = replication.environment(props["filters"], group=bool(group.members))
        filters = replication.mapping_filters(filters)
        props = {**props, "environment": {**variables, **(props["environment"] or {})}}
    options = ConsumerOptions.from_props({**props, "filters": filters, "reads_images": images})
    _validate(scope, construct_id, props, options, refused)
    return options, group


def _register_names(consumer: StreamConsumer, name: str | None, options: ConsumerOptions) -> str:
    """The consumer's name (its construct id when ``name`` is None); the members' are reserved
    too: each is a namespace of markers in the idempotency table."""
    names, table = ConsumerNames.of(consumer), options.failure.idempotency_table
    for member in consumer.group.names:
        names.register(consumer, member, table, member=True)
    return names.register(consumer, name, table)


def _validate(
    scope: Construct,
    construct_id: str,
    props: Mapping[str, Any],
    options: ConsumerOptions,
    refused: Sequence[Problem] = (),
) -> None:
    """Raise one error naming every invalid prop, before anything is made. ``props``: the
    StreamConsumer's as given; ``options``: grouped, with the members' filters and images;
    ``refused``: the filters a table with replicas refuses."""
    table = props["table"]
    table_problems = check_source_table(table)
    view_type = view_type_name(props["stream_view_type"]) or (
        None if table_problems else stream_view_type_of(table)
    )
    group = GroupOfConsumers.of(props["members"])
    found = [
        *refused,
        *table_problems,
        *group.problems(props["members"], props["filters"], props["reads_images"], view_type),
    ]
    idempotency_table = options.failure.idempotency_table
    found += check_consumer_name(scope, construct_id, props["consumer_name"], idempotency_table)
    for name in group.names:  # group.problems checked their form
        found += ConsumerNames.of(scope).problems(
            scope, construct_id, name, idempotency_table, member=True
        )
    if not table_problems:
        path = f"{scope.node.path}/{construct_id}"
        reason = options.mapping.extra_reader_reason
        found += StreamReaders.of(scope).problems(as_table(table), path, reason)
    raise_if_any(f"StreamConsumer {construct_id!r}", found + options.problems(view_type))
