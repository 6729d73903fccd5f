"""The order-stats projection in the project's seed design: one TransactWriteItems per record.

Each record's processed-marker (``{consumer}#{eventID}``, ``attribute_not_exists(id)``) and its
effect (the reference handler's own actions, ``order_stats.order_stats``) commit in one
transaction of their own, in stream order, stopping at the first failure. That is what
cdc-constructs did before it grouped consecutive records into one transaction; it is measured
beside it so the cost of grouping (and of not grouping) is visible. A record without effect
writes nothing, as in the runtime. Not part of the product: the benchmark's second baseline.

The reference handler module is imported as Lambda would import it (handlers directory and the
runtime on the path, bench/consumers.py), so both consumers compute exactly the same actions.
"""

from __future__ import annotations

import os
import time
from typing import Any

import boto3
import order_stats
from botocore.exceptions import ClientError
from cdc_consumer import Change, PermanentError
from cdc_consumer.defaults import marker_ttl_seconds
from cdc_consumer.quarantine import send_to_quarantine
from cdc_consumer.record_writes import marker_action

CONSUMER = os.environ.get("CDC_CONSUMER_NAME", "order-stats")
IDEMPOTENCY_TABLE = os.environ["IDEMPOTENCY_TABLE_NAME"]
QUEUE_URL = os.environ["QUARANTINE_QUEUE_URL"]

dynamodb = boto3.client("dynamodb")
sqs = boto3.client("sqs")


def _apply(change: Change) -> None:
    actions = order_stats.order_stats(change)
    if not actions:
        return
    marker = marker_action(
        IDEMPOTENCY_TABLE,
        f"{CONSUMER}#{change.event_id}",
        int(time.time()) + marker_ttl_seconds(),
    )
    try:
        dynamodb.transact_write_items(TransactItems=[marker, *actions])
    except ClientError as error:
        reasons = error.response.get("CancellationReasons") or []
        if reasons and reasons[0].get("Code") == "ConditionalCheckFailed":
            return  # a duplicate: applied before
        raise


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """In order; the first record that fails is reported and nothing after it is applied."""
    for record in event["Records"]:
        try:
            _apply(Change.from_record(record))
        except PermanentError as error:
            send_to_quarantine(sqs, QUEUE_URL, CONSUMER, record, error)
        except Exception:
            return {"batchItemFailures": [{"itemIdentifier": record["dynamodb"]["SequenceNumber"]}]}
    return {"batchItemFailures": []}
