"""The Kinesis example's replica of the orders table: each order's latest image, by version.

The orders' changes reach this handler through the table's Kinesis data stream, out of order
and sometimes more than once (docs/design.md §9). ``cdc_consumer.LatestImage`` writes each
change's NEW image only when it is newer than what the replica holds, and a delete leaves a
versioned tombstone, so the replica ends equal to the orders table whatever the delivery order.
Readers of the replica skip items with ``cdc_deleted``.
"""

from __future__ import annotations

from typing import Any

from cdc_consumer import LatestImage, StreamProcessor
from orders_schema import REPLICA_TABLE_ENV

# Consumer name, idempotency table and quarantine queue come from the environment the
# KinesisConsumer construct sets; the replica table from REPLICA_TABLE_NAME.
processor = StreamProcessor()
latest_image = LatestImage(table_name_env=REPLICA_TABLE_ENV)
processor.projection(latest_image)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point (handler string ``orders_replica.handler``)."""
    return processor.handle(event, context)
