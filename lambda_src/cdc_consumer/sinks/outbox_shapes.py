"""The outbox item and the event the fan-out publishes for it.

Written by :class:`cdc_consumer.sinks.outbox.Outbox` in the application's transaction; read by the
fan-out's pipe (StreamFanOut for an outbox, OutboxPublisher), whose filter and input template name
these attributes. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Final

from cdc_consumer.message_fields import as_object, require_field

__all__ = [
    "OUTBOX_KEY_PREFIX",
    "OutboxEventDetail",
    "OutboxItem",
]


OUTBOX_KEY_PREFIX: Final = "OUTBOX#"
"""Key prefix that marks outbox items; the fan-out's filter lets only these INSERTs through."""


@dataclass(frozen=True)
class OutboxItem:
    """An outbox item's event attributes (the key and TTL attributes are the table's own)."""

    event_id: str
    event_type: str
    payload: str
    """JSON text."""
    occurred_at: str
    """ISO-8601 UTC."""

    EVENT_ID: ClassVar[str] = "eventId"
    EVENT_TYPE: ClassVar[str] = "eventType"
    PAYLOAD: ClassVar[str] = "payload"
    OCCURRED_AT: ClassVar[str] = "occurredAt"

    def to_dict(self) -> dict[str, str]:
        return {
            self.EVENT_ID: self.event_id,
            self.EVENT_TYPE: self.event_type,
            self.PAYLOAD: self.payload,
            self.OCCURRED_AT: self.occurred_at,
        }

    @classmethod
    def from_dict(cls, document: Any) -> OutboxItem:
        what = "outbox item"
        document = as_object(document, what)
        return cls(
            event_id=str(require_field(document, cls.EVENT_ID, what)),
            event_type=str(require_field(document, cls.EVENT_TYPE, what)),
            payload=str(require_field(document, cls.PAYLOAD, what)),
            occurred_at=str(require_field(document, cls.OCCURRED_AT, what)),
        )

    @classmethod
    def attributes(cls) -> tuple[str, ...]:
        """The attribute names, in item order."""
        return (cls.EVENT_ID, cls.EVENT_TYPE, cls.PAYLOAD, cls.OCCURRED_AT)


@dataclass(frozen=True)
class OutboxEventDetail:
    """The ``detail`` of the event the outbox's pipe publishes for one outbox item: the item's
    event attributes, plus where the item's INSERT was in the stream."""

    item: OutboxItem
    stream_event_id: str
    sequence_number: str

    STREAM_EVENT_ID: ClassVar[str] = "streamEventId"
    SEQUENCE_NUMBER: ClassVar[str] = "sequenceNumber"

    def to_dict(self) -> dict[str, str]:
        return {
            **self.item.to_dict(),
            self.STREAM_EVENT_ID: self.stream_event_id,
            self.SEQUENCE_NUMBER: self.sequence_number,
        }

    @classmethod
    def from_dict(cls, document: Any) -> OutboxEventDetail:
        what = "outbox event detail"
        document = as_object(document, what)
        return cls(
            item=OutboxItem.from_dict(document),
            stream_event_id=str(require_field(document, cls.STREAM_EVENT_ID, what)),
            sequence_number=str(require_field(document, cls.SEQUENCE_NUMBER, what)),
        )
