"""StreamConsumer: a Lambda function consuming a DynamoDB stream, with safe defaults."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from cdc_consumer.metric_names import DEFAULT_METRICS_NAMESPACE
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.consumer_core import ConsumerCore
from cdc_constructs.consumer_group import ConsumerGroupMember, GroupOfConsumers
from cdc_constructs.consumer_names import ConsumerNames, check_consumer_name
from cdc_constructs.consumer_options import ConsumerOptions
from cdc_constructs.exceptions import Problem
from cdc_constructs.idempotency_table import IdempotencyTable
from cdc_constructs.replication import Replication
from cdc_constructs.routes.dynamodb_stream import DynamoDBStreamRoute
from cdc_constructs.source_table import (
    SourceTable,
    as_table,
    check_source_table,
    stream_view_type_of,
)
from cdc_constructs.stream_readers import StreamReaders
from cdc_constructs.validation import raise_if_any, view_type_name

__all__ = ["StreamConsumer"]


class StreamConsumer(ConsumerCore):
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

    source_table: dynamodb.ITable
    """The table whose DynamoDB stream it reads (set by its route)."""

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
        route = DynamoDBStreamRoute.of(as_table(table))
        super().__init__(
            scope, construct_id, route=route, options=options, consumer_name=consumer_name
        )


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
        props, filters, refused = replication.consumer_props(scope, construct_id, props, filters)
    options = ConsumerOptions.from_props({**props, "filters": filters, "reads_images": images})
    _validate(scope, construct_id, props, options, refused)
    return options, group


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
