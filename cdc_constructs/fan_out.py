"""StreamFanOut: a table's change stream, as clean domain events on an EventBridge bus.

An EventBridge Pipe reads the DynamoDB stream (filtered), turns each record into a domain event
and puts it on an event bus; rules on the bus fan the events out. The pipe carries the same
safety settings as a Lambda consumer (docs/design.md §1): start at TRIM_HORIZON, finite retries and
record age, bisect on partial failure, a dead-letter queue for what still fails, and alarms.

With ``outbox_key_prefix`` it is the publishing half of the transactional outbox
(``cdc_consumer.outbox``): only INSERTs of outbox items leave, as events whose detail-type is
the outbox item's event type.

Why the L1 ``aws_pipes.CfnPipe`` and not ``@aws-cdk/aws-pipes-alpha``: the alpha modules (pipes,
sources, targets) are experimental, may change in any release, and version in lockstep with
aws-cdk-lib, so a library depending on them would pin its users' aws-cdk-lib exactly. The L1 is
stable, and this construct adds what the alpha would (grants, log wiring) in a few explicit lines.

Why an input template and not an enrichment Lambda (Pipes templates cannot deserialize DynamoDB
JSON generically, a Lambda with boto3's TypeDeserializer could):

- nothing runs in the delivery path but Pipes itself: an enrichment function adds a stage with
  its own cold starts, throttles, timeouts and code to operate, on every record;
- an event is a public contract, not a copy of a row: declaring the exported attributes keeps
  internal ones (TTL, GSI keys, bookkeeping) off the bus and makes schema changes deliberate;
- numbers stay exact: DynamoDB numbers have 38 digits, a JSON number parsed as a float does
  not; the template passes DynamoDB's decimal string through unchanged.

The cost: only top-level S, N (as a string) and BOOL attributes can be exposed, and each one
declared for an image must be present in that image (Pipes cannot branch on absence). Lists,
maps and sets need a payload built by the writer (the outbox carries JSON text) or a consumer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.alarm_topic import AlarmTopic
from cdc_constructs.alarms import alarm_on_any
from cdc_constructs.exceptions import FanOutConfigurationError, Problem
from cdc_constructs.permissions import (
    LOG_WRITE_ACTIONS,
    QUEUE_SEND_ACTIONS,
    QUEUE_SEND_KEY_ACTIONS,
    STREAM_KEY_ACTIONS,
    STREAM_READ_ACTIONS,
    allow,
)
from cdc_constructs.queues import dead_letter_queue
from cdc_constructs.source_table import (
    UNKNOWN_VIEW_TYPE,
    SourceTable,
    as_table,
    check_source_table,
    stream_view_type_of,
)
from cdc_constructs.validation import (
    IMAGES_BY_VIEW_TYPE,
    check_batch_size,
    check_filters,
    check_max_batching_window,
    check_max_record_age,
    check_parallelization_factor,
    check_retry_attempts,
    raise_if_any,
    seconds,
)

__all__ = [
    "OUTBOX_EVENT_ID_ATTRIBUTE",
    "OUTBOX_EVENT_TYPE_ATTRIBUTE",
    "OUTBOX_OCCURRED_AT_ATTRIBUTE",
    "OUTBOX_PAYLOAD_ATTRIBUTE",
    "FanOutConfigurationError",
    "StreamFanOut",
]

STARTING_POSITION: str = defaults.STARTING_POSITION.value
"""Fixed, not a prop: LATEST skips whatever is written while the pipe is created or updated
(defaults.STARTING_POSITION, the Lambda consumers' default, for the same reason)."""

PIPE_FAILURE_METRICS = ("ExecutionFailed", "ExecutionPartiallyFailed", "ExecutionTimeout")
"""Pipe metrics (namespace AWS/EventBridge/Pipes, dimension PipeName) that mean events were not
delivered; each alarms on Sum >= 1."""
PIPES_METRIC_NAMESPACE = "AWS/EventBridge/Pipes"
ATTRIBUTE_TYPES = ("S", "N", "BOOL")
"""Attribute types a Pipes input template can unwrap."""

# ---- The outbox item's attributes (must equal lambda_src/cdc_consumer/outbox.py; a test checks)

OUTBOX_EVENT_ID_ATTRIBUTE = "eventId"
OUTBOX_EVENT_TYPE_ATTRIBUTE = "eventType"
OUTBOX_PAYLOAD_ATTRIBUTE = "payload"
OUTBOX_OCCURRED_AT_ATTRIBUTE = "occurredAt"

# Pipes' JSON path subset: dot notation over alphanumerics, dashes and underscores.
_PATH_SEGMENT = re.compile(r"^[A-Za-z0-9_-]+$")
_JSON_PATH = re.compile(r"^\$(\.[A-Za-z0-9_-]+)+$")


class StreamFanOut(Construct):
    """An EventBridge Pipe from a DynamoDB table's stream to an event bus, with a DLQ and alarms.

    Each delivered event has ``source`` = ``source``, ``detail-type`` = ``detail_type`` and a
    ``detail`` of the form::

        {"eventId": <stream eventID>, "eventName": "INSERT|MODIFY|REMOVE",
         "sequenceNumber": "...", "approximateCreationDateTime": <epoch seconds>,
         "keys": {...}, "newImage": {...}, "oldImage": {...}}

    where ``keys``/``newImage``/``oldImage`` hold the declared attributes (present only when
    some are declared). N attributes arrive as strings (exact decimals). Delivery is at least
    once: consumers deduplicate on ``detail.eventId``.

    With ``outbox_key_prefix``, only INSERTs of items whose ``outbox_key_attribute`` starts
    with the prefix leave; ``detail-type`` is the item's event type and ``detail`` is
    ``{"eventId", "eventType", "occurredAt", "payload": <JSON text>, "streamEventId",
    "sequenceNumber"}``.

    Args:
        table: a :class:`~cdc_constructs.ChangeCaptureTable`, or any ``dynamodb.ITable`` /
            ``ITableV2`` with a stream (as StreamConsumer accepts).
        source: the events' ``source``, e.g. ``"com.example.orders"`` (required; ``aws.`` is
            reserved by AWS).
        event_bus: the bus to put events on. Default: a new bus (``.event_bus``).
        detail_type: a fixed detail-type (<= 128 chars) or a JSON path into the stream record.
            Default ``"$.eventName"`` (INSERT/MODIFY/REMOVE).
        key_attributes / new_image_attributes / old_image_attributes: attribute name -> DynamoDB
            type (``"S"``, ``"N"``, ``"BOOL"``) exposed under ``keys`` / ``newImage`` /
            ``oldImage``. Default none. Declare only attributes every delivered image carries
            (use ``filters`` to guarantee it): Pipes cannot leave out a missing one.
        filters: up to 5 filter patterns (plain dicts, as ``StreamFilters`` builds them); a
            record is delivered when any matches. Default: every record.
        outbox_key_prefix: make this the outbox's fan-out (see above). Default ``None``.
        outbox_key_attribute: the key attribute the prefix applies to. Default ``"pk"``.
        batch_size: records per batch, 1-10000. Default 10: a failing batch is retried and
            bisected whole, and 10 is what one PutEvents call takes.
        max_batching_window: wait up to this long to fill a batch, 0-300 s. Default 0 (no wait,
            lowest latency).
        retry_attempts: 0-10000, never infinite. Default 5 (as StreamConsumer): -1 would block
            the shard on a poison record for up to 24 h.
        max_record_age: 60 s to under 24 h. Default 1 hour (as StreamConsumer): well below the
            stream's retention, so a dead-lettered batch can still be read back.
        parallelization_factor: concurrent batches per shard, 1-10. Default 1.
        dead_letter_queue: where failed batches' pointers go (shard, sequence numbers).
            Default: a new queue, SQS-managed encryption, TLS only, 14 days retention (the
            library's dead-letter queue, as StreamConsumer's on-failure queue).
        alarm_topic: where alarms notify. Default: a new :class:`AlarmTopic` (customer key,
            TLS only).
        log_level: ``OFF``, ``ERROR``, ``INFO`` or ``TRACE``. Default ``ERROR``: failures only,
            never the payload.
        log_retention: retention of the pipe's log group. Default one month.

    Attributes: ``pipe``, ``role``, ``policy``, ``event_bus``, ``dead_letter_queue``, ``log_group``,
    ``alarm_topic``, ``alarms``, ``input_template``, ``filter_patterns``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: SourceTable,
        source: str,
        event_bus: events.IEventBus | None = None,
        detail_type: str | None = None,
        key_attributes: Mapping[str, str] | None = None,
        new_image_attributes: Mapping[str, str] | None = None,
        old_image_attributes: Mapping[str, str] | None = None,
        filters: Sequence[Mapping[str, Any]] | None = None,
        outbox_key_prefix: str | None = None,
        outbox_key_attribute: str = defaults.OUTBOX_KEY_ATTRIBUTE,
        batch_size: int = defaults.FAN_OUT_BATCH_SIZE,
        max_batching_window: Duration | None = None,
        retry_attempts: int = defaults.RETRY_ATTEMPTS,
        max_record_age: Duration | None = None,
        parallelization_factor: int = defaults.PARALLELIZATION_FACTOR,
        dead_letter_queue: sqs.IQueue | None = None,
        alarm_topic: sns.ITopic | None = None,
        log_level: str = defaults.PIPE_LOG_LEVEL,
        log_retention: logs.RetentionDays = defaults.LOG_RETENTION,
    ) -> None:
        max_batching_window = max_batching_window or Duration.seconds(
            defaults.MAX_BATCHING_WINDOW_SECONDS
        )
        max_record_age = max_record_age or Duration.seconds(defaults.MAX_RECORD_AGE_SECONDS)

        # Validate everything before creating anything: one error lists every problem.
        problems: list[Problem] = []
        problems += _check_source(source)
        problems += check_batch_size(batch_size)
        problems += check_retry_attempts(retry_attempts)
        problems += check_max_record_age(max_record_age)
        problems += check_max_batching_window(max_batching_window)
        problems += check_parallelization_factor(parallelization_factor)
        if log_level not in defaults.PIPE_LOG_LEVELS:
            problems.append(
                Problem("log_level", log_level, f"one of {', '.join(defaults.PIPE_LOG_LEVELS)}")
            )

        table_problems = check_source_table(table)
        problems += table_problems
        view_type = None if table_problems else stream_view_type_of(table)
        if outbox_key_prefix is not None:
            problems += _check_outbox(
                outbox_key_prefix,
                outbox_key_attribute,
                filters=filters,
                detail_type=detail_type,
                key_attributes=key_attributes,
                new_image_attributes=new_image_attributes,
                old_image_attributes=old_image_attributes,
            )
            patterns = [_outbox_filter(outbox_key_attribute, outbox_key_prefix or "")]
            template = _outbox_template()
            resolved_detail_type = f"$.dynamodb.NewImage.{OUTBOX_EVENT_TYPE_ATTRIBUTE}.S"
        else:
            filter_problems = check_filters(filters or (), view_type)
            problems += filter_problems
            patterns = [] if filter_problems else [dict(pattern) for pattern in filters or ()]
            resolved_detail_type, detail_problems = _check_detail_type(detail_type)
            problems += detail_problems
            images = {
                "keys": ("Keys", key_attributes),
                "newImage": ("NewImage", new_image_attributes),
                "oldImage": ("OldImage", old_image_attributes),
            }
            template, template_problems = _change_template(images)
            problems += template_problems
        if len(template) > defaults.MAX_INPUT_TEMPLATE_LENGTH:
            problems.append(
                Problem(
                    "key_attributes/new_image_attributes/old_image_attributes",
                    f"an input template of {len(template)} characters",
                    f"at most {defaults.MAX_INPUT_TEMPLATE_LENGTH} characters (Pipes' limit): "
                    "declare fewer attributes",
                )
            )
        if view_type is not None:
            problems += _check_images_in_view(
                view_type,
                outbox_key_prefix=outbox_key_prefix,
                new_image_attributes=new_image_attributes,
                old_image_attributes=old_image_attributes,
            )
        raise_if_any(f"StreamFanOut {construct_id!r}", problems, FanOutConfigurationError)

        super().__init__(scope, construct_id)
        source_table = as_table(table)
        stream_arn: str = source_table.table_stream_arn  # type: ignore[assignment]
        self.input_template = template
        self.filter_patterns = patterns
        self.event_bus = event_bus or events.EventBus(self, "Bus")

        self.dead_letter_queue: sqs.IQueue = dead_letter_queue or _dead_letter_queue(self)
        self.log_group = logs.LogGroup(self, "Logs", retention=log_retention)
        self.role, self.policy = self._make_role(source_table, stream_arn)

        window_seconds = int(seconds(max_batching_window) or 0)
        source_parameters: dict[str, Any] = {
            "starting_position": STARTING_POSITION,
            "batch_size": batch_size,
            "maximum_retry_attempts": retry_attempts,
            "maximum_record_age_in_seconds": int(seconds(max_record_age) or 0),
            "on_partial_batch_item_failure": "AUTOMATIC_BISECT",
            "parallelization_factor": parallelization_factor,
            "dead_letter_config": pipes.CfnPipe.DeadLetterConfigProperty(
                arn=self.dead_letter_queue.queue_arn
            ),
        }
        if window_seconds:
            source_parameters["maximum_batching_window_in_seconds"] = window_seconds
        self.pipe = pipes.CfnPipe(
            self,
            "Pipe",
            role_arn=self.role.role_arn,
            source=stream_arn,
            source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
                dynamo_db_stream_parameters=pipes.CfnPipe.PipeSourceDynamoDBStreamParametersProperty(
                    **source_parameters
                ),
                filter_criteria=pipes.CfnPipe.FilterCriteriaProperty(
                    filters=[
                        pipes.CfnPipe.FilterProperty(pattern=json.dumps(pattern))
                        for pattern in patterns
                    ]
                )
                if patterns
                else None,
            ),
            target=self.event_bus.event_bus_arn,
            target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
                input_template=template,
                event_bridge_event_bus_parameters=pipes.CfnPipe.PipeTargetEventBridgeEventBusParametersProperty(
                    source=source,
                    detail_type=resolved_detail_type,
                    resources=[source_table.table_arn],
                ),
            ),
            log_configuration=pipes.CfnPipe.PipeLogConfigurationProperty(
                level=log_level,
                cloudwatch_logs_log_destination=pipes.CfnPipe.CloudwatchLogsLogDestinationProperty(
                    log_group_arn=self.log_group.log_group_arn
                ),
            ),
            description=f"Change stream of {source_table.node.path} to {self.event_bus.node.path}",
        )
        self.pipe.node.add_dependency(self.policy)

        self.alarm_topic: sns.ITopic = alarm_topic or AlarmTopic(self, "AlarmTopic").topic
        self.alarms = self._make_alarms()

    # ---- resources -------------------------------------------------------------------------

    def _make_role(self, table: dynamodb.ITable, stream_arn: str) -> tuple[iam.Role, iam.Policy]:
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
        statements = [
            allow(STREAM_READ_ACTIONS, [stream_arn], sid="ReadThisStream"),
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
        return role, policy

    def _make_alarms(self) -> list[cloudwatch.Alarm]:
        period = Duration.seconds(defaults.ALARM_PERIOD_SECONDS)
        alarms = [
            alarm_on_any(
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
        ]
        alarms.append(
            alarm_on_any(
                self,
                "DeadLetterQueueAlarm",
                self.dead_letter_queue.metric_approximate_number_of_messages_visible(
                    statistic=cloudwatch.Stats.MAXIMUM, period=period
                ),
                description="Batches the fan-out pipe could not deliver are in its dead-letter "
                "queue; read them back from the stream before it trims them (24 h).",
                topic=self.alarm_topic,
            )
        )
        return alarms


def _dead_letter_queue(scope: Construct) -> sqs.Queue:
    return dead_letter_queue(
        scope,
        "DeadLetterQueue",
        purpose="the pipe's DeadLetterConfig: pointers to batches it could not deliver, "
        "alarmed on >= 1 message",
        retention_days=defaults.ON_FAILURE_QUEUE_RETENTION_DAYS,
    )


# ---- validation and template helpers (run before anything is built) -------------------------


def _check_images_in_view(view_type: str, **props: Any) -> list[Problem]:
    """The event reads only images the stream carries (filters are checked by
    ``check_filters``)."""
    carried = IMAGES_BY_VIEW_TYPE.get(view_type)
    if view_type == UNKNOWN_VIEW_TYPE or carried is None:
        return []
    fix = "use NEW_AND_OLD_IMAGES (changing it re-creates the stream)"
    if props["outbox_key_prefix"] is not None:
        if "NewImage" in carried:
            return []
        return [
            Problem(
                "outbox_key_prefix",
                props["outbox_key_prefix"],
                f"a table whose stream carries NewImage, where outbox events are read from; "
                f"its view is {view_type}: {fix}",
            )
        ]
    problems = []
    for prop, image in (
        ("new_image_attributes", "NewImage"),
        ("old_image_attributes", "OldImage"),
    ):
        if props[prop] and image not in carried:
            problems.append(
                Problem(
                    prop,
                    props[prop],
                    f"none: the table's stream view is {view_type}, which carries no {image}; "
                    f"{fix}",
                )
            )
    return problems


def _check_source(source: object) -> list[Problem]:
    if not isinstance(source, str) or not source.strip():
        return [Problem("source", source, 'the events\' source, e.g. "com.example.orders"')]
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


def _check_outbox(prefix: Any, key_attribute: Any, **excluded: Any) -> list[Problem]:
    problems = []
    given = [name for name, value in excluded.items() if value is not None]
    if given:
        problems.append(
            Problem(
                ", ".join(given),
                "given with outbox_key_prefix",
                "left out: outbox_key_prefix sets the filter, detail-type and detail itself",
            )
        )
    if not isinstance(prefix, str) or not prefix:
        problems.append(
            Problem("outbox_key_prefix", prefix, 'the outbox items\' key prefix, e.g. "OUTBOX#"')
        )
    if not isinstance(key_attribute, str) or not _PATH_SEGMENT.match(key_attribute):
        problems.append(
            Problem(
                "outbox_key_attribute",
                key_attribute,
                "the key attribute's name (letters, digits, '-', '_')",
            )
        )
    return problems


def _check_detail_type(detail_type: str | None) -> tuple[str, list[Problem]]:
    if detail_type is None:
        return defaults.FAN_OUT_DETAIL_TYPE, []
    if not isinstance(detail_type, str) or not detail_type.strip():
        return "", [Problem("detail_type", detail_type, "a string or a JSON path")]
    if detail_type.startswith("$") and not _JSON_PATH.match(detail_type):
        return detail_type, [
            Problem(
                "detail_type",
                detail_type,
                "a Pipes JSON path: dot notation over letters, digits, '-' and '_', e.g. "
                "'$.dynamodb.NewImage.type.S'",
            )
        ]
    if len(detail_type) > defaults.MAX_DETAIL_TYPE_LENGTH:
        return detail_type, [
            Problem(
                "detail_type",
                f"{len(detail_type)} characters",
                f"at most {defaults.MAX_DETAIL_TYPE_LENGTH} characters (EventBridge's limit)",
            )
        ]
    return detail_type, []


def _placeholder(image: str, name: str, attribute_type: str) -> str:
    path = f"<$.dynamodb.{image}.{name}.{attribute_type}>"
    # Strings (S, and N: DynamoDB sends numbers as decimal strings) are quoted as Pipes asks;
    # BOOL is a JSON boolean and stays bare.
    return path if attribute_type == "BOOL" else f'"{path}"'


def _change_template(
    images: Mapping[str, tuple[str, Mapping[str, str] | None]],
) -> tuple[str, list[Problem]]:
    problems: list[Problem] = []
    fields = [
        '"eventId": "<$.eventID>"',
        '"eventName": "<$.eventName>"',
        '"sequenceNumber": "<$.dynamodb.SequenceNumber>"',
        '"approximateCreationDateTime": <$.dynamodb.ApproximateCreationDateTime>',
    ]
    for field, (image, attributes) in images.items():
        if attributes is None:
            continue
        prop = {"Keys": "key", "NewImage": "new_image", "OldImage": "old_image"}[image]
        prop = f"{prop}_attributes"
        if not isinstance(attributes, Mapping) or not attributes:
            problems.append(
                Problem(
                    prop,
                    attributes,
                    'a dict of attribute name -> type, e.g. {"orderId": "S"}, or left out',
                )
            )
            continue
        members = []
        for name, attribute_type in attributes.items():
            if not isinstance(name, str) or not _PATH_SEGMENT.match(name):
                problems.append(
                    Problem(
                        f"{prop}[{name!r}]",
                        attribute_type,
                        "an attribute name a Pipes JSON path can read (letters, digits, '-' "
                        "and '_' only)",
                    )
                )
            elif attribute_type not in ATTRIBUTE_TYPES:
                problems.append(
                    Problem(
                        f"{prop}[{name!r}]",
                        attribute_type,
                        f"one of {', '.join(ATTRIBUTE_TYPES)} (lists, maps and sets cannot be "
                        "unwrapped by a Pipes template)",
                    )
                )
            else:
                members.append(f"{json.dumps(name)}: {_placeholder(image, name, attribute_type)}")
        fields.append(f'"{field}": {{{", ".join(members)}}}')
    return "{" + ", ".join(fields) + "}", problems


def _outbox_filter(key_attribute: str, key_prefix: str) -> dict[str, Any]:
    return {
        "eventName": ["INSERT"],
        "dynamodb": {"Keys": {key_attribute: {"S": [{"prefix": key_prefix}]}}},
    }


def _outbox_template() -> str:
    def new(name: str) -> str:
        return _placeholder("NewImage", name, "S")

    return (
        "{"
        f'"eventId": {new(OUTBOX_EVENT_ID_ATTRIBUTE)}, '
        f'"eventType": {new(OUTBOX_EVENT_TYPE_ATTRIBUTE)}, '
        f'"occurredAt": {new(OUTBOX_OCCURRED_AT_ATTRIBUTE)}, '
        f'"payload": {new(OUTBOX_PAYLOAD_ATTRIBUTE)}, '
        '"streamEventId": "<$.eventID>", '
        '"sequenceNumber": "<$.dynamodb.SequenceNumber>"'
        "}"
    )
