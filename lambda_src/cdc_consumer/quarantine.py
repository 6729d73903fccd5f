"""The quarantine queue: where poison records go, whole, with the error that condemned them.

Message body: :class:`cdc_consumer.quarantine_shapes.QuarantineMessage` (read back by redrive).

The record keeps its wire form: binary values (``B``, ``BS``) are base64 text, as in Lambda's
event, so redrive replays it as Lambda would deliver it (a record built in process with
``bytes`` is written with those bytes as base64 too, see :func:`cdc_consumer.wire.to_wire`).

**Any record, whatever its size.** A queue refuses a message over its ``MaximumMessageSize``
(:data:`~cdc_consumer.service_limits.MAX_QUEUE_MESSAGE_BYTES`, SQS's 256 KiB default), and a record
can be larger (a DynamoDB item reaches 400 KB, a record carries two images, binary is base64).
Such a message is measured here, before the send, and kept whole as an object of the consumer's
quarantine bucket (``QUARANTINE_BUCKET_NAME``, under ``cdc-quarantine/<consumer>/``); the queue
gets a pointer (``recordLocation``) with the record's keys, sequence number and times, enough
for a redrive to order it and to fetch the rest. A redrive replays it like any other and deletes
the object with the message. Counted as any quarantined record (``RecordsQuarantined``).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.environment_variables import QUARANTINE_BUCKET_ENV
from cdc_consumer.exceptions import TransientError, UndecodableRecordError
from cdc_consumer.quarantine_shapes import QUARANTINE_S3_PREFIX, ErrorDescription, QuarantineMessage
from cdc_consumer.routes import route_of
from cdc_consumer.service_limits import MAX_QUEUE_MESSAGE_BYTES
from cdc_consumer.wire import dumps, to_wire

#: What a pointer message keeps of a record's ``dynamodb`` section: never an image.
_POINTER_FIELDS = ("Keys", "SequenceNumber", "ApproximateCreationDateTime", "StreamViewType")


def quarantine_message(
    consumer: str,
    record: Any,
    error: BaseException,
    now: datetime | None = None,
    shard: str | None = None,
) -> dict[str, Any]:
    """The message body for ``record`` failing with ``error``
    (:class:`~cdc_consumer.quarantine_shapes.QuarantineMessage`, as a dict).

    :param consumer: the consumer's name, so a queue shared by a group's members tells whose
        record it is (the redrive replays it through that member only).
    :param record: the record as Lambda delivered it (any shape: an undecodable record is
        quarantined too); kept whole, binary values base64-encoded again, so a redrive can
        replay it.
    :param error: why the record is poison: its type, message and cause go in ``error``.
    :param now: when it was quarantined (``quarantinedAt``). Default: the current UTC time;
        given by tests, and the redrive's age check reads it.
    :param shard: the shard the record was delivered from, when its event said (``shardId``):
        the redrive replays the record with it, so the ledger looks it up in its lane.
    """
    source_arn = record.get("eventSourceARN") if isinstance(record, Mapping) else None
    return QuarantineMessage(
        consumer=consumer,
        source_arn=source_arn,
        error=ErrorDescription.of(error),
        record=to_wire(record),
        quarantined_at=(now or datetime.now(UTC)).isoformat(timespec="milliseconds"),
        shard_id=shard,
    ).to_dict()


def _pointer_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """What a pointer message keeps of a record: no image, enough to order it and find its
    item: its envelope as its route keeps it (:meth:`~cdc_consumer.routes.route.Route.envelope`),
    and the ``dynamodb`` keys and times of the change it carries (none when it cannot be
    decoded)."""
    route = route_of(record)
    pointer = route.envelope(record)
    stream = None
    with contextlib.suppress(UndecodableRecordError):
        stream = route.change_document(record).get("dynamodb")
    stream = stream if isinstance(stream, Mapping) else {}
    pointer["dynamodb"] = {k: stream[k] for k in _POINTER_FIELDS if k in stream}
    return pointer


def message_bytes(body: str) -> int:
    """What SQS counts against ``MaximumMessageSize``: the body's UTF-8 bytes."""
    return len(body.encode("utf-8"))


def send_to_quarantine(
    sqs_client: Any,
    queue_url: str,
    consumer: str,
    record: Any,
    error: BaseException,
    *,
    s3_client: Any = None,
    bucket: str | None = None,
    shard: str | None = None,
) -> str:
    """Send one record to the queue and return the SQS message id; a message too big for the
    queue is kept in ``bucket`` (default ``QUARANTINE_BUCKET_NAME``) and pointed at.

    A failed send or store raises :class:`TransientError`: the record must then be reported to
    Lambda (and retried), never dropped.
    """
    message = quarantine_message(consumer, record, error, shard=shard)
    body = dumps(message)
    if message_bytes(body) > MAX_QUEUE_MESSAGE_BYTES:
        body = dumps(_store_whole(message, body, consumer, s3_client, bucket))
    try:
        response = sqs_client.send_message(QueueUrl=queue_url, MessageBody=body)
    except (ClientError, BotoCoreError) as send_error:
        raise TransientError(
            f"could not send the record to the quarantine queue {queue_url}: {send_error}"
        ) from send_error
    return str(response["MessageId"])


def _store_whole(
    message: dict[str, Any], body: str, consumer: str, s3_client: Any, bucket: str | None
) -> dict[str, Any]:
    """Put the whole message in the bucket; return the pointer message."""
    size = message_bytes(body)
    bucket = bucket or os.environ.get(QUARANTINE_BUCKET_ENV, "")
    if not bucket:
        raise TransientError(
            f"the quarantine message is {size} bytes, more than a queue message takes"
            f" ({MAX_QUEUE_MESSAGE_BYTES}), and no bucket keeps it ({QUARANTINE_BUCKET_ENV} is"
            " not set; StreamConsumer sets it): the record is reported, not dropped"
        )
    record = message["record"] if isinstance(message["record"], Mapping) else {}
    key = f"{QUARANTINE_S3_PREFIX}{consumer}/{record.get('eventID', 'record')}-{uuid.uuid4()}.json"
    if s3_client is None:
        import boto3  # the function's role, as Lambda sets it; only for a rare, large record

        s3_client = boto3.client("s3")
    try:
        s3_client.put_object(
            Bucket=bucket, Key=key, Body=body.encode("utf-8"), ContentType="application/json"
        )
    except (ClientError, BotoCoreError) as store_error:
        raise TransientError(
            f"the quarantine message is {size} bytes (a queue takes {MAX_QUEUE_MESSAGE_BYTES});"
            f" storing it as s3://{bucket}/{key} failed: {store_error}"
        ) from store_error
    return {
        **message,
        "record": _pointer_record(record),
        QuarantineMessage.RECORD_LOCATION: {"bucket": bucket, "key": key},
    }
