"""One DynamoDB stream record, decoded: :class:`Change`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from cdc_consumer.exceptions import MissingVersionError, UndecodableRecordError
from cdc_consumer.kinesis import decode_data, is_kinesis_record, kinesis_sequence_number
from cdc_consumer.versions import format_version, kinesis_time_to_us, seconds_to_us
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

    creation_time_us: int | None = field(default=None, repr=False, compare=False)
    """``ApproximateCreationDateTime`` in epoch microseconds (None when the record has none)."""

    view_type: str | None = None
    """``dynamodb.StreamViewType`` (KEYS_ONLY, NEW_IMAGE, OLD_IMAGE, NEW_AND_OLD_IMAGES), or None
    when the record does not say."""

    @property
    def version(self) -> str:
        """The change's version: its creation time, then its sequence number as the tie-break
        (see :mod:`cdc_consumer.versions` for the format and why); compare versions as strings.

        Raises :class:`MissingVersionError` (poison) when the record has no
        ``ApproximateCreationDateTime``: a projection that orders by version cannot place it.
        """
        if self.creation_time_us is None:
            raise MissingVersionError(
                f"record {self.sequence_number} (eventID {self.event_id}) has no "
                "dynamodb.ApproximateCreationDateTime, so it has no version: a version-guarded "
                "projection cannot order it"
            )
        return format_version(self.creation_time_us, self.sequence_number)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Change:
        """Decode a record as Lambda delivers it (``event["Records"][i]``): a DynamoDB stream
        record, or a Kinesis record whose data is a DynamoDB change (:mod:`cdc_consumer.kinesis`;
        its sequence number is then the Kinesis one).

        Raises :class:`UndecodableRecordError` naming what is wrong when the record lacks
        ``eventID``, has an ``eventName`` other than INSERT/MODIFY/REMOVE, lacks
        ``dynamodb.Keys`` or ``dynamodb.SequenceNumber`` (a Kinesis record: ``sequenceNumber``,
        or data that is not a DynamoDB change), or holds an attribute value that is not one (an
        unknown type, a number DynamoDB could not hold, binary that is not base64).
        """
        if not isinstance(record, Mapping):
            raise UndecodableRecordError(
                f"a stream record must be a JSON object, got {type(record).__name__}"
            )
        if is_kinesis_record(record):
            sequence_number = kinesis_sequence_number(record)
            if sequence_number is None:
                raise UndecodableRecordError(
                    f"Kinesis record: kinesis.sequenceNumber must be a non-empty string, "
                    f"got {record.get('kinesis', {}).get('sequenceNumber')!r}"
                )
            return cls._decode(decode_data(record), record, sequence_number, _kinesis_time_us)
        stream = record.get("dynamodb")
        sequence_number = stream.get("SequenceNumber") if isinstance(stream, Mapping) else None
        if not isinstance(sequence_number, str) or not sequence_number:
            sequence_number = None
        return cls._decode(record, record, sequence_number, _stream_time_us)

    @classmethod
    def _decode(
        cls,
        document: Mapping[str, Any],
        raw: Mapping[str, Any],
        sequence_number: str | None,
        time_us: Any,
    ) -> Change:
        """The Change of a DynamoDB change ``document`` (the record itself, or a Kinesis
        record's data); ``raw`` is the record as delivered."""
        event_id = document.get("eventID")
        if not isinstance(event_id, str) or not event_id:
            raise UndecodableRecordError(f"eventID must be a non-empty string, got {event_id!r}")
        event_name = document.get("eventName")
        if event_name not in EVENT_NAMES:
            raise UndecodableRecordError(
                f"eventName must be one of {sorted(EVENT_NAMES)}, got {event_name!r}"
            )
        stream = document.get("dynamodb")
        if not isinstance(stream, Mapping):
            raise UndecodableRecordError(
                f"record {event_id}: 'dynamodb' must be an object, got {stream!r}"
            )
        if sequence_number is None:
            raise UndecodableRecordError(
                f"record {event_id}: dynamodb.SequenceNumber must be a non-empty string, "
                f"got {stream.get('SequenceNumber')!r}"
            )
        if not isinstance(stream.get("Keys"), Mapping) or not stream["Keys"]:
            raise UndecodableRecordError(
                f"record {event_id}: dynamodb.Keys must be a non-empty object, "
                f"got {stream.get('Keys')!r}"
            )
        creation_time_us = time_us(stream, event_id)
        return cls(
            event_id=event_id,
            event_name=event_name,
            keys=_image(stream, "Keys", event_id),  # type: ignore[arg-type]
            new_image=_image(stream, "NewImage", event_id),
            old_image=_image(stream, "OldImage", event_id),
            sequence_number=sequence_number,
            approximate_creation_time=None
            if creation_time_us is None
            else datetime.fromtimestamp(creation_time_us / 1_000_000, tz=UTC),
            is_ttl_expiry=event_name == "REMOVE" and _is_ttl_identity(document.get("userIdentity")),
            source_arn=raw.get("eventSourceARN"),
            raw=raw,
            creation_time_us=creation_time_us,
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


def _stream_time_us(stream: Mapping[str, Any], event_id: str) -> int | None:
    """A DynamoDB stream record's ApproximateCreationDateTime (epoch seconds) in microseconds."""
    value = stream.get("ApproximateCreationDateTime")
    if value is None:
        return None
    try:
        time_us = seconds_to_us(value)
        datetime.fromtimestamp(time_us / 1_000_000, tz=UTC)  # in datetime's range
    except (TypeError, ValueError, ArithmeticError, OverflowError, OSError) as error:
        raise UndecodableRecordError(
            f"record {event_id}: dynamodb.ApproximateCreationDateTime must be epoch seconds, "
            f"got {value!r}"
        ) from error
    return time_us


def _kinesis_time_us(stream: Mapping[str, Any], event_id: str) -> int | None:
    """A Kinesis record's ApproximateCreationDateTime (milli- or microseconds) in microseconds."""
    value = stream.get("ApproximateCreationDateTime")
    if value is None:
        return None
    try:
        time_us = kinesis_time_to_us(value)
        datetime.fromtimestamp(time_us / 1_000_000, tz=UTC)  # in datetime's range
    except (ValueError, ArithmeticError, OverflowError, OSError) as error:
        raise UndecodableRecordError(
            f"record {event_id}: dynamodb.ApproximateCreationDateTime must be epoch milli- or "
            f"microseconds, got {value!r} ({error})"
        ) from error
    return time_us


def _is_ttl_identity(identity: Any) -> bool:
    return isinstance(identity, Mapping) and all(
        identity.get(name) == value for name, value in TTL_PRINCIPAL.items()
    )
