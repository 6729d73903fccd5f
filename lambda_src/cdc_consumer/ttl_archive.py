"""The TTL archive's consumer: every item DynamoDB's TTL expires, kept once in S3.

The ``TtlArchive`` construct deploys this module as its function's handler
(:data:`~cdc_consumer.handler_paths.TTL_ARCHIVE_HANDLER`), behind a mapping whose filter admits TTL
deletions only (``StreamFilters.ttl_deletions_only()``; on a table with replicas the runtime
also tells the replicated expiries, :mod:`cdc_consumer.expiry`). Nothing to write: the
construct sets the variables of
:data:`~cdc_consumer.environment_variables.ARCHIVE_ENVIRONMENT`. In a consumer group (one
function for several consumers) hand :func:`archive_processor` to the group beside the other
members.

**One object per expired item, written once.** The object's key is a function of the table's
name, the item's key and its TTL value (:func:`archive_key`), never of the stream record (its
``eventID`` and creation time differ between two regions of a global table and between a
record and a copy of it). PutObject is conditional (``If-None-Match: *``): when the key exists,
S3 refuses the write (412) and the archive counts the item as already kept. A redelivery, a
redrive in another cut, or the same expiry seen in a second region writing to the same bucket
therefore never makes a second copy, nor a second version in a versioned bucket. The body is a
function of the same values and the old image, so even two writes racing past the condition
(S3 answers the second 409, retried as a transient error, then 412) would hold the same bytes.

**Why StreamProcessor's side-effect mode** and not a handler of its own: it brings what every
consumer has (in order, stop at the first failure, a poison record quarantined whole with its
error, metrics, the deadline, consumer groups, redrive), and S3 is not DynamoDB, so the write
cannot join a transaction with a ledger entry; a side effect is the runtime's kind for an
external call. Its claim (two small writes to the idempotency table a record) skips the PUT of
a record redelivered after it completed; the conditional write makes the rest exact, including
a crash between the PUT and the claim's completion, which the claim alone would turn into a
second PUT.

**Layout** (docs/constructs.md, "TtlArchive": the Athena table over it)::

    <prefix>table=<table name>/expiry_date=<YYYY-MM-DD>/<key>@<ttl>.json

``<key>`` is ``name=value`` per key attribute, sorted by name and joined by ``&``, names and
values percent-encoded (a binary value as its base64 text); a key longer than S3's 1,024 bytes
is replaced by ``sha256=<hex>`` of it. ``expiry_date`` is the UTC date of the TTL value. The
body is one line of JSON (JSON lines: one item a file)::

    {"keys": <DynamoDB JSON>, "expires_at": <epoch seconds>, "old_image": <DynamoDB JSON>}

Images stay in DynamoDB JSON, as DynamoDB's own export to S3 writes them: lossless for 38-digit
numbers and sets; binary values (``B``, ``BS``, at any depth) as base64 text. Read one back with
:func:`archived_item` (binary as ``bytes``, numbers as ``Decimal``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import boto3
from botocore.exceptions import ClientError

from cdc_consumer import defaults, environment_variables
from cdc_consumer.change import Change
from cdc_consumer.exceptions import ConfigurationError, PermanentError
from cdc_consumer.processor import StreamProcessor
from cdc_consumer.wire import deserialize_image, to_wire

if TYPE_CHECKING:
    from cdc_consumer.batch import LambdaContext

__all__ = [
    "MAX_KEY_BYTES",
    "SIDE_EFFECT_NAME",
    "ArchiveObject",
    "TtlArchiver",
    "archive_key",
    "archive_object",
    "archive_processor",
    "archived_item",
    "handler",
]

#: S3's longest object key, in UTF-8 bytes.
MAX_KEY_BYTES = 1024

#: The side effect's name: part of each record's claim id (``{consumer}#{eventID}#ttl-archive``).
SIDE_EFFECT_NAME = "ttl-archive"

#: A claim stays in progress 3 s (not the runtime's 10 s): PutObject of one small object takes
#: milliseconds, and a call that outlived its claim writes nothing twice (the write is
#: conditional). A retry after a crash then waits at most 3 s to take the claim over.
CLAIM_TIMEOUT_MS = 3_000

_CONTENT_TYPE = "application/json"
_ALREADY_KEPT = "PreconditionFailed"  # S3's answer to If-None-Match on an existing key


@dataclass(frozen=True)
class ArchiveObject:
    """One expired item's object: its key and its body (one line of JSON)."""

    key: str
    body: bytes


def _scalar(typed: Mapping[str, Any]) -> str:
    """A key attribute's value as text, as DynamoDB sends it (S, N, or B as base64)."""
    (value,) = to_wire(dict(typed)).values()
    return str(value)


def _expiry_seconds(old_image: Mapping[str, Any], ttl_attribute: str) -> int:
    """The item's TTL value (whole epoch seconds); PermanentError when it has none."""
    typed = old_image.get(ttl_attribute)
    number = typed.get("N") if isinstance(typed, Mapping) else None
    try:
        seconds = Decimal(number)  # type: ignore[arg-type]
    except (InvalidOperation, TypeError, ValueError):
        seconds = Decimal("NaN")
    if not seconds.is_finite():
        raise PermanentError(
            f"the expired item has no Number TTL attribute {ttl_attribute!r} (got {typed!r}): "
            "DynamoDB's TTL deletes only items that have one; set the archive's "
            "time_to_live_attribute to the table's TTL attribute"
        )
    return int(seconds)


def archive_key(prefix: str, table: str, keys: Mapping[str, Any], expires_at: int) -> str:
    """The object key of the item with ``keys`` (DynamoDB JSON) of ``table`` that expired at
    ``expires_at`` (epoch seconds): the same wherever and however often the expiry is seen."""
    day = datetime.fromtimestamp(expires_at, UTC)
    folder = f"{prefix}table={quote(table, safe='')}/expiry_date={day:%Y-%m-%d}/"
    item = "&".join(
        f"{quote(name, safe='')}={quote(_scalar(keys[name]), safe='')}" for name in sorted(keys)
    )
    key = f"{folder}{item}@{expires_at}.json"
    if len(key.encode()) > MAX_KEY_BYTES:
        key = f"{folder}sha256={hashlib.sha256(item.encode()).hexdigest()}@{expires_at}.json"
    return key


def archive_object(
    record: Mapping[str, Any], *, table: str, ttl_attribute: str, prefix: str = ""
) -> ArchiveObject:
    """The object for one TTL-deletion stream record; a function of the table, the item's key,
    its TTL value and its old image only. :class:`PermanentError` when the record has no old
    image or the image no TTL value."""
    stream = to_wire(dict(record["dynamodb"]))  # binary as base64 text even when given as bytes
    old_image = stream.get(defaults.OLD_IMAGE)
    if not old_image:
        raise PermanentError(
            "TTL deletion without an OldImage: the stream view must be NEW_AND_OLD_IMAGES or "
            "OLD_IMAGE for the archive to have anything to keep"
        )
    expires_at = _expiry_seconds(old_image, ttl_attribute)
    keys = stream["Keys"]
    body = {"keys": keys, "expires_at": expires_at, "old_image": old_image}
    text = json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n"
    return ArchiveObject(archive_key(prefix, table, keys, expires_at), text.encode())


def archived_item(body: bytes | str) -> dict[str, Any]:
    """The expired item an archive object holds, as Python values (numbers ``Decimal``, binary
    ``bytes``): the inverse of :func:`archive_object` for its ``old_image``."""
    return deserialize_image(json.loads(body)["old_image"])


def _setting(name: str, given: str | None, *, default: str | None = None) -> str:
    """``given``, else the variable ``environment_variables.<name>`` names, else ``default``;
    :class:`ConfigurationError` when none (or an empty value without a default)."""
    env = getattr(environment_variables, name)
    value = given if given is not None else os.environ.get(env, default)
    if value is None or (not value and default is None):
        raise ConfigurationError(
            f"{env} is not set: the TTL archive needs it (the TtlArchive construct sets it)"
        )
    return value


class TtlArchiver:
    """The side effect: writes one expired item's object, conditionally (module docstring).

    Each setting is given, or read at the first call from the variable the construct sets:
    ``bucket`` (``CDC_ARCHIVE_BUCKET``), ``prefix`` (``CDC_ARCHIVE_PREFIX``, default empty),
    ``table`` (``CDC_ARCHIVE_TABLE``), ``ttl_attribute`` (``CDC_ARCHIVE_TTL_ATTRIBUTE``).
    ``s3_client``: default ``boto3.client("s3")``, made on first use.
    """

    reads = (defaults.OLD_IMAGE,)  # the expired item is the REMOVE's old image

    def __init__(
        self,
        *,
        bucket: str | None = None,
        prefix: str | None = None,
        table: str | None = None,
        ttl_attribute: str | None = None,
        s3_client: Any = None,
    ) -> None:
        self.bucket, self.prefix, self.table = bucket, prefix, table
        self.ttl_attribute = ttl_attribute
        self._s3 = s3_client
        #: Objects this archiver found already kept (a redelivery, another region's copy).
        self.already_kept = 0

    @property
    def s3(self) -> Any:
        if self._s3 is None:
            self._s3 = boto3.client("s3", config=defaults.CLIENT_CONFIG)
        return self._s3

    def __call__(self, change: Change) -> None:
        if not change.is_ttl_expiry:
            # The filter admits TTL deletions only: quarantine anything else rather than archive
            # a user's delete or drop the record silently.
            raise PermanentError(
                f"record {change.event_id} ({change.event_name}) is not a TTL deletion; the "
                "archive's filter must be StreamFilters.ttl_deletions_only()"
            )
        found = archive_object(
            change.raw,
            table=_setting("ARCHIVE_TABLE_ENV", self.table),
            ttl_attribute=_setting("ARCHIVE_TTL_ATTRIBUTE_ENV", self.ttl_attribute),
            prefix=_setting("ARCHIVE_PREFIX_ENV", self.prefix, default=""),
        )
        bucket = _setting("ARCHIVE_BUCKET_ENV", self.bucket)
        try:
            self.s3.put_object(
                Bucket=bucket,
                Key=found.key,
                Body=found.body,
                ContentType=_CONTENT_TYPE,
                IfNoneMatch="*",
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != _ALREADY_KEPT:
                raise  # 409 (a concurrent write of the key), throttling: retried
            self.already_kept += 1


def archive_processor(
    consumer_name: str | None = None,
    *,
    archiver: TtlArchiver | None = None,
    **processor_options: Any,
) -> StreamProcessor:
    """A :class:`StreamProcessor` whose one side effect is the archive (``archiver``, default a
    :class:`TtlArchiver` reading its settings from the environment). ``consumer_name`` and
    ``processor_options`` are the processor's (default name: ``CDC_CONSUMER_NAME``); the
    side-effect timeout defaults to :data:`CLAIM_TIMEOUT_MS`."""
    processor_options.setdefault("side_effect_timeout_ms", CLAIM_TIMEOUT_MS)
    processor = StreamProcessor(consumer_name, **processor_options)
    processor.side_effect(archiver or TtlArchiver(), name=SIDE_EFFECT_NAME)
    return processor


_processor: StreamProcessor | None = None


def handler(event: Mapping[str, Any], context: LambdaContext | None = None) -> dict[str, Any]:
    """The Lambda entry point of the TtlArchive's function."""
    global _processor
    if _processor is None:
        _processor = archive_processor()
    return _processor.handle(event, context)
