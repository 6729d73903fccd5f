"""StreamFanOut: a table's change stream, as clean domain events on an EventBridge bus.

An EventBridge Pipe reads the DynamoDB stream (filtered), turns each record into a domain event
and puts it on an event bus; rules on the bus fan the events out. The pipe carries the same
safety settings as a Lambda consumer (docs/design.md §1): start at TRIM_HORIZON, finite retries and
record age, bisect on partial failure, a dead-letter queue for what still fails, and alarms.

With ``outbox_key_prefix`` it is the publishing half of the transactional outbox, as
:class:`~cdc_constructs.OutboxPublisher` is (which new code should use). Both are
:class:`~cdc_constructs.pipe.StreamPipe`: the same pipe, role, dead-letter queue and alarms.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_events as events
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from cdc_consumer.service_limits import MAX_DETAIL_TYPE_LENGTH
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.exceptions import FanOutConfigurationError, Problem
from cdc_constructs.fan_out_rule import FanOutRule
from cdc_constructs.outbox_publisher import (
    PATH_SEGMENT,
    OutboxEvents,
    template_placeholder,
)
from cdc_constructs.pipe import StreamPipe, check_template_length
from cdc_constructs.source_table import UNKNOWN_VIEW_TYPE, SourceTable
from cdc_constructs.validation import IMAGES_BY_VIEW_TYPE

__all__ = [
    "ChangeEvents",
    "FanOutConfigurationError",
    "StreamFanOut",
]

ATTRIBUTE_TYPES = ("S", "N", "BOOL")
"""Attribute types a Pipes input template can unwrap."""

# Pipes' JSON path subset: dot notation over alphanumerics, dashes and underscores.
_JSON_PATH = re.compile(r"^\$(\.[A-Za-z0-9_-]+)+$")


@dataclass(frozen=True)
class ChangeEvents:
    """Stream records as change events: the declared attributes of keys and images."""

    filters: Sequence[Mapping[str, Any]] | None = None
    detail_type: Any = None
    key_attributes: Mapping[str, str] | None = None
    new_image_attributes: Mapping[str, str] | None = None
    old_image_attributes: Mapping[str, str] | None = None

    @property
    def given(self) -> list[str]:
        """The props given (not None), in the order above."""
        return [field.name for field in fields(self) if getattr(self, field.name) is not None]

    @property
    def filter_patterns(self) -> list[dict[str, Any]]:
        return []  # the filters are the mapping's

    @property
    def input_template(self) -> str:
        return _change_template(self._images())[0]

    @property
    def event_detail_type(self) -> str:
        return _check_detail_type(self.detail_type)[0]

    def _images(self) -> dict[str, tuple[str, Mapping[str, str] | None]]:
        return {
            "keys": ("Keys", self.key_attributes),
            "newImage": ("NewImage", self.new_image_attributes),
            "oldImage": ("OldImage", self.old_image_attributes),
        }

    def problems(self, stream_view_type: str | None) -> list[Problem]:
        found = _check_detail_type(self.detail_type)[1]
        template, template_problems = _change_template(self._images())
        found += template_problems + check_template_length(template)
        return found + self._image_problems(stream_view_type)

    def _image_problems(self, view_type: str | None) -> list[Problem]:
        """The event reads only images the stream carries (filters are checked by the mapping
        options)."""
        carried = IMAGES_BY_VIEW_TYPE.get(view_type or UNKNOWN_VIEW_TYPE)
        if carried is None:
            return []
        found = []
        for prop, image in (
            ("new_image_attributes", "NewImage"),
            ("old_image_attributes", "OldImage"),
        ):
            if getattr(self, prop) and image not in carried:
                found.append(
                    Problem(
                        prop,
                        getattr(self, prop),
                        f"none: the table's stream view is {view_type}, which carries no "
                        f"{image}; use NEW_AND_OLD_IMAGES (changing it re-creates the stream)",
                    )
                )
        return found


class StreamFanOut(StreamPipe):
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
        source: the events' ``source``, e.g. ``"com.example.app"`` (required; ``aws.`` is
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
        outbox_key_prefix: make this the outbox's fan-out (see above); same as
            :class:`~cdc_constructs.OutboxPublisher`, which new code should use. Default
            ``None``.
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
        extra_reader_reason: why this pipe may be the third reader of the table's stream (a
            table with replicas: the second). Default None: such a pipe is refused (DynamoDB
            Streams throttles a third reader); the reason also acknowledges CDC-ESM11.
        dead_letter_queue: where the batches the pipe could not deliver go.
            Default: a new queue, SQS-managed encryption, TLS only, 14 days retention, retained
            (the library's dead-letter queue, as StreamConsumer's quarantine queue).
        alarm_topic: where alarms notify. Default: a new :class:`AlarmTopic` (customer key,
            TLS only).
        log_level: ``OFF``, ``ERROR``, ``INFO`` or ``TRACE``. Default ``ERROR``: failures only,
            never the payload.
        log_retention: retention of the pipe's log group. Default one month.
        log_encryption_key: a customer-managed KMS key for the pipe's log group (as
            StreamConsumer's ``log_encryption_key``: a key made in the app gets the statement
            CloudWatch Logs needs). Default none: CloudWatch Logs' own encryption; at ``INFO``
            or ``TRACE`` with execution data, log lines carry item values.
        removal_policy: what ``cdk destroy`` or a replacement does to the dead-letter queue
            made here. Default ``RemovalPolicy.RETAIN``: it may hold the only record of what the
            pipe could not deliver; an empty queue costs nothing. A queue given is left as is.

    Attributes: ``pipe``, ``role``, ``policy``, ``event_bus``, ``dead_letter_queue``, ``log_group``,
    ``alarm_topic``, ``alarms`` (a dict by name, as StreamConsumer's), ``input_template``,
    ``filter_patterns``, ``rules`` (by id: each :meth:`add_rule`'s).

    Subscribe to the bus with :meth:`add_rule`: the rule's target gets a dead-letter queue and
    finite retries, and the rule alarms when an event was not delivered.
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
        extra_reader_reason: str | None = None,
        dead_letter_queue: sqs.IQueue | None = None,
        alarm_topic: sns.ITopic | None = None,
        log_level: str = defaults.PIPE_LOG_LEVEL,
        log_retention: logs.RetentionDays = defaults.LOG_RETENTION,
        log_encryption_key: kms.IKey | None = None,
        removal_policy: RemovalPolicy = defaults.RECORD_REMOVAL_POLICY,
    ) -> None:
        change = ChangeEvents(
            filters, detail_type, key_attributes, new_image_attributes, old_image_attributes
        )
        outbox = (
            None
            if outbox_key_prefix is None
            else OutboxEvents(outbox_key_prefix, outbox_key_attribute)
        )
        super().__init__(
            scope,
            construct_id,
            table=table,
            source=source,
            pipe_events=outbox or change,
            event_bus=event_bus,
            filters=() if outbox else filters,
            batch_size=batch_size,
            max_batching_window=max_batching_window,
            retry_attempts=retry_attempts,
            max_record_age=max_record_age,
            parallelization_factor=parallelization_factor,
            extra_reader_reason=extra_reader_reason,
            dead_letter_queue=dead_letter_queue,
            alarm_topic=alarm_topic,
            log_level=log_level,
            log_retention=log_retention,
            log_encryption_key=log_encryption_key,
            removal_policy=removal_policy,
            problems=_outbox_conflicts(change) if outbox else (),
        )
        self.rules: dict[str, FanOutRule] = {}
        """The rules :meth:`add_rule` made, by id."""

    def add_rule(
        self,
        construct_id: str,
        *,
        event_pattern: events.EventPattern,
        target: Callable[[Mapping[str, Any]], events.IRuleTarget],
        dead_letter_queue: sqs.IQueue | None = None,
        description: str | None = None,
        removal_policy: RemovalPolicy = defaults.RECORD_REMOVAL_POLICY,
    ) -> FanOutRule:
        """A rule on the bus for one subscriber, with what a rule needs to lose nothing unseen.

        :param construct_id: the rule's id (made under this fan-out).
        :param event_pattern: the events it takes, e.g.
            ``events.EventPattern(source=["com.example.shop"], detail_type=["InvoiceDue"])``.
        :param target: makes the target from the keyword arguments every aws-cdk-lib target
            takes: ``lambda safety: targets.SqsQueue(queue, **safety)``. They are the
            dead-letter queue, retries (5, as the pipe's) and the maximum event age (1 hour):
            an event EventBridge cannot deliver goes to the queue instead of being dropped
            after its 24 hours of retries.
        :param dead_letter_queue: Default: a new queue (SQS-managed encryption, TLS-only, 14
            days, retained), as the pipe's.
        :param description: the rule's description. Default none.
        :param removal_policy: for the dead-letter queue made here. Default RETAIN.

        Alarms (to the fan-out's ``alarm_topic``): ``FailedInvocations`` and
        ``InvocationsFailedToBeSentToDlq`` (the rule's AWS/Events metrics, Sum >= 1: the second
        means an event is lost), ``DeadLetterQueue`` (>= 1 message) and ``DeadLetterQueueAge``
        (the oldest at 7 of the queue's 14 days). Returns the :class:`FanOutRule` (``rule``,
        ``dead_letter_queue``, ``alarms``), also in :attr:`rules`.
        """
        made = FanOutRule(
            self,
            construct_id,
            event_bus=self.event_bus,
            event_pattern=event_pattern,
            target=target,
            alarm_topic=self.alarm_topic,
            dead_letter_queue=dead_letter_queue,
            description=description,
            removal_policy=removal_policy,
        )
        self.rules[construct_id] = made
        return made


def _outbox_conflicts(change: ChangeEvents) -> list[Problem]:
    if not change.given:
        return []
    return [
        Problem(
            ", ".join(change.given),
            "given with outbox_key_prefix",
            "left out: outbox_key_prefix sets the filter, detail-type and detail itself",
        )
    ]


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
    if len(detail_type) > MAX_DETAIL_TYPE_LENGTH:
        return detail_type, [
            Problem(
                "detail_type",
                f"{len(detail_type)} characters",
                f"at most {MAX_DETAIL_TYPE_LENGTH} characters (EventBridge's limit)",
            )
        ]
    return detail_type, []


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
                    'a dict of attribute name -> type, e.g. {"pk": "S"}, or left out',
                )
            )
            continue
        members = []
        for name, attribute_type in attributes.items():
            if not isinstance(name, str) or not PATH_SEGMENT.match(name):
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
                members.append(
                    f"{json.dumps(name)}: {template_placeholder(image, name, attribute_type)}"
                )
        fields.append(f'"{field}": {{{", ".join(members)}}}')
    return "{" + ", ".join(fields) + "}", problems
