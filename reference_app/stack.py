"""CdcReferenceStack: the orders example built with the library (app.py synthesizes it)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.acknowledge import acknowledge, skip_check
from cdc_constructs.alarm_topic import AlarmTopic
from cdc_constructs.alarms import alarm_on_any
from cdc_constructs.assets import ASSET_EXCLUDES
from cdc_constructs.change_capture_table import ChangeCaptureTable
from cdc_constructs.consumer_group import ConsumerGroupMember
from cdc_constructs.fan_out import StreamFanOut
from cdc_constructs.idempotency_table import IdempotencyTable
from cdc_constructs.queues import acknowledge_sqs_managed_encryption, dead_letter_queue
from cdc_constructs.stream_consumer import StreamConsumer
from cdc_constructs.ttl_archive import TtlArchive
from cdc_constructs.view_backfill import ViewBackfill
from reference_app.handlers.orders_schema import (
    ARCHIVE_PREFIX,
    ORDER_STATS_CONSUMER,
    ORDERS_CONSUMERS,
    ORDERS_CONSUMERS_HANDLER,
    TTL_ARCHIVE_CONSUMER,
    VIEW_TABLE_ENV,
)

HANDLERS_DIR = Path(__file__).resolve().parent / "handlers"
"""The example's Lambda code (orders_consumers.py, order_stats.py, orders_schema.py): the code
asset
of its functions, found from this file, never from the working directory."""

ORDERS_TTL_ATTRIBUTE = defaults.TIME_TO_LIVE_ATTRIBUTE
"""The orders' TTL attribute (Number, epoch seconds), which the workloads write."""

ORDER_EVENTS_SOURCE = "com.example.orders"
"""The ``source`` of the order events the fan-out publishes."""

ORDER_PAID = "OrderPaid"
"""The detail-type of the event published when an order's status becomes ``paid``."""

_BECOMES_PAID = {
    "status": {"S": ["paid"]},
    # The event carries these two; Pipes cannot leave a missing one out, so only records that
    # have them are let through.
    "customerId": {"S": [{"exists": True}]},
    "amount": {"N": [{"exists": True}]},
}

ORDER_PAID_FILTERS = (
    # An order created already paid.
    {"eventName": ["INSERT"], "dynamodb": {"NewImage": _BECOMES_PAID}},
    *(
        {"eventName": ["MODIFY"], "dynamodb": {"NewImage": _BECOMES_PAID, "OldImage": old_image}}
        for old_image in (
            # ... from another status, or from none ("anything-but" skips a missing attribute).
            {"status": {"S": [{"anything-but": ["paid"]}]}},
            {"status": {"S": [{"exists": False}]}},
        )
    ),
)
"""Orders whose status *becomes* paid: an INSERT of an order already ``paid``, or a MODIFY to
``paid`` from another status (or none). A MODIFY of an order already paid (e.g. a shipping
address change) is not published again."""

ORDERS_CONSUMER_MEMBERS = (
    ConsumerGroupMember(ORDER_STATS_CONSUMER, reads_images=["NewImage", "OldImage"]),
    TtlArchive.group_member(TTL_ARCHIVE_CONSUMER),
)
"""The orders stream's Lambda consumers, behind one mapping (the stream serves two readers
per shard; the OrderPaid pipe is the other): order-stats takes every change (a TTL deletion
removes the order's contribution; it takes old, adds new), the TTL archive only TTL deletions
(it archives the expired item's old image)."""

ORDER_PAID_ROUTES = ("Invoicing", "Fulfilment")
"""The two subscribers of OrderPaid in the reference app, a queue each."""

ACCESS_LOG_EXPIRATION = Duration.days(365)
"""A year of access logs of the archive: who read or wrote expired orders."""


def view_table(scope: Construct, construct_id: str) -> dynamodb.TableV2:
    """A table the example's handlers keep (pk ``pk`` S): on demand, point-in-time recovery,
    deletion protection, retained with the stack's data."""
    return dynamodb.TableV2(
        scope,
        construct_id,
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        billing=dynamodb.Billing.on_demand(),
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=defaults.POINT_IN_TIME_RECOVERY
        ),
        deletion_protection=defaults.DELETION_PROTECTION,
        removal_policy=RemovalPolicy.RETAIN,
    )


def logs_key(scope: Construct) -> kms.Key:
    """The customer-managed key of the stack's log groups (the consumers', the redrive's, the
    pipe's): their lines can carry item values (an error message quotes the value it failed
    on). Rotated yearly; retained with the logs it encrypts ($1 a month)."""
    return kms.Key(
        scope,
        "LogsKey",
        description="Encrypts the log groups of the CDC pipeline",
        enable_key_rotation=True,
        removal_policy=RemovalPolicy.RETAIN,
    )


def handlers_code() -> lambda_.Code:
    """The example's handlers directory as a Lambda code asset."""
    return lambda_.Code.from_asset(str(HANDLERS_DIR), exclude=list(ASSET_EXCLUDES))


class CdcReferenceStack(Stack):
    """Orders table → order-stats view (exactly once), TTL archive and "order paid" fan-out.

    - ``orders``: a :class:`ChangeCaptureTable` (pk ``pk`` S, TTL ``expireAt``).
    - ``order_stats_view``: the view table the reference handler keeps (pk ``pk`` S).
    - ``idempotency``: one :class:`IdempotencyTable` shared by the stack's consumers.
    - ``orders_consumers``: a :class:`StreamConsumer` with two members behind one mapping
      (``orders_consumers.handler``, reference_app/handlers): ``order-stats`` keeps the view
      from every change; ``ttl-archive`` writes each order TTL deleted to ``archive_bucket``
      (with ``access_log_bucket``): the ``expired_orders`` :class:`TtlArchive`, a member of the
      group. With the ``order_paid`` pipe, the orders stream has two readers, what DynamoDB
      Streams serves per shard.
    - ``order_stats_backfill``: a :class:`ViewBackfill` of order-stats from the orders table
      (a Step Functions Distributed Map over the table's scan segments): the view of orders
      written before the consumer existed, or rebuilt, while the stream keeps flowing.
    - ``order_paid``: a :class:`StreamFanOut` publishing ``OrderPaid`` events to its bus;
      ``order_paid_queues`` (Invoicing, Fulfilment) each receive them through a rule.
    - The consumers have their redrive function (``.redrive``) and alarms.
    - ``alarm_topic``: every alarm goes here; ``alarm_emails`` are subscribed.
    - ``dashboard``: one dashboard for the whole pipeline.

    What may hold the only copy of a record is retained when the stack is deleted or the
    resource replaced: the tables, the buckets, the quarantine and dead-letter queues and the
    OrderPaid queues; so are the log groups and the alarm key. Functions, mappings, the pipe,
    the bus, alarms and the topic go with the stack (docs/operations.md, "What cdk destroy
    leaves behind").
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
        self.order_stats_view = view_table(self, "OrderStatsView")
        self.idempotency = IdempotencyTable(self, "Idempotency")
        self.alarm_topic = AlarmTopic(self, "Alarms", emails=alarm_emails)
        self.logs_key = logs_key(self)
        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"{construct_id}-pipeline"
        )
        self._access_log_bucket()
        self._orders_consumers()
        self.order_stats_backfill = ViewBackfill(
            self,
            "OrderStatsBackfill",
            consumer=self.orders_consumers,
            member=ORDER_STATS_CONSUMER,
        )
        self._order_paid_fan_out()

    def _access_log_bucket(self) -> None:
        self.access_log_bucket = s3.Bucket(
            self,
            "ArchiveAccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,  # log delivery cannot use SSE-KMS
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            # Object ownership left to aws-cdk-lib: a bucket policy admits the log delivery
            # with @aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy (cdk.json), ACLs without.
            lifecycle_rules=[s3.LifecycleRule(expiration=ACCESS_LOG_EXPIRATION)],
            removal_policy=RemovalPolicy.RETAIN,
        )
        no_access_logs = (
            "This bucket receives the archive bucket's server access logs; logging its own "
            "access would log the log deliveries themselves, without end."
        )
        access_logs = self.access_log_bucket.node.default_child
        acknowledge(access_logs, "AwsSolutions-S1", no_access_logs)  # type: ignore[arg-type]
        skip_check(access_logs, "CKV_AWS_18", no_access_logs)  # type: ignore[arg-type]
        skip_check(
            access_logs,  # type: ignore[arg-type]
            "CKV_AWS_21",
            "S3 log delivery writes each access log object once and never overwrites it; the "
            "objects expire after a year, so versions would keep nothing more.",
        )

    def _orders_consumers(self) -> None:
        self.orders_consumers = StreamConsumer(
            self,
            "OrdersConsumers",
            table=self.orders,
            consumer_name=ORDERS_CONSUMERS,
            members=list(ORDERS_CONSUMER_MEMBERS),
            code=handlers_code(),
            handler=ORDERS_CONSUMERS_HANDLER,
            idempotency_table=self.idempotency,
            alarm_topic=self.alarm_topic.topic,
            dashboard=self.dashboard,
            log_encryption_key=self.logs_key,
        )
        self.orders_consumers.grant_view_table(self.order_stats_view, env_var=VIEW_TABLE_ENV)
        self.expired_orders = TtlArchive(
            self,
            "ExpiredOrdersArchive",
            table=self.orders,
            consumer=self.orders_consumers,
            member=TTL_ARCHIVE_CONSUMER,
            archive_prefix=ARCHIVE_PREFIX,
            server_access_logs_bucket=self.access_log_bucket,
        )
        self.archive_bucket = self.expired_orders.bucket

    def _order_paid_fan_out(self) -> None:
        self.order_paid = StreamFanOut(
            self,
            "OrderPaid",
            table=self.orders,
            source=ORDER_EVENTS_SOURCE,
            detail_type=ORDER_PAID,
            filters=list(ORDER_PAID_FILTERS),
            key_attributes={"pk": "S"},
            new_image_attributes={"status": "S", "customerId": "S", "amount": "N"},
            alarm_topic=self.alarm_topic.topic,
            log_encryption_key=self.logs_key,
        )
        self.order_paid_queues: dict[str, sqs.Queue] = {}
        route_alarms = []
        for name in ORDER_PAID_ROUTES:
            queue, alarm = _order_paid_route(self, name, self.order_paid, self.alarm_topic)
            route_alarms.append(alarm)
            self.order_paid_queues[name] = queue
        self.dashboard.add_widgets(
            cloudwatch.TextWidget(
                markdown=f"## Fan-out `{ORDER_PAID}` (pipe, bus, {len(route_alarms)} routes)",
                width=24,
                height=1,
            ),
            cloudwatch.AlarmStatusWidget(
                title="Alarms",
                alarms=[*self.order_paid.alarms.values(), *route_alarms],
                width=24,
                height=3,
            ),
        )


def _order_paid_route(
    stack: Stack, name: str, fan_out: StreamFanOut, alarm_topic: AlarmTopic
) -> tuple[sqs.Queue, cloudwatch.Alarm]:
    """One subscriber of OrderPaid: its queue, the bus rule to it, a dead-letter queue for
    what EventBridge or the subscriber cannot handle, and the alarm on it."""
    # Events EventBridge could not deliver to the queue, and messages the subscriber
    # failed on 5 times, land here.
    undelivered = dead_letter_queue(
        stack,
        f"{name}DeadLetters",
        purpose=f"OrderPaid events the {name} rule or its subscriber could not handle",
    )
    queue = sqs.Queue(
        stack,
        f"{name}Queue",
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(defaults.ON_FAILURE_QUEUE_RETENTION_DAYS),
        dead_letter_queue=sqs.DeadLetterQueue(queue=undelivered, max_receive_count=5),
        # Its messages are OrderPaid events not yet handled: once the stream trims the
        # change (24 h), the only copy. Retained with the stack, as the dead letters are.
        removal_policy=defaults.RECORD_REMOVAL_POLICY,
    )
    acknowledge_sqs_managed_encryption(queue)
    events.Rule(
        stack,
        f"{name}Rule",
        description=f"OrderPaid events to the {name} queue",
        event_bus=fan_out.event_bus,
        event_pattern=events.EventPattern(source=[ORDER_EVENTS_SOURCE], detail_type=[ORDER_PAID]),
        targets=[
            targets.SqsQueue(
                queue,
                dead_letter_queue=undelivered,
                retry_attempts=defaults.RETRY_ATTEMPTS,
                max_event_age=Duration.seconds(defaults.MAX_RECORD_AGE_SECONDS),
            )
        ],
    )
    alarm = alarm_on_any(
        stack,
        f"{name}DeadLettersAlarm",
        undelivered.metric_approximate_number_of_messages_visible(
            statistic=cloudwatch.Stats.MAXIMUM,
            period=Duration.seconds(defaults.ALARM_PERIOD_SECONDS),
        ),
        description=f"OrderPaid events for {name} could not be delivered or processed;"
        " they wait in its dead-letter queue (14 days).",
        topic=alarm_topic.topic,
    )
    return queue, alarm
