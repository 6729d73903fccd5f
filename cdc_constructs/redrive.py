"""StreamRedrive: the function that replays what a stream consumer failed on.

StreamConsumer composes it (on by default). The function runs ``cdc_consumer.redrive_handler``
from the consumer runtime layer: invoked by hand once the consumer's fault is fixed, it reads the
on-failure queue's batches back from the stream and the quarantine queue's records, replays them
through the consumer function (synchronous invoke), deletes each message only after it
succeeded, and reports records the stream no longer holds as lost. An alarm fires on
``CdcConstructs/RedriveLostRecords {Consumer=name} >= 1``.

It is not triggered by the queues: an automatic redrive of a consumer that still fails would
loop; a person decides when the fault is fixed (README, "When the DLQ alarm fires").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

__all__ = ["StreamRedrive"]

#: The redrive handler, a module of the runtime layer (on ``sys.path`` as /opt/python).
REDRIVE_HANDLER = "cdc_consumer.redrive_handler.handler"
#: Lambda's maximum: a redrive invokes the consumer synchronously, message after message, and is
#: run rarely and by hand, so it gets all the time Lambda allows.
DEFAULT_TIMEOUT = Duration.minutes(15)
#: Margin on top of the consumer's timeout kept before the deadline: the consumer invoke in
#: flight finishes and the report is logged before the redrive function stops.
DEADLINE_MARGIN = Duration.seconds(30)
#: Enough for boto3 and a 6 MB invoke payload held twice (records and their JSON).
DEFAULT_MEMORY_MB = 256
#: The runtime layer's language (the runtime needs Python 3.11+).
DEFAULT_RUNTIME = lambda_.Runtime.PYTHON_3_12
#: Logs of a tool run by hand: long enough to look back at an incident.
DEFAULT_LOG_RETENTION = logs.RetentionDays.THREE_MONTHS
#: CONTRACTS §3.
DEFAULT_METRICS_NAMESPACE = "CdcConstructs"
LOST_RECORDS_METRIC = "RedriveLostRecords"


class StreamRedrive(Construct):
    """A redrive function for one stream consumer, its log group and its lost-records alarm.

    Args:
        consumer_function: the consumer to replay through (invoked synchronously).
        consumer_name: the consumer's name (``CDC_CONSUMER_NAME``): the metric dimension, and
            quarantine messages of other consumers are refused.
        stream_arn: the consumer's stream; messages of other streams are refused.
        on_failure_queue: the event source mapping's on-failure destination.
        layer: the consumer runtime layer (``python/cdc_consumer/``), which holds the handler.
        quarantine_queue: the runtime's quarantine queue; None when the consumer has none.
        consumer_timeout: the consumer function's timeout. Default: read from
            ``consumer_function`` when it is a ``lambda_.Function``; required otherwise. The
            redrive starts no new message later than this (plus 30 s) before its own deadline.
        filters: the event source mapping's filter patterns (CONTRACTS §6), default none. An
            on-failure range covers every record between its sequence numbers; the redrive
            replays only those the mapping would have delivered.
        timeout: the redrive function's timeout. Default 15 minutes (Lambda's maximum).
        runtime: default Python 3.12; must match the layer's compatible runtimes.
        architecture: default ARM_64 (the runtime is pure Python; Graviton costs less).
        log_retention: default three months.
        metrics_namespace: default ``CdcConstructs`` (CONTRACTS §3).

    Attributes: ``function``, ``log_group``, ``lost_records_metric``, ``lost_records_alarm``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        consumer_function: lambda_.IFunction,
        consumer_name: str,
        stream_arn: str,
        on_failure_queue: sqs.IQueue,
        layer: lambda_.ILayerVersion,
        quarantine_queue: sqs.IQueue | None = None,
        consumer_timeout: Duration | None = None,
        filters: Sequence[Mapping[str, Any]] = (),
        timeout: Duration = DEFAULT_TIMEOUT,
        runtime: lambda_.Runtime = DEFAULT_RUNTIME,
        architecture: lambda_.Architecture = lambda_.Architecture.ARM_64,
        log_retention: logs.RetentionDays = DEFAULT_LOG_RETENTION,
        metrics_namespace: str = DEFAULT_METRICS_NAMESPACE,
    ) -> None:
        super().__init__(scope, construct_id)
        if consumer_timeout is None and isinstance(consumer_function, lambda_.Function):
            # A Function without a timeout prop runs with Lambda's default of 3 seconds.
            consumer_timeout = consumer_function.timeout or Duration.seconds(3)
        reserve = _validate(consumer_name, consumer_timeout, timeout, metrics_namespace)

        self.log_group = logs.LogGroup(self, "LogGroup", retention=log_retention)
        environment = {
            "CONSUMER_FUNCTION_NAME": consumer_function.function_name,
            "CDC_CONSUMER_NAME": consumer_name,
            "STREAM_ARN": stream_arn,
            "ON_FAILURE_QUEUE_URL": on_failure_queue.queue_url,
            "CDC_METRICS_NAMESPACE": metrics_namespace,
            "REDRIVE_RESERVE_SECONDS": str(reserve),
        }
        if quarantine_queue is not None:
            environment["QUARANTINE_QUEUE_URL"] = quarantine_queue.queue_url
        if filters:
            environment["CONSUMER_FILTERS"] = json.dumps([dict(f) for f in filters])
        self.function = lambda_.Function(
            self,
            "Function",
            description=f"Redrive of stream consumer {consumer_name}: replays its on-failure"
            " batches and quarantined records (invoke by hand once the fault is fixed)",
            runtime=runtime,
            architecture=architecture,
            # The handler lives in the runtime layer; the function's own code is only a pointer.
            code=lambda_.Code.from_inline(
                f"# The redrive handler is {REDRIVE_HANDLER}, in the runtime layer.\n"
            ),
            handler=REDRIVE_HANDLER,
            layers=[layer],
            timeout=timeout,
            memory_size=DEFAULT_MEMORY_MB,
            # One redrive at a time: two would replay batches of one shard side by side.
            reserved_concurrent_executions=1,
            environment=environment,
            log_group=self.log_group,
        )

        # Least privilege, written out rather than with grant_* helpers, which add actions the
        # redrive does not use (sqs:GetQueueAttributes, lambda:InvokeFunction on every version).
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"], resources=[consumer_function.function_arn]
            )
        )
        queues = [on_failure_queue] + ([quarantine_queue] if quarantine_queue else [])
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"],
                resources=[queue.queue_arn for queue in queues],
            )
        )
        for queue in queues:
            if queue.encryption_master_key is not None:
                queue.encryption_master_key.grant_decrypt(self.function)
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=[
                    "dynamodb:DescribeStream",
                    "dynamodb:GetShardIterator",
                    "dynamodb:GetRecords",
                ],
                resources=[stream_arn],
            )
        )

        self.lost_records_metric = cloudwatch.Metric(
            namespace=metrics_namespace,
            metric_name=LOST_RECORDS_METRIC,
            dimensions_map={"Consumer": consumer_name},
            statistic=cloudwatch.Stats.SUM,
            period=Duration.minutes(5),
        )
        self.lost_records_alarm = self.lost_records_metric.create_alarm(
            self,
            "LostRecordsAlarm",
            alarm_description=f"Redrive of {consumer_name} found records the stream no longer"
            " holds: they were not replayed and their messages are kept. See README, 'When the"
            " DLQ alarm fires'.",
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )


def _validate(
    consumer_name: str,
    consumer_timeout: Duration | None,
    timeout: Duration,
    metrics_namespace: str,
) -> int:
    """Check the props; return the reserve in seconds. Raises one error naming every problem."""
    problems = []
    if not Token.is_unresolved(consumer_name) and not consumer_name.strip():
        problems.append("consumer_name is empty; expected the consumer's name")
    if not metrics_namespace.strip():
        problems.append("metrics_namespace is empty; expected e.g. 'CdcConstructs'")
    if timeout.to_seconds() > DEFAULT_TIMEOUT.to_seconds():
        problems.append(f"timeout is {timeout.to_human_string()}; Lambda allows at most 15 minutes")
    reserve = 0
    if consumer_timeout is None:
        problems.append(
            "consumer_timeout is not given and cannot be read from consumer_function (not a"
            " lambda_.Function); pass the consumer's timeout"
        )
    else:
        reserve = int(consumer_timeout.to_seconds() + DEADLINE_MARGIN.to_seconds())
        if reserve >= timeout.to_seconds():
            problems.append(
                f"timeout is {timeout.to_human_string()}, not longer than the consumer's timeout"
                f" ({consumer_timeout.to_human_string()}) plus 30 s; expected a longer timeout,"
                " so the redrive can wait for at least one consumer invocation"
            )
    if problems:
        raise ValueError("StreamRedrive: " + "; ".join(problems))
    return reserve
