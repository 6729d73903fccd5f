"""StreamPipe: an EventBridge Pipe from a DynamoDB table's stream to an event bus, with a
dead-letter queue and alarms: the base of :class:`~cdc_constructs.StreamFanOut` (change
events) and :class:`~cdc_constructs.OutboxPublisher` (outbox events).

What differs between the two is the events: which records leave (filter patterns), what each
event looks like (the input template) and its detail-type. A subclass hands the base a
:class:`PipeEvents` for that; reading the stream (:class:`StreamMappingOptions`), the role,
the dead-letter queue, the log group and the alarms are the same.

Why the L1 ``aws_pipes.CfnPipe`` and not ``@aws-cdk/aws-pipes-alpha``: the alpha modules (pipes,
sources, targets) are experimental, may change in any release, and version in lockstep with
aws-cdk-lib, so a library depending on them would pin its users' aws-cdk-lib exactly. The L1 is
stable, and this construct adds what the alpha would (grants, log wiring) in a few explicit lines.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from cdc_consumer.service_limits import STREAM_RETENTION_SECONDS
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.acknowledge import acknowledge
from cdc_constructs.alarm_topic import AlarmTopic
from cdc_constructs.alarms import SnsAlarmAction, alarm_on_any
from cdc_constructs.exceptions import FanOutConfigurationError, Problem
from cdc_constructs.failure_age import age_alarm, oldest_message_age, pointer_window
from cdc_constructs.function import make_log_group
from cdc_constructs.mapping_options import StreamMappingOptions
from cdc_constructs.permissions import (
    LIST_STREAMS_REASON,
    LOG_WRITE_ACTIONS,
    QUEUE_SEND_ACTIONS,
    QUEUE_SEND_KEY_ACTIONS,
    STREAM_KEY_ACTIONS,
    STREAM_LIST_ACTIONS,
    STREAM_READ_ACTIONS,
    allow,
)
from cdc_constructs.queues import dead_letter_queue
from cdc_constructs.replication import Replication
from cdc_constructs.source_table import (
    SourceTable,
    as_table,
    check_source_table,
    stream_view_type_of,
)
from cdc_constructs.stream_readers import StreamReaders
from cdc_constructs.validation import check_instance, check_removal_policy, raise_if_any

__all__ = [
    "PIPES_METRIC_NAMESPACE",
    "PIPE_FAILURE_METRICS",
    "STARTING_POSITION",
    "PipeEvents",
    "StreamPipe",
]

STARTING_POSITION: str = defaults.STARTING_POSITION.value
"""Fixed, not a prop: LATEST skips whatever is written while the pipe is created or updated
(defaults.STARTING_POSITION, the Lambda consumers' default, for the same reason)."""

PIPE_FAILURE_METRICS = ("ExecutionFailed", "ExecutionPartiallyFailed", "ExecutionTimeout")
"""Pipe metrics (namespace AWS/EventBridge/Pipes, dimension PipeName) that mean events were not
delivered; each alarms on Sum >= 1."""
PIPES_METRIC_NAMESPACE = "AWS/EventBridge/Pipes"


class PipeEvents(Protocol):
    """Which records a pipe sends and what each event looks like."""

    @property
    def filter_patterns(self) -> list[dict[str, Any]]:
        """Patterns the events add to the mapping's filters (e.g. the outbox's key prefix)."""

    @property
    def input_template(self) -> str:
        """The Pipes input template: the event's ``detail``."""

    @property
    def event_detail_type(self) -> str:
        """A fixed detail-type, or a JSON path into the stream record."""

    def problems(self, stream_view_type: str | None) -> list[Problem]:
        """Every invalid prop of the events; ``stream_view_type`` None when unknown."""


class StreamPipe(Construct):
    """The pipe, its role, dead-letter queue, log group and alarms (see the module docstring).

    Subclasses validate their own props into a :class:`PipeEvents` (``pipe_events``) and
    pass it here with the props every pipe has (documented, with their defaults, on
    :class:`~cdc_constructs.StreamFanOut`); the base reads the stream with them
    (:class:`StreamMappingOptions`).

    Attributes: ``pipe``, ``role``, ``policy``, ``event_bus``, ``dead_letter_queue``,
    ``log_group``, ``alarm_topic``, ``alarms`` (by name), ``input_template``,
    ``filter_patterns``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: SourceTable,
        source: str,
        pipe_events: PipeEvents,
        event_bus: events.IEventBus | None,
        filters: Sequence[Mapping[str, Any]] | None,
        batch_size: int,
        max_batching_window: Duration | None,
        retry_attempts: int,
        max_record_age: Duration | None,
        parallelization_factor: int,
        extra_reader_reason: str | None,
        dead_letter_queue: sqs.IQueue | None,
        alarm_topic: sns.ITopic | None,
        log_level: str,
        log_retention: logs.RetentionDays,
        log_encryption_key: kms.IKey | None = None,
        removal_policy: RemovalPolicy = defaults.RECORD_REMOVAL_POLICY,
        problems: Sequence[Problem] = (),
    ) -> None:
        mapping = StreamMappingOptions(
            batch_size=batch_size,
            max_batching_window=max_batching_window,
            retry_attempts=retry_attempts,
            max_record_age=max_record_age,
            parallelization_factor=parallelization_factor,
            extra_reader_reason=extra_reader_reason,
            filters=filters,
        )
        found = [*problems, *_check_source(source), *_check_log_level(log_level)]
        found += _retention_problems(log_retention, log_encryption_key, removal_policy)
        found += _reading_problems(scope, construct_id, table, mapping, pipe_events)
        name = f"{type(self).__name__} {construct_id!r}"
        raise_if_any(name, found, FanOutConfigurationError)

        super().__init__(scope, construct_id)
        source_table = as_table(table)
        self.input_template = pipe_events.input_template
        self.filter_patterns = mapping.filter_patterns + pipe_events.filter_patterns
        self.event_bus = event_bus or events.EventBus(self, "Bus")
        self.dead_letter_queue: sqs.IQueue = dead_letter_queue or _dead_letter_queue(
            self, removal_policy
        )
        self.log_group = make_log_group(self, log_retention, log_encryption_key, "Logs")
        self.role, self.policy = self._make_role(source_table)
        self.pipe = self._make_pipe(
            source_table, source, pipe_events.event_detail_type, mapping, log_level
        )
        self.pipe.node.add_dependency(self.policy)
        _count_reader(self, table, mapping, name)
        self.alarm_topic: sns.ITopic = alarm_topic or AlarmTopic(self, "AlarmTopic").topic
        self.alarms: dict[str, cloudwatch.Alarm] = self._make_alarms(mapping)
        """The alarms by name: :data:`PIPE_FAILURE_METRICS`, ``DeadLetterQueue(Age)``."""

    def _make_pipe(
        self,
        table: dynamodb.ITable,
        source: str,
        detail_type: str,
        mapping: StreamMappingOptions,
        log_level: str,
    ) -> pipes.CfnPipe:
        stream_arn: str = table.table_stream_arn  # type: ignore[assignment]
        filters = [
            pipes.CfnPipe.FilterProperty(pattern=json.dumps(p)) for p in self.filter_patterns
        ]
        return pipes.CfnPipe(
            self,
            "Pipe",
            role_arn=self.role.role_arn,
            source=stream_arn,
            source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
                dynamo_db_stream_parameters=self._stream_parameters(mapping),
                filter_criteria=pipes.CfnPipe.FilterCriteriaProperty(filters=filters)
                if filters
                else None,
            ),
            target=self.event_bus.event_bus_arn,
            target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
                input_template=self.input_template,
                event_bridge_event_bus_parameters=pipes.CfnPipe.PipeTargetEventBridgeEventBusParametersProperty(
                    source=source, detail_type=detail_type, resources=[table.table_arn]
                ),
            ),
            log_configuration=pipes.CfnPipe.PipeLogConfigurationProperty(
                level=log_level,
                cloudwatch_logs_log_destination=pipes.CfnPipe.CloudwatchLogsLogDestinationProperty(
                    log_group_arn=self.log_group.log_group_arn
                ),
            ),
            description=f"Change stream of {table.node.path} to {self.event_bus.node.path}",
        )

    def _stream_parameters(
        self, mapping: StreamMappingOptions
    ) -> pipes.CfnPipe.PipeSourceDynamoDBStreamParametersProperty:
        parameters: dict[str, Any] = {
            "starting_position": STARTING_POSITION,
            "batch_size": mapping.batch_size,
            "maximum_retry_attempts": mapping.retry_attempts,
            "maximum_record_age_in_seconds": mapping.record_age_seconds,
            "on_partial_batch_item_failure": "AUTOMATIC_BISECT",
            "parallelization_factor": mapping.parallelization_factor,
            "dead_letter_config": pipes.CfnPipe.DeadLetterConfigProperty(
                arn=self.dead_letter_queue.queue_arn
            ),
        }
        if mapping.batching_window_seconds:
            parameters["maximum_batching_window_in_seconds"] = mapping.batching_window_seconds
        return pipes.CfnPipe.PipeSourceDynamoDBStreamParametersProperty(**parameters)

    def _make_role(self, table: dynamodb.ITable) -> tuple[iam.Role, iam.Policy]:
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal(
                "pipes.amazonaws.com",
                # Only pipes of this account may assume the role (confused-deputy guard).
                conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}},
            ),
            description="EventBridge Pipe: read one table stream, put events on one bus",
        )
        stream_arn: str = table.table_stream_arn  # type: ignore[assignment]
        statements = [
            allow(STREAM_READ_ACTIONS, [stream_arn], sid="ReadThisStream"),
            allow(STREAM_LIST_ACTIONS, ["*"], sid="ListStreamsNoResourceLevelPermission"),
            allow(["events:PutEvents"], [self.event_bus.event_bus_arn], sid="PutEventsOnThisBus"),
            allow(
                QUEUE_SEND_ACTIONS,
                [self.dead_letter_queue.queue_arn],
                sid="SendToTheDeadLetterQueue",
            ),
            allow(LOG_WRITE_ACTIONS, [self.log_group.log_group_arn], sid="WriteThePipeLogs"),
        ]
        if table.encryption_key is not None:
            statements.append(
                allow(STREAM_KEY_ACTIONS, [table.encryption_key.key_arn], sid="DecryptTheStream")
            )
        queue_key = self.dead_letter_queue.encryption_master_key
        if queue_key is not None:
            statements.append(
                allow(QUEUE_SEND_KEY_ACTIONS, [queue_key.key_arn], sid="EncryptDeadLetters")
            )
        # An explicit policy (not the role's default one) so the pipe can depend on it: the pipe
        # must not start reading before it may deliver.
        policy = iam.Policy(self, "Policy", statements=statements, roles=[role])
        acknowledge(policy, "AwsSolutions-IAM5[Resource::*]", LIST_STREAMS_REASON)
        return role, policy

    def _make_alarms(self, mapping: StreamMappingOptions) -> dict[str, cloudwatch.Alarm]:
        period = Duration.seconds(defaults.ALARM_PERIOD_SECONDS)
        alarms = {
            metric_name: alarm_on_any(
                self,
                f"{metric_name}Alarm",
                cloudwatch.Metric(
                    namespace=PIPES_METRIC_NAMESPACE,
                    metric_name=metric_name,
                    dimensions_map={"PipeName": self.pipe.ref},
                    statistic=cloudwatch.Stats.SUM,
                    period=period,
                ),
                description=f"The fan-out pipe reported {metric_name}: events may be late or "
                "in the dead-letter queue.",
                topic=self.alarm_topic,
            )
            for metric_name in PIPE_FAILURE_METRICS
        }
        alarms["DeadLetterQueue"] = alarm_on_any(
            self,
            "DeadLetterQueueAlarm",
            self.dead_letter_queue.metric_approximate_number_of_messages_visible(
                statistic=cloudwatch.Stats.MAXIMUM, period=period
            ),
            description=_DEAD_LETTER_ALARM_DESCRIPTION,
            topic=self.alarm_topic,
        )
        alarms["DeadLetterQueueAge"] = _dead_letter_age_alarm(self, mapping)
        return alarms


_DEAD_LETTER_ALARM_DESCRIPTION = (
    "The fan-out pipe could not deliver a batch. Its dead-letter message is a pointer (shard and "
    "sequence range), not the records: the table's stream holds them only 24 hours after their "
    "write, then they are gone (the queue keeps the pointer 14 days, the table only each item's "
    "latest state). Read them back from the stream and deliver them within those 24 hours "
    "(docs/operations.md). For failures kept whole longer, consume the stream with a "
    "StreamConsumer: its failed-batch bucket keeps each batch 14 days."
)
"""What the pipe's DeadLetterQueue alarm says (it fires at the first message)."""


def _dead_letter_age_alarm(pipe: StreamPipe, mapping: StreamMappingOptions) -> cloudwatch.Alarm:
    """The age of the oldest dead-letter message, at half the time the stream still holds the
    records it points at (:mod:`cdc_constructs.failure_age`)."""
    return age_alarm(
        pipe,
        "DeadLetterQueueAgeAlarm",
        oldest_message_age(pipe.dead_letter_queue),
        window_seconds=pointer_window(STREAM_RETENTION_SECONDS, mapping.record_age_seconds),
        what="A batch the fan-out pipe could not deliver (a pointer into the stream)",
        ends="the stream trims its records",
        action=SnsAlarmAction(pipe.alarm_topic),
    )


def _count_reader(
    pipe: StreamPipe, table: SourceTable, mapping: StreamMappingOptions, name: str
) -> None:
    """Count ``pipe`` as a reader of ``table``'s stream; on a table with replicas, warn of a
    filter on the TTL identity (a pipe cannot tell a replicated expiry)."""
    readers = StreamReaders.of(pipe)
    readers.add(as_table(table), pipe.node.path, pipe.pipe, mapping.extra_reader_reason)
    replication = Replication.of(table)
    if replication is not None:  # docs/global-tables.md
        replication.warn_pipe(pipe, name, pipe.filter_patterns)


def _retention_problems(
    log_retention: Any, log_encryption_key: Any, removal_policy: Any
) -> list[Problem]:
    """What the pipe keeps, and how: its logs, and its dead-letter queue past the stack."""
    found = check_instance(
        "log_retention", log_retention, logs.RetentionDays, "a logs.RetentionDays"
    )
    if log_encryption_key is not None and not hasattr(log_encryption_key, "key_arn"):
        key = "a kms.IKey (a kms.Key, or kms.Key.from_key_arn(...))"
        found.append(Problem("log_encryption_key", log_encryption_key, key))
    return found + check_removal_policy(removal_policy)


def _reading_problems(
    scope: Construct,
    construct_id: str,
    table: SourceTable,
    mapping: StreamMappingOptions,
    pipe_events: PipeEvents,
) -> list[Problem]:
    """Every problem with how the pipe reads its table's stream: the mapping's settings, the
    table, what the events read of it, and the stream's readers."""
    table_problems = check_source_table(table)
    view_type = None if table_problems else stream_view_type_of(table)
    found = mapping.problems(view_type, lambda_settings=False)
    found += table_problems + pipe_events.problems(view_type)
    replication = None if table_problems else Replication.of(table)
    if replication is not None:  # docs/global-tables.md
        found += replication.pipe_problems(mapping.filter_patterns)
    if not table_problems:
        path, reason = f"{scope.node.path}/{construct_id}", mapping.extra_reader_reason
        found += StreamReaders.of(scope).problems(as_table(table), path, reason)
    return found


def _dead_letter_queue(scope: Construct, removal_policy: RemovalPolicy) -> sqs.Queue:
    return dead_letter_queue(
        scope,
        "DeadLetterQueue",
        purpose="the pipe's DeadLetterConfig: the batches it could not deliver, alarmed on "
        ">= 1 message",
        retention_days=defaults.ON_FAILURE_QUEUE_RETENTION_DAYS,
        removal_policy=removal_policy,
    )


def _check_source(source: object) -> list[Problem]:
    if not isinstance(source, str) or not source.strip():
        return [Problem("source", source, 'the events\' source, e.g. "com.example.app"')]
    if len(source) > defaults.MAX_SOURCE_LENGTH:
        return [
            Problem(
                "source",
                f"{len(source)} characters",
                f"at most {defaults.MAX_SOURCE_LENGTH} characters (EventBridge's limit)",
            )
        ]
    if source.startswith("aws."):
        return [Problem("source", source, "a source not starting with 'aws.' (reserved by AWS)")]
    return []


def _check_log_level(log_level: object) -> list[Problem]:
    if log_level in defaults.PIPE_LOG_LEVELS:
        return []
    return [Problem("log_level", log_level, f"one of {', '.join(defaults.PIPE_LOG_LEVELS)}")]


def check_template_length(template: str) -> list[Problem]:
    """A pipe's input template within Pipes' limit."""
    if len(template) <= defaults.MAX_INPUT_TEMPLATE_LENGTH:
        return []
    return [
        Problem(
            "key_attributes/new_image_attributes/old_image_attributes",
            f"an input template of {len(template)} characters",
            f"at most {defaults.MAX_INPUT_TEMPLATE_LENGTH} characters (Pipes' limit): "
            "declare fewer attributes",
        )
    ]
