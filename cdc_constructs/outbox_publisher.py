"""OutboxPublisher: the publishing half of the transactional outbox (``cdc_consumer.sinks.outbox``).

The application writes its item and an outbox item in one TransactWriteItems; this pipe sends
only INSERTs of outbox items (a key-prefix filter) to an event bus, as events whose detail-type
is the outbox item's event type and whose detail is
:class:`cdc_consumer.sinks.outbox_shapes.OutboxEventDetail` (the outbox item's event attributes, its
stream event id and sequence number).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_events as events
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from cdc_consumer.sinks.outbox_shapes import OutboxEventDetail, OutboxItem
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.exceptions import Problem
from cdc_constructs.pipe import StreamPipe
from cdc_constructs.source_table import UNKNOWN_VIEW_TYPE, SourceTable
from cdc_constructs.validation import IMAGES_BY_VIEW_TYPE

__all__ = [
    "OutboxEvents",
    "OutboxPublisher",
]

# Pipes' JSON path subset: one segment of dot notation.
PATH_SEGMENT = re.compile(r"^[A-Za-z0-9_-]+$")


def template_placeholder(image: str, name: str, attribute_type: str) -> str:
    """A Pipes template placeholder for a top-level attribute of ``image``."""
    path = f"<$.dynamodb.{image}.{name}.{attribute_type}>"
    # Strings (S, and N: DynamoDB sends numbers as decimal strings) are quoted as Pipes asks;
    # BOOL is a JSON boolean and stays bare.
    return path if attribute_type == "BOOL" else f'"{path}"'


@dataclass(frozen=True)
class OutboxEvents:
    """Outbox items as events: the key-prefix filter, the template and the detail-type."""

    key_prefix: Any
    key_attribute: Any = defaults.OUTBOX_KEY_ATTRIBUTE

    @property
    def filter_patterns(self) -> list[dict[str, Any]]:
        return [
            {
                "eventName": ["INSERT"],
                "dynamodb": {"Keys": {self.key_attribute: {"S": [{"prefix": self.key_prefix}]}}},
            }
        ]

    @property
    def input_template(self) -> str:
        def new(name: str) -> str:
            return template_placeholder("NewImage", name, "S")

        detail = {
            **{
                name: new(name)
                for name in (
                    OutboxItem.EVENT_ID,
                    OutboxItem.EVENT_TYPE,
                    OutboxItem.OCCURRED_AT,
                    OutboxItem.PAYLOAD,
                )
            },
            OutboxEventDetail.STREAM_EVENT_ID: '"<$.eventID>"',
            OutboxEventDetail.SEQUENCE_NUMBER: '"<$.dynamodb.SequenceNumber>"',
        }
        return "{" + ", ".join(f'"{name}": {value}' for name, value in detail.items()) + "}"

    @property
    def event_detail_type(self) -> str:
        return f"$.dynamodb.NewImage.{OutboxItem.EVENT_TYPE}.S"

    def problems(self, stream_view_type: str | None) -> list[Problem]:
        found = []
        if not isinstance(self.key_prefix, str) or not self.key_prefix:
            found.append(
                Problem(
                    "outbox_key_prefix",
                    self.key_prefix,
                    'the outbox items\' key prefix, e.g. "OUTBOX#"',
                )
            )
        if not isinstance(self.key_attribute, str) or not PATH_SEGMENT.match(self.key_attribute):
            found.append(
                Problem(
                    "outbox_key_attribute",
                    self.key_attribute,
                    "the key attribute's name (letters, digits, '-', '_')",
                )
            )
        carried = IMAGES_BY_VIEW_TYPE.get(stream_view_type or UNKNOWN_VIEW_TYPE)
        if carried is not None and "NewImage" not in carried:
            found.append(
                Problem(
                    "outbox_key_prefix",
                    self.key_prefix,
                    "a table whose stream carries NewImage, where outbox events are read from; "
                    f"its view is {stream_view_type}: use NEW_AND_OLD_IMAGES (changing it "
                    "re-creates the stream)",
                )
            )
        return found


class OutboxPublisher(StreamPipe):
    """Publishes outbox items (``cdc_consumer.sinks.outbox``) from a table's stream to an event bus.

    :param table: the table the application writes its outbox items to (with a stream that
        carries NewImage).
    :param source: the events' ``source``, e.g. ``"com.example.app"``.
    :param key_prefix: the outbox items' key prefix, e.g. ``"OUTBOX#"`` (required).
    :param key_attribute: the key attribute the prefix applies to. Default ``"pk"`` (where
        ``cdc_consumer.sinks.outbox`` writes it).

    Every other prop (``event_bus``, ``batch_size``, ``max_batching_window``,
    ``retry_attempts``, ``max_record_age``, ``parallelization_factor``, ``extra_reader_reason``,
    ``dead_letter_queue``, ``alarm_topic``, ``log_level``, ``log_retention``,
    ``log_encryption_key``, ``removal_policy``) is as on
    :class:`~cdc_constructs.StreamFanOut`, with the same defaults.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: SourceTable,
        source: str,
        key_prefix: str,
        key_attribute: str = defaults.OUTBOX_KEY_ATTRIBUTE,
        event_bus: events.IEventBus | None = None,
        batch_size: int = defaults.FAN_OUT_BATCH_SIZE,
        max_batching_window: Any = None,
        retry_attempts: int = defaults.RETRY_ATTEMPTS,
        max_record_age: Any = None,
        parallelization_factor: int = defaults.PARALLELIZATION_FACTOR,
        extra_reader_reason: str | None = None,
        dead_letter_queue: sqs.IQueue | None = None,
        alarm_topic: sns.ITopic | None = None,
        log_level: str = defaults.PIPE_LOG_LEVEL,
        log_retention: logs.RetentionDays = defaults.LOG_RETENTION,
        log_encryption_key: kms.IKey | None = None,
        removal_policy: RemovalPolicy = defaults.RECORD_REMOVAL_POLICY,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            table=table,
            source=source,
            pipe_events=OutboxEvents(key_prefix, key_attribute),
            event_bus=event_bus,
            filters=(),
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
        )
