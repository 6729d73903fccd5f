"""One DynamoDB stream record, decoded: :class:`Change`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from cdc_consumer.exceptions import UndecodableRecordError
from cdc_consumer.wire import deserialize_image

EventName = Literal["INSERT", "MODIFY", "REMOVE"]
EVENT_NAMES: frozenset[str] = frozenset({"INSERT", "MODIFY", "REMOVE"})

#: The identity DynamoDB puts on the REMOVE records of items its TTL process deleted.
TTL_PRINCIPAL = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


@dataclass(frozen=True)
class Change:
    """A stream record with its attribute values deserialized: numbers become ``Decimal``,
    binary values (``B``, base64 text in Lambda's event) ``bytes`` and ``BS`` a set of
    ``bytes``, at any depth, in ``keys`` and both images (see :mod:`cdc_consumer.wire`).
    ``raw`` is the record exactly as delivered (binary still base64 text): it is what leaves
    the runtime, in a quarantine message for instance.

    ``new_image`` / ``old_image`` are ``None`` when the record does not carry them (INSERT has
    no old image, REMOVE no new one, and the stream's view type may omit either).
    """

    event_id: str
    event_name: EventName
    keys: dict[str, Any]
    new_image: dict[str, Any] | None
    old_image: dict[str, Any] | None
    sequence_number: str
    approximate_creation_time: datetime | None
    is_ttl_expiry: bool
    source_arn: str | None
    raw: Mapping[str, Any] = field(repr=False, compare=False)
    #: ``dynamodb.StreamViewType`` (KEYS_ONLY, NEW_IMAGE, OLD_IMAGE, NEW_AND_OLD_IMAGES), or
    #: None when the record does not say.
    view_type: str | None = None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Change:
        """Decode a record as Lambda delivers it (``event["Records"][i]``).

        Raises :class:`UndecodableRecordError` naming what is wrong when the record lacks
        ``eventID``, has an ``eventName`` other than INSERT/MODIFY/REMOVE, lacks
        ``dynamodb.Keys`` or ``dynamodb.SequenceNumber``, or holds an attribute value that is
        not one (an unknown type, a number DynamoDB could not hold, binary that is not base64).
        """
        if not isinstance(record, Mapping):
            raise UndecodableRecordError(
                f"a stream record must be a JSON object, got {type(record).__name__}"
            )
        event_id = record.get("eventID")
        if not isinstance(event_id, str) or not event_id:
            raise UndecodableRecordError(f"eventID must be a non-empty string, got {event_id!r}")
        event_name = record.get("eventName")
        if event_name not in EVENT_NAMES:
            raise UndecodableRecordError(
                f"eventName must be one of {sorted(EVENT_NAMES)}, got {event_name!r}"
            )
        stream = record.get("dynamodb")
        if not isinstance(stream, Mapping):
            raise UndecodableRecordError(
                f"record {event_id}: 'dynamodb' must be an object, got {stream!r}"
            )
        sequence_number = stream.get("SequenceNumber")
        if not isinstance(sequence_number, str) or not sequence_number:
            raise UndecodableRecordError(
                f"record {event_id}: dynamodb.SequenceNumber must be a non-empty string, "
                f"got {sequence_number!r}"
            )
        if not isinstance(stream.get("Keys"), Mapping) or not stream["Keys"]:
            raise UndecodableRecordError(
                f"record {event_id}: dynamodb.Keys must be a non-empty object, "
                f"got {stream.get('Keys')!r}"
            )
        return cls(
            event_id=event_id,
            event_name=event_name,
            keys=_image(stream, "Keys", event_id),  # type: ignore[arg-type]
            new_image=_image(stream, "NewImage", event_id),
            old_image=_image(stream, "OldImage", event_id),
            sequence_number=sequence_number,
            approximate_creation_time=_creation_time(stream, event_id),
            is_ttl_expiry=event_name == "REMOVE" and _is_ttl_identity(record.get("userIdentity")),
            source_arn=record.get("eventSourceARN"),
            raw=record,
            view_type=stream.get("StreamViewType"),
        )


def _image(stream: Mapping[str, Any], name: str, event_id: str) -> dict[str, Any] | None:
    image = stream.get(name)
    if image is None:
        return None
    if not isinstance(image, Mapping):
        raise UndecodableRecordError(
            f"record {event_id}: dynamodb.{name} must be an object of attribute values, "
            f"got {image!r}"
        )
    try:
        return deserialize_image(image)
    # ArithmeticError: boto3's decimal context traps Overflow/Inexact/... for a number
    # DynamoDB could not hold (more than 38 digits, out of range).
    except (TypeError, ValueError, KeyError, AttributeError, ArithmeticError) as error:
        raise UndecodableRecordError(
            f"record {event_id}: dynamodb.{name} holds a value that is not a DynamoDB "
            f"attribute value ({error})"
        ) from error


def _creation_time(stream: Mapping[str, Any], event_id: str) -> datetime | None:
    value = stream.get("ApproximateCreationDateTime")
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(float(value), tz=UTC)
    except (TypeError, ValueError, OverflowError) as error:
        raise UndecodableRecordError(
            f"record {event_id}: dynamodb.ApproximateCreationDateTime must be epoch seconds, "
            f"got {value!r}"
        ) from error


def _is_ttl_identity(identity: Any) -> bool:
    return isinstance(identity, Mapping) and all(
        identity.get(name) == value for name, value in TTL_PRINCIPAL.items()
    )
