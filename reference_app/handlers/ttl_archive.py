"""TTL archive: every order DynamoDB's TTL deleted is written to S3, exactly once in effect.

Deployed behind a StreamConsumer whose filter admits only TTL deletions (REMOVE records with
``userIdentity {type: Service, principalId: dynamodb.amazonaws.com}``), so manual deletes never
reach it. Environment: ``ARCHIVE_BUCKET_NAME`` (the bucket; encrypted, lifecycle to cheaper
storage) besides the runtime's own variables.

Why ``side_effect`` and not ``projection``: S3 is outside DynamoDB, so the write cannot join the
processed-marker's transaction. The runtime claims the record (INPROGRESS) before the call and
completes it after, so a duplicate delivery of a completed record is skipped. The object's key
and body are functions of the stream record alone (no clock, no random id), so when a crash
between PutObject and COMPLETED makes the record run again, the second PutObject writes the
same bytes to the same key: the archive holds each expired order once.

Object key: ``expired-orders/YYYY/MM/DD/<key attributes>/<stream eventID>.json``, dated by the
deletion time (the record's ApproximateCreationDateTime). Body (JSON, keys sorted)::

    {"eventId": ..., "expiredAt": "<ISO-8601 UTC>", "sourceArn": ...,
     "keys": <DynamoDB JSON>, "oldImage": <DynamoDB JSON>}

The images stay in DynamoDB JSON, as DynamoDB's own S3 export writes them: lossless for 38-digit
numbers and sets. Binary values (``B``, ``BS``, at any depth) are base64 text, exactly as the
stream record carried them (``{"B": "AQID"}``), which is also how DynamoDB's export writes them;
a key attribute of type B appears in the object key as that base64 text, percent-encoded.
boto3's ``TypeDeserializer`` wants bytes for ``B``, so read an archived image back with
:func:`cdc_consumer.wire.deserialize_image` (binary as ``bytes``; see :func:`archived_item`),
or base64-decode the binary values before handing them to boto3.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import boto3
from cdc_consumer import Change, PermanentError, StreamProcessor
from cdc_consumer.wire import deserialize_image, to_wire
from orders_schema import ARCHIVE_BUCKET_ENV, ARCHIVE_PREFIX, TTL_ARCHIVE_CONSUMER

# A claim stays in progress 3 s (not the default 10 s): PutObject of one small JSON object
# takes milliseconds, and a call that outlived its claim and ran twice would write the same
# bytes to the same key. A retry after a crash then waits at most 3 s to take the claim over.
processor = StreamProcessor(TTL_ARCHIVE_CONSUMER, side_effect_timeout_ms=3_000)
_s3 = boto3.client("s3")  # created once per container; AWS_ENDPOINT_URL works locally


def _bucket() -> str:
    try:
        return os.environ[ARCHIVE_BUCKET_ENV]
    except KeyError:
        # Configuration, not a bad record: fail the batch (retried, then the on-failure queue).
        raise RuntimeError(
            f"{ARCHIVE_BUCKET_ENV} is not set; the TTL archive needs its bucket"
        ) from None


def _scalar(typed: dict[str, Any]) -> str:
    """A key attribute's value as text, exactly as DynamoDB sends it (S, N or base64 B)."""
    (value,) = to_wire(typed).values()
    return str(value)


def archive_object(record: Mapping[str, Any]) -> tuple[str, bytes]:
    """The S3 key and body for one TTL-deletion stream record; deterministic in the record."""
    stream = to_wire(record["dynamodb"])  # binary as base64 text even when given as bytes
    old_image = stream.get("OldImage")
    if not old_image:
        raise PermanentError(
            "TTL deletion without an OldImage: the stream view must be NEW_AND_OLD_IMAGES or "
            "OLD_IMAGE for the archive to have anything to keep"
        )
    deleted_at = datetime.fromtimestamp(int(stream["ApproximateCreationDateTime"]), UTC)
    keys = stream["Keys"]
    key_part = "&".join(
        f"{quote(name, safe='')}={quote(_scalar(keys[name]), safe='')}" for name in sorted(keys)
    )
    key = f"{ARCHIVE_PREFIX}{deleted_at:%Y/%m/%d}/{key_part}/{record['eventID']}.json"
    body = {
        "eventId": record["eventID"],
        "expiredAt": deleted_at.isoformat(),
        "sourceArn": record.get("eventSourceARN"),
        "keys": keys,
        "oldImage": old_image,
    }
    return key, json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def archived_item(body: bytes | str) -> dict[str, Any]:
    """The expired item an archive object holds, as Python values (numbers ``Decimal``, binary
    ``bytes``): the inverse of :func:`archive_object` for its ``oldImage``."""
    return deserialize_image(json.loads(body)["oldImage"])


@processor.side_effect(reads=["OldImage"])  # the expired item is the REMOVE's old image
def archive_expired_order(change: Change) -> None:
    if not change.is_ttl_expiry:
        # The filter should admit TTL deletions only; quarantine anything else rather than
        # archive a manual delete or drop the record silently.
        raise PermanentError(
            f"record {change.event_id} ({change.event_name}) is not a TTL deletion; check the "
            "consumer's filter (StreamFilters for TTL deletions only)"
        )
    key, body = archive_object(change.raw)
    _s3.put_object(Bucket=_bucket(), Key=key, Body=body, ContentType="application/json")


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return processor.handle(event, context)
