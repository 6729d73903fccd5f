"""The orders example's names, defined once: its handlers import this module (it ships in their
code asset, so in Lambda it is the top-level ``orders_schema``), and the stack, the oracle and
the workload import it as ``reference_app.handlers.orders_schema``.

No imports: the CDK app reads these names without loading boto3 or the consumer runtime.
"""

from __future__ import annotations

from typing import Final

ORDER_PREFIX: Final = "ORDER#"
"""Orders' partition keys are ``ORDER#<orderId>``; other items of the table are ignored."""

CUSTOMER_PREFIX: Final = "CUSTOMER#"
"""The order-stats view's partition keys: ``CUSTOMER#<customerId>``."""

PAID: Final = "paid"
"""The status whose amounts the view totals (``paid_amount``)."""

PAID_AMOUNT: Final = "paid_amount"
"""The view attribute totalling a customer's paid orders."""

COUNT_PREFIX: Final = "count_"
"""The view attribute ``count_<status>`` counts a customer's orders in that status."""

VIEW_TABLE_ENV: Final = "VIEW_TABLE_NAME"
"""The order-stats function's environment variable naming its view table."""

ARCHIVE_PREFIX: Final = "expired-orders/"
"""Where the TTL archive (the library's ``TtlArchive``) writes; its role may put objects under
this key prefix only."""

ORDER_STATS_HANDLER: Final = "order_stats.handler"
ORDERS_CONSUMERS_HANDLER: Final = "orders_consumers.handler"
"""The handler strings of the example's functions (module.function in this directory):
CdcReferenceStack runs order-stats and the TTL archive (the runtime's
``cdc_consumer.ttl_archive``) behind one mapping (``orders_consumers``); the Kinesis example
runs ``order_stats`` alone."""

ORDER_STATS_CONSUMER: Final = "order-stats"
TTL_ARCHIVE_CONSUMER: Final = "ttl-archive"
"""The consumer names (idempotency-marker namespaces) of the example's consumers."""

ORDERS_CONSUMERS: Final = "orders-consumers"
"""The name of the reference stack's consumer group (its function, mapping, alarms and
redrive); its members keep their own names above."""

REPLICA_TABLE_ENV: Final = "REPLICA_TABLE_NAME"
"""The orders-replica function's environment variable naming its replica table (Kinesis
example, reference_app/kinesis_stack.py)."""

ORDERS_REPLICA_HANDLER: Final = "orders_replica.handler"
"""The handler string of the Kinesis example's latest-image replica."""

ORDERS_REPLICA_CONSUMER: Final = "orders-replica"
"""The consumer name of the Kinesis example's latest-image replica."""
