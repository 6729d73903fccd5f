"""The quarantine queue: where poison records go, whole, with the error that condemned them.

Message body (interfaces §4, read back by redrive)::

    {"version": "1", "consumer": str, "sourceArn": str | None,
     "error": {"type": str, "message": str},
     "record": <the stream record exactly as Lambda delivered it>,
     "quarantinedAt": ISO-8601 UTC}

The record keeps its wire form: binary values (``B``, ``BS``) are base64 text, as in Lambda's
event, so redrive replays it as Lambda would deliver it (a record built in process with
``bytes`` is written with those bytes as base64 too, see :func:`cdc_consumer.wire.to_wire`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.exceptions import TransientError
from cdc_consumer.logs import describe_error
from cdc_consumer.wire import dumps, to_wire

MESSAGE_VERSION = "1"


def quarantine_message(
    consumer: str, record: Any, error: BaseException, now: datetime | None = None
) -> dict[str, Any]:
    """The message body for ``record`` failing with ``error``."""
    source_arn = record.get("eventSourceARN") if isinstance(record, Mapping) else None
    return {
        "version": MESSAGE_VERSION,
        "consumer": consumer,
        "sourceArn": source_arn,
        "error": describe_error(error),
        "record": to_wire(record),
        "quarantinedAt": (now or datetime.now(UTC)).isoformat(timespec="milliseconds"),
    }


def send_to_quarantine(
    sqs_client: Any, queue_url: str, consumer: str, record: Any, error: BaseException
) -> str:
    """Send one record to the queue and return the SQS message id.

    A failed send raises :class:`TransientError`: the record must then be reported to Lambda
    (and retried), never dropped.
    """
    body = dumps(quarantine_message(consumer, record, error))
    try:
        response = sqs_client.send_message(QueueUrl=queue_url, MessageBody=body)
    except (ClientError, BotoCoreError) as send_error:
        raise TransientError(
            f"could not send the record to the quarantine queue {queue_url}: {send_error}"
        ) from send_error
    return str(response["MessageId"])
