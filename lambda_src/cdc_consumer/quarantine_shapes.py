"""The quarantine message: a poison record, whole, with its error (docs/interfaces.md §4).

The runtime (:mod:`cdc_consumer.quarantine`) sends it; the redrive reads it back and replays its
record; the local pipeline keeps it. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from cdc_consumer.message_fields import ContractError, as_object, require_field
from cdc_consumer.windows import SHARD_ID_KEY

__all__ = [
    "QUARANTINE_MESSAGE_VERSION",
    "QUARANTINE_S3_PREFIX",
    "ErrorDescription",
    "QuarantineMessage",
]


QUARANTINE_S3_PREFIX: Final = "cdc-quarantine/"
"""Where the runtime keeps quarantined records too big for a message:
``cdc-quarantine/<consumer>/<eventID>-<uuid>.json``, each the whole quarantine message."""


def _shard(value: Any, what: str) -> str | None:
    if value is None or (isinstance(value, str) and value):
        return value
    raise ContractError(f"{what}'s {SHARD_ID_KEY} is {value!r}; expected a shard id or none")


QUARANTINE_MESSAGE_VERSION: Final = "1"


@dataclass(frozen=True)
class ErrorDescription:
    """An exception as logs and quarantine messages carry it."""

    type: str
    message: str

    @classmethod
    def of(cls, error: BaseException) -> ErrorDescription:
        return cls(type(error).__name__, str(error))

    def to_dict(self) -> dict[str, str]:
        return {"type": self.type, "message": self.message}

    @classmethod
    def from_dict(cls, document: Any) -> ErrorDescription:
        document = as_object(document, "error")
        return cls(str(document.get("type", "")), str(document.get("message", "")))


@dataclass(frozen=True)
class QuarantineMessage:
    """The body of a quarantine-queue message: a poison record, whole, with its error.

    The runtime sends it; redrive reads it back and replays ``record`` (the stream record
    exactly as Lambda delivered it, binary values base64-encoded).

    ``record_location`` (``{"bucket": ..., "key": ...}``): the message is too big for a queue
    (:data:`MAX_QUEUE_MESSAGE_BYTES`), so the whole message is kept in that object and this one
    carries the record without its images (keys, sequence number, times: enough to order it)."""

    consumer: str | None
    source_arn: str | None
    error: ErrorDescription | None
    record: Any
    quarantined_at: str
    """ISO-8601 UTC, milliseconds."""
    version: str = QUARANTINE_MESSAGE_VERSION
    record_location: Mapping[str, str] | None = None
    shard_id: str | None = None
    """The shard the record was delivered from (:data:`SHARD_ID_KEY`), when its event said: the
    redrive replays it with it, so it is looked up in the ledger lane it would be committed in.
    None in messages written before shards were kept, and for records delivered without one."""

    RECORD_LOCATION: ClassVar[str] = "recordLocation"

    def to_dict(self) -> dict[str, Any]:
        document = {
            "version": self.version,
            "consumer": self.consumer,
            "sourceArn": self.source_arn,
            "error": self.error.to_dict() if self.error is not None else None,
            "record": self.record,
            "quarantinedAt": self.quarantined_at,
        }
        if self.record_location is not None:
            document[self.RECORD_LOCATION] = dict(self.record_location)
        if self.shard_id is not None:
            document[SHARD_ID_KEY] = self.shard_id
        return document

    @classmethod
    def from_dict(cls, document: Any) -> QuarantineMessage:
        """Raises :class:`ContractError` when ``record`` is missing or not an object."""
        what = "quarantine message"
        document = as_object(document, what)
        record = as_object(require_field(document, "record", what), f"{what}'s record")
        error = document.get("error")
        location = document.get(cls.RECORD_LOCATION)
        if location is not None and not (
            isinstance(location, Mapping)
            and all(isinstance(location.get(k), str) and location.get(k) for k in ("bucket", "key"))
        ):
            raise ContractError(
                f"{what}'s {cls.RECORD_LOCATION} is {location!r}; expected"
                ' {"bucket": <name>, "key": <key>}'
            )
        return cls(
            consumer=document.get("consumer"),
            source_arn=document.get("sourceArn"),
            error=ErrorDescription.from_dict(error) if isinstance(error, Mapping) else None,
            record=dict(record),
            quarantined_at=str(document.get("quarantinedAt", "")),
            version=str(document.get("version", QUARANTINE_MESSAGE_VERSION)),
            record_location=dict(location) if location is not None else None,
            shard_id=_shard(document.get(SHARD_ID_KEY), what),
        )
