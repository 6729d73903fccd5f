"""The consumer core: what every consumer of a table's changes is made of, over its route.

StreamConsumer (the table's DynamoDB stream) and KinesisConsumer (the Kinesis data stream the
table streams into) are thin compositions: each checks its own props, picks its route
(:mod:`cdc_constructs.routes`) and makes a :class:`ConsumerCore`, which makes the same parts
in the same order for both - failure handling (the on-failure destination as its failure kind
knows it, the quarantine, the idempotency and ledger tables, the marker lifetime), the function
with the runtime layer and its environment, the event source mapping, the redrive, the route's
own alarms, the monitoring - asking the route whatever depends on the source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Annotations, Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
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
from cdc_consumer.replay_windows import ReplayWindows
from cdc_consumer.service_limits import STREAM_RETENTION_SECONDS
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.consumer_group import GroupOfConsumers
from cdc_constructs.consumer_names import ConsumerNames
from cdc_constructs.consumer_options import ConsumerOptions
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
)
from cdc_constructs.redrive import StreamRedrive
from cdc_constructs.routes.route import Route
from cdc_constructs.runtime_layer import ConsumerRuntimeLayer
from cdc_constructs.source_table import as_table
from cdc_constructs.validation import raise_if_any

__all__ = ["UNMEASURED_AGE_WARNING", "ConsumerCore"]


class ConsumerCore(Construct):
    """The parts every consumer is made of, over its :attr:`route` (module docstring).
    :class:`~cdc_constructs.StreamConsumer` and :class:`~cdc_constructs.KinesisConsumer` check
    their props, then make it; a source defined outside the library is given to it the same
    way. Escape hatches: StreamConsumer's, on any route."""

    group = GroupOfConsumers()  # no members: one consumer
    quarantine_bucket: s3.IBucket  # records too big for a message (_failure_resources)
    quarantine: Quarantine  # its queue and bucket, as the quarantine kind (_failure_resources)

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        route: Route,
        options: ConsumerOptions,
        consumer_name: str | None = None,
    ) -> None:
        """Make the consumer's parts, in one order whatever the route.

        :param route: the source of the changes (a :class:`~cdc_constructs.routes.Route`).
        :param options: the consumer's props by concern, checked already (the compositions
            check them with what they know of their source first).
        :param consumer_name: as StreamConsumer's. Default: the construct id.
        """
        super().__init__(scope, construct_id)
        self.options, self.consumer_name = options, _register_names(self, consumer_name, options)
        self.metrics_namespace = options.monitoring.metrics_namespace
        self.route: Route = route
        """The source of the consumer's changes (:mod:`cdc_constructs.routes`)."""
        route.attach(self)
        self.stream_arn: str = route.source_arn
        """What the mapping reads."""
        self._set_failure_resources(options, route.retention)
        self._make_function(options.function)
        self.event_source_mapping = _make_mapping(self, options.mapping)
        self.alarm_topic: sns.ITopic | None = options.monitoring.resolve_topic(self)
        self.redrive = _make_redrive(self, options)
        self._route_alarms = route.add_alarms(self, options, self.alarm_topic)
        self.monitoring = _make_monitoring(self, route.monitoring_options(options))

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
        """Alarms of the consumer's parts besides the monitoring's: the redrive's, and the
        route's on its source (a table's replication to a Kinesis stream)."""
        redrive = dict(self.redrive.alarms) if self.redrive else {}
        return redrive | dict(self._route_alarms)

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
        self.route.grant_read(self.function)
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


_INVOKED_BY = (
    "Invoked only by the stream event source mapping (batches it gives up on go to the "
    "mapping's on-failure destination, an S3 bucket by default)"
)


def _adopt(
    consumer: ConsumerCore, function: lambda_.Function, variables: Mapping[str, str]
) -> tuple[lambda_.Function, iam.IRole | None, None]:
    """An existing function as the consumer's: the runtime layer and environment added."""
    function.add_layers(ConsumerRuntimeLayer.of(consumer))
    for name, value in variables.items():
        function.add_environment(name, value)
    return function, function.role, None


def _grant_quarantine(consumer: ConsumerCore) -> None:
    """Send to the quarantine queue; put a record too big for a message into the bucket (the
    on-failure bucket's grant, PutObject on its objects, covers a shared one already)."""
    consumer.quarantine.grant_put(consumer.function)


def _grant_table(
    function: lambda_.Function, table: dynamodb.ITable, actions: Sequence[str]
) -> None:
    function.add_to_role_policy(allow(actions, [table.table_arn]))
    grant_key(function, table.encryption_key, TABLE_KEY_ACTIONS)


def _grant_idempotency(consumer: ConsumerCore) -> None:
    """The runtime's markers and claims on the idempotency table, its entries on the ledger
    table (when the idempotency table is an :class:`IdempotencyTable`, which has one)."""
    _grant_table(consumer.function, consumer.idempotency_table, IDEMPOTENCY_TABLE_ACTIONS)
    if consumer.ledger_table is not None:
        _grant_table(consumer.function, consumer.ledger_table, LEDGER_TABLE_ACTIONS)


def _marker_lifetime(
    consumer: ConsumerCore, stream_retention: Duration | None, options: ConsumerOptions
) -> tuple[ReplayWindows | None, Duration]:
    """The consumer's replay windows (``stream_retention``: its route's; None: DynamoDB
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
    consumer: ConsumerCore, failure: FailureHandlingOptions
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
    consumer: ConsumerCore, mapping: StreamMappingOptions
) -> lambda_.EventSourceMapping:
    """The event source mapping: the route's source, the mapping props, the destination."""
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
    consumer.route.mapping_added(consumer, made, consumer.options)
    return made


UNMEASURED_AGE_WARNING = "cdc:FailureAgeUnmeasured"
"""The synthesis warning on a consumer without a redrive function whose failed batches' age only
that function's scheduled check measures (an S3 bucket)."""


def _make_redrive(consumer: ConsumerCore, options: ConsumerOptions) -> StreamRedrive | None:
    """The consumer's redrive function over its route (None with ``redrive=False``, and a
    warning when its destination's age is then measured by nothing)."""
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
    return consumer.route.make_redrive(
        consumer,
        "Redrive",
        consumer_function=consumer.function,
        consumer_name=consumer.consumer_name,
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
    consumer: ConsumerCore, options: MonitoringOptions
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


def _runtime_environment(consumer: ConsumerCore, extra: Mapping[str, str] | None) -> dict[str, str]:
    """What the runtime reads (its names: :mod:`cdc_consumer.environment_variables`), then
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


def _register_names(consumer: ConsumerCore, name: str | None, options: ConsumerOptions) -> str:
    """The consumer's name (its construct id when ``name`` is None); the members' are reserved
    too: each is a namespace of markers in the idempotency table."""
    names, table = ConsumerNames.of(consumer), options.failure.idempotency_table
    for member in consumer.group.names:
        names.register(consumer, member, table, member=True)
    return names.register(consumer, name, table)
