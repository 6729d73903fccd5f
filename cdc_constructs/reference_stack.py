"""CdcReferenceStack: the reference app of the library (app.py synthesizes it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from cdc_constructs.alarm_topic import AlarmTopic
from cdc_constructs.change_capture_table import ChangeCaptureTable
from cdc_constructs.idempotency_table import IdempotencyTable
from cdc_constructs.stream_consumer import ENV_VIEW_TABLE, StreamConsumer

ORDERS_TTL_ATTRIBUTE = "expireAt"


class CdcReferenceStack(Stack):
    """Orders table → order-stats consumer (exactly-once materialized view), with alarms.

    - ``orders``: a :class:`ChangeCaptureTable` (pk ``pk`` S, TTL ``expireAt``).
    - ``order_stats_view``: the view table the reference handler keeps (pk ``pk`` S).
    - ``idempotency``: one :class:`IdempotencyTable` shared by the stack's consumers.
    - ``order_stats``: a :class:`StreamConsumer` running the bundled ``order_stats.handler``.
    - ``alarm_topic``: alarms of every consumer go here; ``alarm_emails`` are subscribed.
    - ``dashboard``: one dashboard for the whole pipeline.

    The tables are retained when the stack is deleted (their data outlives the stack), as
    are the log groups; queues and alarms go with it.
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
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            time_to_live_attribute=ORDERS_TTL_ATTRIBUTE,
        )
        self.order_stats_view = dynamodb.TableV2(
            self,
            "OrderStatsView",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            billing=dynamodb.Billing.on_demand(),
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.idempotency = IdempotencyTable(self, "Idempotency")
        self.alarm_topic = AlarmTopic(self, "Alarms", emails=alarm_emails)
        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"{construct_id}-pipeline"
        )
        self.order_stats = StreamConsumer(
            self,
            "OrderStats",
            table=self.orders,
            consumer_name="order-stats",
            idempotency_table=self.idempotency,
            alarm_topic=self.alarm_topic.topic,
            dashboard=self.dashboard,
        )
        self.order_stats.grant_view_table(self.order_stats_view, env_var=ENV_VIEW_TABLE)
