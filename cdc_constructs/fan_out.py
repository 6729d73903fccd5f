"""StreamFanOut: a table's change stream, as clean domain events on an EventBridge bus.

An EventBridge Pipe reads the DynamoDB stream (filtered), turns each record into a domain event
and puts it on an event bus; rules on the bus fan the events out. The pipe carries the same
safety settings as a Lambda consumer (DESIGN.md §1): start at TRIM_HORIZON, finite retries and
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

from aws_cdk import Acknowledgment, Duration, Stack, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

__all__ = [
    "OUTBOX_EVENT_ID_ATTRIBUTE",
    "OUTBOX_EVENT_TYPE_ATTRIBUTE",
    "OUTBOX_OCCURRED_AT_ATTRIBUTE",
    "OUTBOX_PAYLOAD_ATTRIBUTE",
    "FanOutConfigurationError",
    "StreamFanOut",
]

# ---- Defaults, each with its reason (to move into cdc_constructs/defaults.py) --------------------

#: TRIM_HORIZON, fixed: LATEST skips whatever is written while the pipe is created or updated.
STARTING_POSITION = "TRIM_HORIZON"
#: Small batches: a failing batch is retried and bisected as a whole, so a small one re-sends
#: little; 10 is also the most entries one EventBridge PutEvents call accepts.
DEFAULT_BATCH_SIZE = 10
#: Finite retries: AWS's default (-1) retries a poison record until it leaves the stream (24 h),
#: blocking its shard the whole time. After 5 (bisected) retries the batch goes to the DLQ.
DEFAULT_MAXIMUM_RETRY_ATTEMPTS = 5
#: One hour, well below the stream's 24 h retention: a record that cannot be delivered within an
#: hour goes to the DLQ while there is still time to read it back from the stream.
DEFAULT_MAXIMUM_RECORD_AGE = Duration.hours(1)
#: One poller per shard keeps per-item order simple to reason about; raise for throughput.
DEFAULT_PARALLELIZATION_FACTOR = 1
#: SQS's maximum: the longest time to notice a dead-lettered batch and act on it.
DEFAULT_DLQ_RETENTION = Duration.days(14)
#: A month of pipe logs: enough to investigate an incident, bounded cost.
DEFAULT_LOG_RETENTION = logs.RetentionDays.ONE_MONTH
#: ERROR logs failed executions only; INFO/TRACE log every execution. Execution data (the
#: payload) is never included by default: it would copy item data, possibly personal, to logs.
DEFAULT_LOG_LEVEL = "ERROR"
#: detail-type taken from the change itself: INSERT, MODIFY or REMOVE.
DEFAULT_DETAIL_TYPE = "$.eventName"
#: Pipe metrics (namespace AWS/EventBridge/Pipes, dimension PipeName) that mean events were not
#: delivered; each alarms on Sum >= 1 over the period below.
PIPE_FAILURE_METRICS = ("ExecutionFailed", "ExecutionPartiallyFailed", "ExecutionTimeout")
PIPES_METRIC_NAMESPACE = "AWS/EventBridge/Pipes"
#: Five minutes: failures are rare events, one datapoint is enough to page.
DEFAULT_ALARM_PERIOD = Duration.minutes(5)

# ---- AWS limits checked before anything is built ---------------------------------------------

BATCH_SIZE_RANGE = (1, 10000)  # DynamoDB stream source of a pipe
RETRY_ATTEMPTS_RANGE = (0, 10000)  # -1 (infinite) is AWS's default and rejected here
RECORD_AGE_SECONDS_RANGE = (60, 86399)  # AWS allows up to 604800, but >= 24 h means "never"
BATCHING_WINDOW_SECONDS_RANGE = (0, 300)
PARALLELIZATION_FACTOR_RANGE = (1, 10)
MAX_FILTERS = 5
MAX_FILTER_PATTERN_LENGTH = 4096
MAX_INPUT_TEMPLATE_LENGTH = 8192
MAX_DETAIL_TYPE_LENGTH = 128
MAX_SOURCE_LENGTH = 256
ATTRIBUTE_TYPES = ("S", "N", "BOOL")

# ---- The outbox item's attributes (must equal lambda_src/cdc_consumer/outbox.py; a test checks)

OUTBOX_EVENT_ID_ATTRIBUTE = "eventId"
OUTBOX_EVENT_TYPE_ATTRIBUTE = "eventType"
OUTBOX_PAYLOAD_ATTRIBUTE = "payload"
OUTBOX_OCCURRED_AT_ATTRIBUTE = "occurredAt"

# Pipes' JSON path subset: dot notation over alphanumerics, dashes and underscores.
_PATH_SEGMENT = re.compile(r"^[A-Za-z0-9_-]+$")
_JSON_PATH = re.compile(r"^\$(\.[A-Za-z0-9_-]+)+$")


class FanOutConfigurationError(ValueError):
    """StreamFanOut props that cannot make a safe pipe; ``problems`` lists each one."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__(
            "StreamFanOut: invalid props:\n" + "\n".join(f"  - {p}" for p in self.problems)
        )


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
        table: the table whose stream is read (it must have one).
        source: the events' ``source``, e.g. ``"com.example.orders"`` (required; ``aws.`` is
            reserved by AWS).
        event_bus: the bus to put events on. Default: a new bus (``.event_bus``).
        detail_type: a fixed detail-type (<= 128 chars) or a JSON path into the stream record.
            Default ``"$.eventName"`` (INSERT/MODIFY/REMOVE).
        key_attributes / new_image_attributes / old_image_attributes: attribute name -> DynamoDB
            type (``"S"``, ``"N"``, ``"BOOL"``) exposed under ``keys`` / ``newImage`` /
            ``oldImage``. Default none. Declare only attributes every delivered image carries
            (use ``filters`` to guarantee it): Pipes cannot leave out a missing one.
        filters: up to 5 event patterns (plain dicts, as ``StreamFilters`` builds them); a
            record is delivered when any matches. Default: every record.
        outbox_key_prefix: make this the outbox's fan-out (see above). Default ``None``.
        outbox_key_attribute: the key attribute the prefix applies to. Default ``"pk"``.
        batch_size: records per batch, 1-10000. Default 10 (see ``DEFAULT_BATCH_SIZE``).
        maximum_batching_window: wait up to this long to fill a batch, 0-300 s. Default none.
        maximum_retry_attempts: 0-10000, never infinite. Default 5.
        maximum_record_age: 60 s to under 24 h. Default 1 hour.
        parallelization_factor: concurrent batches per shard, 1-10. Default 1.
        dead_letter_queue: where failed batches' pointers go (shard, sequence numbers).
            Default: a new queue, SQS-managed encryption, TLS only, 14 days retention.
        alarm_topic: where alarms notify. Default: a new topic, TLS only.
        log_level: ``OFF``, ``ERROR``, ``INFO`` or ``TRACE``. Default ``ERROR``.
        log_retention: retention of the pipe's log group. Default one month.

    Attributes: ``pipe``, ``role``, ``policy``, ``event_bus``, ``dead_letter_queue``, ``log_group``,
    ``alarm_topic``, ``alarms``, ``input_template``, ``filter_patterns``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: dynamodb.ITableV2 | dynamodb.ITable,
        source: str,
        event_bus: events.IEventBus | None = None,
        detail_type: str | None = None,
        key_attributes: Mapping[str, str] | None = None,
        new_image_attributes: Mapping[str, str] | None = None,
        old_image_attributes: Mapping[str, str] | None = None,
        filters: Sequence[Mapping[str, Any]] | None = None,
        outbox_key_prefix: str | None = None,
        outbox_key_attribute: str = "pk",
        batch_size: int = DEFAULT_BATCH_SIZE,
        maximum_batching_window: Duration | None = None,
        maximum_retry_attempts: int = DEFAULT_MAXIMUM_RETRY_ATTEMPTS,
        maximum_record_age: Duration = DEFAULT_MAXIMUM_RECORD_AGE,
        parallelization_factor: int = DEFAULT_PARALLELIZATION_FACTOR,
        dead_letter_queue: sqs.IQueue | None = None,
        alarm_topic: sns.ITopic | None = None,
        log_level: str = DEFAULT_LOG_LEVEL,
        log_retention: logs.RetentionDays = DEFAULT_LOG_RETENTION,
    ) -> None:
        problems: list[str] = []
        _check_source(source, problems)
        _check_ranges(
            problems,
            batch_size=(batch_size, BATCH_SIZE_RANGE),
            maximum_retry_attempts=(maximum_retry_attempts, RETRY_ATTEMPTS_RANGE),
            parallelization_factor=(parallelization_factor, PARALLELIZATION_FACTOR_RANGE),
        )
        record_age_seconds = _seconds("maximum_record_age", maximum_record_age, problems)
        _check_ranges(problems, maximum_record_age=(record_age_seconds, RECORD_AGE_SECONDS_RANGE))
        window_seconds = None
        if maximum_batching_window is not None:
            window_seconds = _seconds("maximum_batching_window", maximum_batching_window, problems)
            _check_ranges(
                problems,
                maximum_batching_window=(window_seconds, BATCHING_WINDOW_SECONDS_RANGE),
            )
        if log_level not in ("OFF", "ERROR", "INFO", "TRACE"):
            problems.append(f"log_level={log_level!r}: give one of OFF, ERROR, INFO, TRACE")

        if outbox_key_prefix is not None:
            given = [
                name
                for name, value in (
                    ("filters", filters),
                    ("detail_type", detail_type),
                    ("key_attributes", key_attributes),
                    ("new_image_attributes", new_image_attributes),
                    ("old_image_attributes", old_image_attributes),
                )
                if value is not None
            ]
            if given:
                problems.append(
                    f"outbox_key_prefix={outbox_key_prefix!r} sets the filter, detail-type and "
                    f"detail itself; do not also give {', '.join(given)}"
                )
            if not isinstance(outbox_key_prefix, str) or not outbox_key_prefix:
                problems.append(
                    f"outbox_key_prefix={outbox_key_prefix!r}: give the outbox items' key "
                    'prefix, e.g. "OUTBOX#"'
                )
            if not isinstance(outbox_key_attribute, str) or not _PATH_SEGMENT.match(
                outbox_key_attribute
            ):
                problems.append(
                    f"outbox_key_attribute={outbox_key_attribute!r}: give the key attribute's "
                    "name (letters, digits, '-', '_')"
                )
            patterns = [_outbox_filter(outbox_key_attribute, outbox_key_prefix or "")]
            template = _outbox_template()
            resolved_detail_type = f"$.dynamodb.NewImage.{OUTBOX_EVENT_TYPE_ATTRIBUTE}.S"
        else:
            patterns = _check_filters(filters, problems)
            resolved_detail_type = _check_detail_type(detail_type, problems)
            images = {
                "keys": ("Keys", key_attributes),
                "newImage": ("NewImage", new_image_attributes),
                "oldImage": ("OldImage", old_image_attributes),
            }
            template = _change_template(images, problems)
        if len(template) > MAX_INPUT_TEMPLATE_LENGTH:
            problems.append(
                f"the declared attributes make an input template of {len(template)} characters; "
                f"Pipes allows {MAX_INPUT_TEMPLATE_LENGTH}: declare fewer attributes"
            )
        stream_arn = getattr(table, "table_stream_arn", None)
        view_type = _stream_view_type(table) if stream_arn else None
        if view_type is None:
            problems.append(
                "table has no stream: enable one (ChangeCaptureTable does, with NEW_AND_OLD_IMAGES)"
            )
        else:
            _check_images_in_view(view_type, template, patterns, problems)
        if problems:
            raise FanOutConfigurationError(problems)

        super().__init__(scope, construct_id)
        self.input_template = template
        self.filter_patterns = patterns
        self.event_bus = event_bus or events.EventBus(self, "Bus")

        self.dead_letter_queue = dead_letter_queue or self._make_dead_letter_queue()
        self.log_group = logs.LogGroup(self, "Logs", retention=log_retention)
        self.role, self.policy = self._make_role(table, stream_arn)

        source_parameters: dict[str, Any] = {
            "starting_position": STARTING_POSITION,
            "batch_size": batch_size,
            "maximum_retry_attempts": maximum_retry_attempts,
            "maximum_record_age_in_seconds": record_age_seconds,
            "on_partial_batch_item_failure": "AUTOMATIC_BISECT",
            "parallelization_factor": parallelization_factor,
            "dead_letter_config": pipes.CfnPipe.DeadLetterConfigProperty(
                arn=self.dead_letter_queue.queue_arn
            ),
        }
        if window_seconds is not None:
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
                    resources=[table.table_arn],
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
        self.pipe.node.add_dependency(self.policy)

        self.alarm_topic = alarm_topic or self._make_alarm_topic()
        self.alarms = self._make_alarms()

    # ---- resources -------------------------------------------------------------------------

    def _make_dead_letter_queue(self) -> sqs.Queue:
        queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=DEFAULT_DLQ_RETENTION,
        )
        reason = (
            "This queue IS the pipe's dead-letter queue (DeadLetterConfig); a dead-letter queue "
            "for it would only move the same pointers again. It is alarmed on >= 1 message."
        )
        Validations.of(queue).acknowledge(
            Acknowledgment(id="AwsSolutions-SQS3", reason=reason),
            Acknowledgment(id="Serverless-SQSRedrivePolicy", reason=reason),
        )
        return queue

    def _make_role(
        self, table: dynamodb.ITableV2 | dynamodb.ITable, stream_arn: str
    ) -> tuple[iam.Role, iam.Policy]:
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
            iam.PolicyStatement(
                sid="ReadThisStream",
                actions=[
                    "dynamodb:DescribeStream",
                    "dynamodb:GetRecords",
                    "dynamodb:GetShardIterator",
                    "dynamodb:ListStreams",
                ],
                resources=[stream_arn],
            ),
            iam.PolicyStatement(
                sid="PutEventsOnThisBus",
                actions=["events:PutEvents"],
                resources=[self.event_bus.event_bus_arn],
            ),
            iam.PolicyStatement(
                sid="SendToTheDeadLetterQueue",
                actions=["sqs:SendMessage"],
                resources=[self.dead_letter_queue.queue_arn],
            ),
            iam.PolicyStatement(
                sid="WriteThePipeLogs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn],
            ),
        ]
        if table.encryption_key is not None:
            statements.append(
                iam.PolicyStatement(
                    sid="DecryptTheStream",
                    actions=["kms:Decrypt"],
                    resources=[table.encryption_key.key_arn],
                )
            )
        queue_key = self.dead_letter_queue.encryption_master_key
        if queue_key is not None:
            statements.append(
                iam.PolicyStatement(
                    sid="EncryptDeadLetters",
                    actions=["kms:GenerateDataKey", "kms:Decrypt"],
                    resources=[queue_key.key_arn],
                )
            )
        # An explicit policy (not the role's default one) so the pipe can depend on it: the pipe
        # must not start reading before it may deliver.
        policy = iam.Policy(self, "Policy", statements=statements, roles=[role])
        return role, policy

    def _make_alarm_topic(self) -> sns.Topic:
        # TLS-only. Not KMS-encrypted: CloudWatch cannot publish to a topic under the AWS
        # managed SNS key, and alarm notifications carry no item data. Pass alarm_topic with a
        # customer managed key (whose policy admits cloudwatch.amazonaws.com) to encrypt.
        return sns.Topic(self, "AlarmTopic", enforce_ssl=True)

    def _make_alarms(self) -> list[cloudwatch.Alarm]:
        action = cloudwatch_actions.SnsAction(self.alarm_topic)
        alarms = []
        for metric_name in PIPE_FAILURE_METRICS:
            alarm = cloudwatch.Metric(
                namespace=PIPES_METRIC_NAMESPACE,
                metric_name=metric_name,
                dimensions_map={"PipeName": self.pipe.ref},
                statistic="Sum",
                period=DEFAULT_ALARM_PERIOD,
            ).create_alarm(
                self,
                f"{metric_name}Alarm",
                alarm_description=f"The fan-out pipe reported {metric_name}: events may be "
                "late or in the dead-letter queue.",
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            alarms.append(alarm)
        dlq_alarm = self.dead_letter_queue.metric_approximate_number_of_messages_visible(
            statistic="Maximum", period=Duration.minutes(1)
        ).create_alarm(
            self,
            "DeadLetterQueueAlarm",
            alarm_description="Batches the fan-out pipe could not deliver are in its "
            "dead-letter queue; read them back from the stream before it trims them (24 h).",
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarms.append(dlq_alarm)
        for alarm in alarms:
            alarm.add_alarm_action(action)
        return alarms


# ---- validation and template helpers (run before anything is built) -------------------------

_UNKNOWN_VIEW = "UNKNOWN"
_IMAGES_IN_VIEW = {
    "KEYS_ONLY": set(),
    "NEW_IMAGE": {"NewImage"},
    "OLD_IMAGE": {"OldImage"},
    "NEW_AND_OLD_IMAGES": {"NewImage", "OldImage"},
}


def _stream_view_type(table: dynamodb.ITableV2 | dynamodb.ITable) -> str | None:
    """The stream view type of a table defined in this app; ``None`` if it has no stream;
    ``UNKNOWN`` for an imported table (its stream ARN is all we know)."""
    resource = table.node.default_child
    if not isinstance(resource, (dynamodb.CfnTable, dynamodb.CfnGlobalTable)):
        return _UNKNOWN_VIEW
    # The L1's properties as given (the public getter of TableV2's stream spec is lazy and
    # cannot be read before synthesis).
    try:
        properties = Stack.of(table).resolve(resource._cfn_properties)
    except RuntimeError:  # a jsii error resolving someone's custom table: do not guess
        return _UNKNOWN_VIEW
    specification = properties.get("streamSpecification")
    if not specification:
        return None
    return specification.get("streamViewType") or _UNKNOWN_VIEW


def _check_images_in_view(
    view_type: str, template: str, patterns: Sequence[Mapping[str, Any]], problems: list[str]
) -> None:
    if view_type not in _IMAGES_IN_VIEW:
        return
    carried = _IMAGES_IN_VIEW[view_type]
    used = {image for image in ("NewImage", "OldImage") if f"$.dynamodb.{image}." in template}
    for pattern in patterns:
        dynamodb_part = pattern.get("dynamodb")
        if isinstance(dynamodb_part, Mapping):
            used |= {image for image in ("NewImage", "OldImage") if image in dynamodb_part}
    missing = sorted(used - carried)
    if missing:
        problems.append(
            f"the events or filters read {' and '.join(missing)}, but the table's stream view "
            f"is {view_type}: use NEW_AND_OLD_IMAGES (changing it re-creates the stream)"
        )


def _check_source(source: object, problems: list[str]) -> None:
    if not isinstance(source, str) or not source.strip():
        problems.append(f'source={source!r}: give the events\' source, e.g. "com.example.orders"')
    elif len(source) > MAX_SOURCE_LENGTH:
        problems.append(f"source is {len(source)} characters; EventBridge allows at most 256")
    elif source.startswith("aws."):
        problems.append(f"source={source!r}: sources starting with 'aws.' are reserved by AWS")


def _check_ranges(problems: list[str], **values: tuple[Any, tuple[int, int]]) -> None:
    for name, (value, (low, high)) in values.items():
        if value is None:
            continue  # already reported
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            hint = " (infinite retries block a shard for up to 24 h)" if value == -1 else ""
            problems.append(f"{name}={value!r}: give an integer from {low} to {high}{hint}")


def _seconds(name: str, value: object, problems: list[str]) -> int | None:
    if not isinstance(value, Duration):
        problems.append(f"{name}={value!r}: give an aws_cdk.Duration")
        return None
    return int(value.to_seconds())


def _check_filters(
    filters: Sequence[Mapping[str, Any]] | None, problems: list[str]
) -> list[dict[str, Any]]:
    if filters is None:
        return []
    if isinstance(filters, Mapping) or not isinstance(filters, Sequence):
        problems.append(
            f"filters={filters!r}: give a list of event patterns (dicts), e.g. "
            "[StreamFilters.event_names('INSERT')]"
        )
        return []
    if len(filters) > MAX_FILTERS:
        problems.append(f"{len(filters)} filters given; a pipe allows at most {MAX_FILTERS}")
    patterns = []
    for index, pattern in enumerate(filters):
        if not isinstance(pattern, Mapping) or not pattern:
            problems.append(f"filters[{index}]={pattern!r}: give a non-empty dict event pattern")
            continue
        try:
            text = json.dumps(pattern)
        except (TypeError, ValueError) as error:
            problems.append(f"filters[{index}] is not JSON ({error})")
            continue
        if len(text) > MAX_FILTER_PATTERN_LENGTH:
            problems.append(
                f"filters[{index}] is {len(text)} characters as JSON; Pipes allows "
                f"{MAX_FILTER_PATTERN_LENGTH}"
            )
        patterns.append(dict(pattern))
    return patterns


def _check_detail_type(detail_type: str | None, problems: list[str]) -> str:
    if detail_type is None:
        return DEFAULT_DETAIL_TYPE
    if not isinstance(detail_type, str) or not detail_type.strip():
        problems.append(f"detail_type={detail_type!r}: give a string or a JSON path")
    elif detail_type.startswith("$") and not _JSON_PATH.match(detail_type):
        problems.append(
            f"detail_type={detail_type!r}: Pipes JSON paths use dot notation over letters, "
            "digits, '-' and '_', e.g. '$.dynamodb.NewImage.type.S'"
        )
    elif len(detail_type) > MAX_DETAIL_TYPE_LENGTH:
        problems.append(
            f"detail_type is {len(detail_type)} characters; EventBridge allows at most "
            f"{MAX_DETAIL_TYPE_LENGTH}"
        )
    return detail_type


def _placeholder(image: str, name: str, attribute_type: str) -> str:
    path = f"<$.dynamodb.{image}.{name}.{attribute_type}>"
    # Strings (S, and N: DynamoDB sends numbers as decimal strings) are quoted as Pipes asks;
    # BOOL is a JSON boolean and stays bare.
    return path if attribute_type == "BOOL" else f'"{path}"'


def _change_template(
    images: Mapping[str, tuple[str, Mapping[str, str] | None]], problems: list[str]
) -> str:
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
        if not isinstance(attributes, Mapping) or not attributes:
            problems.append(
                f"{prop}_attributes={attributes!r}: give a dict of attribute name -> type, "
                f'e.g. {{"orderId": "S"}}, or leave it out'
            )
            continue
        members = []
        for name, attribute_type in attributes.items():
            if not isinstance(name, str) or not _PATH_SEGMENT.match(name):
                problems.append(
                    f"{prop}_attributes: attribute name {name!r} cannot be read by a Pipes "
                    "JSON path (letters, digits, '-' and '_' only)"
                )
            elif attribute_type not in ATTRIBUTE_TYPES:
                problems.append(
                    f"{prop}_attributes[{name!r}]={attribute_type!r}: give one of "
                    f"{', '.join(ATTRIBUTE_TYPES)} (lists, maps and sets cannot be unwrapped "
                    "by a Pipes template)"
                )
            else:
                members.append(f"{json.dumps(name)}: {_placeholder(image, name, attribute_type)}")
        fields.append(f'"{field}": {{{", ".join(members)}}}')
    return "{" + ", ".join(fields) + "}"


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
