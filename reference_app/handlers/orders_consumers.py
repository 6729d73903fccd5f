"""The orders stream's consumers behind one mapping: order-stats and the TTL archive (the
library's: ``cdc_consumer.ttl_archive``, given its bucket by ``TtlArchive`` in the stack).

DynamoDB Streams serves two readers per shard, and the orders stream has three consumers
(order-stats, the TTL archive, the OrderPaid pipe). So the two Lambda consumers share one
function and one event source mapping (``StreamConsumer(members=[...])`` in
reference_app/stack.py), and this handler hands each record to them in stream order through a
``cdc_consumer.ConsumerGroup``: order-stats takes every change, the TTL archive only TTL
deletions. Each keeps its own name, markers, metrics and quarantine messages; the group's
order and filters come from the construct (``CDC_CONSUMER_GROUP``).
"""

from __future__ import annotations

from typing import Any

import order_stats
from cdc_consumer import ConsumerGroup, StreamProcessor
from cdc_consumer.ttl_archive import archive_processor
from orders_schema import ORDER_STATS_CONSUMER, TTL_ARCHIVE_CONSUMER

# order_stats.processor takes its name from the environment (it also runs alone, in the
# Kinesis example); in the group each member has its own name, so order-stats gets a processor
# of its own, running the statistics as per-order contributions: the reference stack
# backfills them (docs/backfill.md), which a projection of OLD/NEW differences cannot take.
stats = StreamProcessor(ORDER_STATS_CONSUMER)
stats.projection(order_stats.backfillable_order_stats, reads=["NewImage"])

_group: ConsumerGroup | None = None


def group() -> ConsumerGroup:
    """The group the StreamConsumer declares, built on first use (the environment is the
    function's, so importing this module needs none)."""
    global _group
    if _group is None:
        archive = archive_processor(TTL_ARCHIVE_CONSUMER)  # settings: CDC_ARCHIVE_* (TtlArchive)
        _group = ConsumerGroup.from_environment([stats, archive])
    return _group


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point (handler string ``orders_consumers.handler``)."""
    return group().handle(event, context)
