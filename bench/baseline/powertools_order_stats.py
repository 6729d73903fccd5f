"""The order-stats projection written "the common way", with Powertools for AWS Lambda.

``BatchProcessor(EventType.DynamoDBStreams)`` + ``process_partial_response`` (partial batch
responses), ``idempotent_function`` keyed on the record's ``eventID`` with a
``DynamoDBPersistenceLayer``, and one UpdateItem per record that ADDs the difference between the
old and the new image to the customer's figures. This is the pattern Powertools' documentation
shows for idempotent batch processing; it is the baseline of bench/ and not part of the product.

Self-contained (it imports nothing from bench/) so its import time can be measured alone, like a
deployed handler module. Environment: IDEMPOTENCY_TABLE_NAME, VIEW_TABLE_NAME.
"""

from __future__ import annotations

import os
from decimal import Decimal
from typing import Any

import boto3
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

VIEW_TABLE = os.environ["VIEW_TABLE_NAME"]

dynamodb = boto3.client("dynamodb")
processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
# The persistence layer gets the module's client so that every request goes through one client.
persistence_layer = DynamoDBPersistenceLayer(
    table_name=os.environ["IDEMPOTENCY_TABLE_NAME"], boto3_client=dynamodb
)
config = IdempotencyConfig(event_key_jmespath="eventID")

#: eventIDs in the order their effect was written. The benchmark reads it to find records of one
#: order applied out of stream order (the stale-image hazard); it costs one list append.
applied: list[tuple[str, str]] = []


def _figures(image: dict[str, Any] | None) -> dict[str, Decimal]:
    if not image:
        return {}
    figures = {f"count_{image['status']}": Decimal(1)}
    if image["status"] == "paid":
        figures["paid_amount"] = Decimal(image["amount"])
    return figures


def _differences(old: dict[str, Any], new: dict[str, Any]) -> dict[str, dict[str, Decimal]]:
    """customerId → attribute → amount to ADD."""
    changes: dict[str, dict[str, Decimal]] = {}
    for image, sign in ((old, -1), (new, 1)):
        if not image:
            continue
        figures = changes.setdefault(image["customerId"], {})
        for name, value in _figures(image).items():
            figures[name] = figures.get(name, Decimal(0)) + sign * value
    return {c: {n: v for n, v in f.items() if v != 0} for c, f in changes.items()}


@idempotent_function(
    data_keyword_argument="record", persistence_store=persistence_layer, config=config
)
def record_handler(record: DynamoDBRecord) -> None:
    stream = record.dynamodb
    assert stream is not None
    for customer, figures in _differences(stream.old_image, stream.new_image).items():
        if not figures:
            continue
        names = {f"#a{i}": name for i, name in enumerate(figures)}
        values = {f":v{i}": {"N": str(value)} for i, value in enumerate(figures.values())}
        dynamodb.update_item(
            TableName=VIEW_TABLE,
            Key={"pk": {"S": "CUSTOMER#" + customer}},
            UpdateExpression="ADD " + ", ".join(f"#a{i} :v{i}" for i in range(len(figures))),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
    applied.append((str(stream.keys["pk"]), str(record.event_id)))


def handler(event: dict[str, Any], context: Any) -> Any:
    """Lambda entry point: the partial batch response ``{"batchItemFailures": [...]}``."""
    config.register_lambda_context(context)
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
