"""One DynamoDB change, decoded from a record of any route: :class:`Change`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, cast

from cdc_consumer.defaults import IMAGES_OF_VIEW_TYPE, NEW_IMAGE, OLD_IMAGE
from cdc_consumer.exceptions import MissingImageError, MissingVersionError, UndecodableRecordError
from cdc_consumer.expiry import TTL_PRINCIPAL, is_expiry
from cdc_consumer.routes import route_of
from cdc_consumer.routes.route import Route
from cdc_consumer.wire import deserialize_image

EventName = Literal["INSERT", "MODIFY", "REMOVE"]
EVENT_NAMES: frozenset[str] = frozenset({"INSERT", "MODIFY", "REMOVE"})

__all__ = ["EVENT_NAMES", "TTL_PRINCIPAL", "Change", "EventName"]


def _equal(change: Change, other: object) -> bool:
    if other.__class__ is not change.__class__:
        return NotImplemented
    return all(getattr(change, f) == getattr(other, f) for f in _FIELDS)


def _shown(change: Change) -> str:
    fields = ", ".join(f"{f}={getattr(change, f)!r}" for f in _FIELDS)
    return f"Change({fields})"


class Change:
    """A stream record with its attribute values deserialized: numbers become ``Decimal``,
    binary values (``B``, base64 text in Lambda's event) ``bytes`` and ``BS`` a set of
    ``bytes``, at any depth, in ``keys`` and both images (see :mod:`cdc_consumer.wire`).
    ``raw`` is the record exactly as delivered (binary still base64 text): what leaves the
    runtime (a quarantine message). ``is_snapshot``: a backfill's row (docs/backfill.md).

    ``new_image`` / ``old_image`` are ``None`` when the change has none (INSERT has no old
    image, REMOVE no new one); one the view type lacks raises :class:`MissingImageError`.

    ``keys`` and the images are decoded on first use (a projection reading only the NEW image
    pays for that one): a value that is not an attribute value raises
    :class:`UndecodableRecordError` (poison) when first read, naming the image. Read-only.
    """

    __slots__ = (
        "_keys",
        "_new_image",
        "_old_image",
        "_stream",
        "_time",
        "creation_time_us",
        "event_id",
        "event_name",
        "is_ttl_expiry",
        "raw",
        "sequence_number",
        "source_arn",
        "view_type",
    )

    is_snapshot = False  # True for a SnapshotChange (cdc_consumer.snapshots)
    event_id: str
    event_name: EventName
    sequence_number: str
    is_ttl_expiry: bool
    source_arn: str | None
    raw: Mapping[str, Any]
    creation_time_us: int | None
    """``ApproximateCreationDateTime`` in epoch microseconds (None when the record has none)."""
    view_type: str | None
    """``dynamodb.StreamViewType`` (KEYS_ONLY, NEW_IMAGE, ...); None when the record has none."""
    _stream: Any  # the record's "dynamodb" object, undecoded (None: built from decoded values)
    _keys: Any  # each decoded on first use (_UNDECODED until then)
    _new_image: Any
    _old_image: Any
    _time: datetime | None

    def __init__(
        self,
        event_id: str,
        event_name: EventName,
        keys: dict[str, Any],
        new_image: dict[str, Any] | None,
        old_image: dict[str, Any] | None,
        sequence_number: str,
        approximate_creation_time: datetime | None,
        is_ttl_expiry: bool,
        source_arn: str | None,
        raw: Mapping[str, Any],
        creation_time_us: int | None = None,
        view_type: str | None = None,
    ) -> None:
        """A Change of already-decoded values (:meth:`from_record` decodes a record lazily)."""
        set_ = object.__setattr__
        set_(self, "event_id", event_id)
        set_(self, "event_name", event_name)
        set_(self, "_keys", keys)
        set_(self, "_new_image", new_image)
        set_(self, "_old_image", old_image)
        set_(self, "_stream", None)
        set_(self, "sequence_number", sequence_number)
        set_(self, "_time", approximate_creation_time)
        set_(self, "is_ttl_expiry", is_ttl_expiry)
        set_(self, "source_arn", source_arn)
        set_(self, "raw", raw)
        set_(self, "creation_time_us", creation_time_us)
        set_(self, "view_type", view_type)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Change is read-only: cannot set {name!r}")

    def _decoded(self, slot: str, name: str) -> Any:  # an image, decoded on first use
        value = _image(self._stream, name, self.event_id)
        object.__setattr__(self, slot, value)
        return value

    @property
    def keys(self) -> dict[str, Any]:
        """The item's key attributes."""
        value = self._keys
        return self._decoded("_keys", "Keys") if value is _UNDECODED else value

    @property
    def new_image(self) -> dict[str, Any] | None:
        """The item after the change (None for REMOVE; see the class for a view type without)."""
        value = self._new_image
        if value is _UNDECODED or (value is None and self.view_type in _LACKING_NEW_IMAGE):
            return _first_read(self, "_new_image", NEW_IMAGE)
        return value

    @property
    def old_image(self) -> dict[str, Any] | None:
        """The item before the change (None for INSERT; see the class for a view type without)."""
        value = self._old_image
        if value is _UNDECODED or (value is None and self.view_type in _LACKING_OLD_IMAGE):
            return _first_read(self, "_old_image", OLD_IMAGE)
        return value

    @property
    def approximate_creation_time(self) -> datetime | None:
        """``ApproximateCreationDateTime`` as an aware UTC datetime (None when absent)."""
        return self._time

    def decode(self) -> Change:
        """Decode all the record carries now (raises as first use would, UndecodableRecordError)."""
        _ = self.keys, [self._decoded(*s) for s in _IMAGES if getattr(self, s[0]) is _UNDECODED]
        return self

    __eq__ = _equal
    __hash__ = None  # type: ignore[assignment]
    __repr__ = _shown

    @property
    def version(self) -> str:
        """The change's version: its creation time, then its sequence number as the tie-break
        (see :mod:`cdc_consumer.versions` for the format, and why it compares across routes).

        Raises :class:`MissingVersionError` (poison) when the record has no
        ``ApproximateCreationDateTime``: a projection that orders by version cannot place it.
        """
        return _version(self.creation_time_us, self.sequence_number, self.event_id, self.raw)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Change:
        """Decode a record as Lambda delivers it (``event["Records"][i]``) from any route
        (:mod:`cdc_consumer.routes`): a DynamoDB stream record, or a record whose data is a
        DynamoDB change (its sequence number is then its route's).

        Raises :class:`UndecodableRecordError` naming what is wrong when the record lacks
        ``eventID``, has an ``eventName`` other than INSERT/MODIFY/REMOVE, lacks
        ``dynamodb.Keys`` or its sequence number (or holds data that is not a DynamoDB change),
        or has an image that is not an object. A value that is not an attribute value (an
        unknown type, a number DynamoDB could not hold, binary that is not base64) raises when
        first read (see the class).
        """
        if type(record) is not dict and not _is_mapping(record):
            raise UndecodableRecordError(
                f"a stream record must be a JSON object, got {type(record).__name__}"
            )
        route = route_of(record)
        document = route.change_document(record)
        return cls._decode(document, record, route.item_identifier(record), route)

    @classmethod
    def _decode(
        cls,
        document: Mapping[str, Any],
        raw: Mapping[str, Any],
        sequence_number: str | None,
        route: Route,
    ) -> Change:
        """The Change of a DynamoDB change ``document`` (the record itself, or what it holds,
        as ``route`` decoded it); ``raw`` is the record as delivered. Images stay undecoded."""
        event_id, event_name, stream, sequence_number = _checked(document, sequence_number)
        creation_time_us, created = route.created(stream, event_id)
        new_image, old_image = stream.get("NewImage"), stream.get("OldImage")
        if not (type(new_image) is dict and type(old_image) in _IMAGE_TYPES):  # not the usual
            _check_images(event_id, new_image, old_image)
        # Built through _Building (no read-only __setattr__ in the way: ten times cheaper than
        # object.__setattr__ per field), then made a Change.
        change = _new(_Building)
        change.event_id = event_id
        change.event_name = event_name
        change._stream = stream
        change._keys = _UNDECODED
        change._new_image = None if new_image is None else _UNDECODED
        change._old_image = None if old_image is None else _UNDECODED
        change.sequence_number = sequence_number
        change._time = created
        change.is_ttl_expiry = event_name == "REMOVE" and is_expiry(
            document.get("userIdentity"), old_image, creation_time_us
        )
        change.source_arn = raw.get("eventSourceARN")
        change.raw = raw
        change.creation_time_us = creation_time_us
        change.view_type = stream.get("StreamViewType")
        change.__class__ = cls  # type: ignore[assignment]  # the built object becomes a Change
        return change


def _checked(
    document: Mapping[str, Any], sequence_number: str | None
) -> tuple[str, EventName, Mapping[str, Any], str]:
    """The record's eventID, eventName, ``dynamodb`` object and sequence number, each checked;
    :class:`UndecodableRecordError` (poison) naming the first that is not as DynamoDB sends."""
    event_id = document.get("eventID")
    if not isinstance(event_id, str) or not event_id:
        raise UndecodableRecordError(f"eventID must be a non-empty string, got {event_id!r}")
    event_name = document.get("eventName")
    if event_name not in EVENT_NAMES:
        raise UndecodableRecordError(
            f"eventName must be one of {sorted(EVENT_NAMES)}, got {event_name!r}"
        )
    stream: Any = document.get("dynamodb")
    if type(stream) is not dict and not _is_mapping(stream):
        raise UndecodableRecordError(
            f"record {event_id}: 'dynamodb' must be an object, got {stream!r}"
        )
    if sequence_number is None:
        raise UndecodableRecordError(
            f"record {event_id}: dynamodb.SequenceNumber must be a non-empty string, "
            f"got {stream.get('SequenceNumber')!r}"
        )
    keys = stream.get("Keys")
    if (type(keys) is not dict and not _is_mapping(keys)) or not keys:
        raise UndecodableRecordError(
            f"record {event_id}: dynamodb.Keys must be a non-empty object, got {keys!r}"
        )
    return event_id, cast(EventName, event_name), cast(Mapping[str, Any], stream), sequence_number


_FIELDS = (
    "event_id",
    "event_name",
    "keys",
    "new_image",
    "old_image",
    "sequence_number",
    "approximate_creation_time",
    "is_ttl_expiry",
    "source_arn",
)
"""What a Change is compared and shown by."""


def _version(
    creation_time_us: int | None, sequence_number: str, event_id: str, raw: Mapping[str, Any]
) -> str:
    if creation_time_us is None:
        raise MissingVersionError(
            f"record {sequence_number} (eventID {event_id}) has no "
            "dynamodb.ApproximateCreationDateTime, so it has no version: a version-guarded "
            "projection cannot order it"
        )
    return route_of(raw).version(creation_time_us, sequence_number)


class _Building(Change):
    """A :class:`Change` being built by :meth:`Change._decode`: the same slots, writable."""

    __slots__ = ()
    __setattr__ = object.__setattr__  # type: ignore[assignment]  # writable while being built


_new = object.__new__


#: In a Change's key or image slot: not decoded yet, read from its ``_stream`` on first use.
_UNDECODED: Any = object()


_IMAGES = (("_new_image", NEW_IMAGE), ("_old_image", OLD_IMAGE))
#: The view types whose records never carry the new (old) image. Reading it from such a record
#: raises :class:`MissingImageError`, whether the reader declared it in ``reads=`` or not: None
#: there would not mean "no image" but "this stream cannot tell", and a projection taking it for
#: the former would count every record as processed without its effect. A record that states no
#: view type is not judged.
_LACKING_NEW_IMAGE = frozenset(v for v, has in IMAGES_OF_VIEW_TYPE.items() if NEW_IMAGE not in has)
_LACKING_OLD_IMAGE = frozenset(v for v, has in IMAGES_OF_VIEW_TYPE.items() if OLD_IMAGE not in has)


def _first_read(change: Change, slot: str, image: str) -> dict[str, Any] | None:
    """The image decoded on its first read; :class:`MissingImageError` when the change's view
    type lacks it (the processor names the projection or side effect that read it,
    :meth:`MissingImageError.read_by`)."""
    if getattr(change, slot) is None:
        assert change.view_type is not None
        raise MissingImageError(change.sequence_number, change.view_type, [image], READER_UNKNOWN)
    return change._decoded(slot, image)


#: Who read the image, until the processor says which projection or side effect it was.
READER_UNKNOWN = "the code reading the Change"


#: The types of an image that need no check: an object from JSON, or absent.
_IMAGE_TYPES = (dict, type(None))


def _check_images(event_id: str, new_image: Any, old_image: Any) -> None:
    """:class:`UndecodableRecordError` when an image is present but not an object."""
    for name, image in (("NewImage", new_image), ("OldImage", old_image)):
        if image is not None and not _is_mapping(image):
            raise UndecodableRecordError(
                f"record {event_id}: dynamodb.{name} must be an object of attribute "
                f"values, got {image!r}"
            )


def _is_mapping(value: Any) -> bool:
    """isinstance(value, Mapping), with the common cases (a dict, from JSON, or None) first: the
    ABC check costs several times more."""
    return type(value) is dict or (value is not None and isinstance(value, Mapping))


def _image(stream: Mapping[str, Any], name: str, event_id: str) -> dict[str, Any] | None:
    """Decode one image (checked to be an object by :meth:`Change._decode`)."""
    image = stream.get(name)
    if image is None:
        return None
    try:
        return deserialize_image(image)
    # ArithmeticError: boto3's decimal context traps Overflow/Inexact/... for a number
    # DynamoDB could not hold (more than 38 digits, out of range).
    except (TypeError, ValueError, KeyError, AttributeError, ArithmeticError) as error:
        raise UndecodableRecordError(
            f"record {event_id}: dynamodb.{name} holds a value that is not a DynamoDB "
            f"attribute value ({error})"
        ) from error
