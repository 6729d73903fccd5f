"""CdcKinesisReferenceStack: the orders example on the Kinesis route (docs/design.md §9).

The orders table streams its changes to a Kinesis data stream (encrypted, on-demand, 7 days
retention, MICROSECOND precision) and two consumers read it, each with its own mapping: a
latest-image replica of the orders (``cdc_consumer.LatestImage``, version-guarded) and the
order-stats view (the same handler as CdcReferenceStack's: its ADD updates commute and its
markers make each change count once, so it stays exact out of order). app.py synthesizes it
beside CdcReferenceStack.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from cdc_constructs.alarm_topic import AlarmTopic
from cdc_constructs.change_capture_table import ChangeCaptureTable
from cdc_constructs.idempotency_table import IdempotencyTable
from cdc_constructs.routes.kinesis import KinesisConsumer, KinesisDestination
from reference_app.handlers.orders_schema import (
    ORDER_STATS_CONSUMER,
    ORDER_STATS_HANDLER,
    ORDERS_REPLICA_CONSUMER,
    ORDERS_REPLICA_HANDLER,
    REPLICA_TABLE_ENV,
    VIEW_TABLE_ENV,
)
from reference_app.stack import ORDERS_TTL_ATTRIBUTE, handlers_code, logs_key, view_table

_KEY = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


class CdcKinesisReferenceStack(Stack):
    """Orders table → Kinesis stream → latest-image replica and order-stats view.

    - ``orders``: a :class:`ChangeCaptureTable` with ``kinesis=KinesisDestination()``
      (``orders.kinesis_stream``).
    - ``replica``: the orders' latest images and tombstones (pk ``pk`` S), kept by
      ``orders_replica`` (a :class:`KinesisConsumer` running ``orders_replica.handler``).
    - ``order_stats_view``: per-customer statistics (pk ``pk`` S), kept by ``order_stats``
      (a :class:`KinesisConsumer` running ``order_stats.handler``).
    - ``idempotency``, ``alarm_topic`` (``alarm_emails`` subscribed), ``dashboard``: shared.

    Tables are retained when the stack is deleted, as in CdcReferenceStack.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        alarm_emails: Sequence[str] = (),
        **stack_props: Any,
    ) -> None:
        super().__init__(scope, construct_id, **stack_props)
        self.orders = ChangeCaptureTable(
            self,
            "Orders",
            partition_key=_KEY,
            time_to_live_attribute=ORDERS_TTL_ATTRIBUTE,
            kinesis=KinesisDestination(),
        )
        self.replica = view_table(self, "OrdersReplica")
        self.order_stats_view = view_table(self, "OrderStatsView")
        self.idempotency = IdempotencyTable(self, "Idempotency")
        self.alarm_topic = AlarmTopic(self, "Alarms", emails=alarm_emails)
        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"{construct_id}-pipeline"
        )
        shared: dict[str, Any] = {
            "table": self.orders,
            "code": handlers_code(),
            "idempotency_table": self.idempotency,
            "alarm_topic": self.alarm_topic.topic,
            "dashboard": self.dashboard,
            "log_encryption_key": logs_key(self),
        }
        self.orders_replica = KinesisConsumer(
            self,
            "OrdersReplicaConsumer",
            consumer_name=ORDERS_REPLICA_CONSUMER,
            handler=ORDERS_REPLICA_HANDLER,
            reads_images=["NewImage"],  # orders_replica.py writes the new image
            **shared,
        )
        self.orders_replica.grant_view_table(self.replica, env_var=REPLICA_TABLE_ENV)
        self.order_stats = KinesisConsumer(
            self,
            "OrderStats",
            consumer_name=ORDER_STATS_CONSUMER,
            handler=ORDER_STATS_HANDLER,
            reads_images=["NewImage", "OldImage"],  # order_stats.py takes old, adds new
            **shared,
        )
        self.order_stats.grant_view_table(self.order_stats_view, env_var=VIEW_TABLE_ENV)
