"""The quarantine queue: where poison records go, whole, with the error that condemned them.

Message body: :class:`cdc_consumer.contract.QuarantineMessage` (read back by redrive).

The record keeps its wire form: binary values (``B``, ``BS``) are base64 text, as in Lambda's
event, so redrive replays it as Lambda would deliver it (a record built in process with
``bytes`` is written with those bytes as base64 too, see :func:`cdc_consumer.wire.to_wire`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.contract import ErrorDescription, QuarantineMessage
from cdc_consumer.exceptions import TransientError
from cdc_consumer.wire import dumps, to_wire


def quarantine_message(
    consumer: str, record: Any, error: BaseException, now: datetime | None = None
) -> dict[str, Any]:
    """The message body for ``record`` failing with ``error``."""
    source_arn = record.get("eventSourceARN") if isinstance(record, Mapping) else None
    return QuarantineMessage(
        consumer=consumer,
        source_arn=source_arn,
        error=ErrorDescription.of(error),
        record=to_wire(record),
        quarantined_at=(now or datetime.now(UTC)).isoformat(timespec="milliseconds"),
    ).to_dict()


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
