"""The Kinesis route: a consumer reads the Kinesis data stream its table streams changes into.

The mapping reads the stream (or an enhanced fan-out consumer of it), granted the read actions
of shared-throughput polling (and the fan-out consumer's, and the stream key's decrypt); the
record age and the marker lifetime follow the stream's retention, not DynamoDB Streams' 24 h;
the lag alarm fires at 15 minutes at the latest; the table's replication to the stream is
alarmed (:mod:`~cdc_constructs.routes.kinesis.replication_alarms`); the redrive reads a range of
the stream back (:data:`KINESIS_REDRIVE_ACTIONS`, what
ever a failure kind asks of the stream) and decrypts under its key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.alarms import alarm_action_for
from cdc_constructs.consumer_options import ConsumerOptions
from cdc_constructs.failure_kinds import RedriveAccess
from cdc_constructs.monitoring_options import MonitoringOptions
from cdc_constructs.permissions import allow, grant_key
from cdc_constructs.redrive import StreamRedrive
from cdc_constructs.routes.kinesis.replication_alarms import KinesisReplicationAlarms

__all__ = [
    "KINESIS_REDRIVE_ACTIONS",
    "KinesisRedriveAccess",
    "KinesisRoute",
    "KinesisStreamRedrive",
    "KinesisStreamRoute",
]

KINESIS_READ_ACTIONS: Final = (
    "kinesis:DescribeStream",
    "kinesis:DescribeStreamSummary",
    "kinesis:GetRecords",
    "kinesis:GetShardIterator",
    "kinesis:ListShards",
)
"""What a Lambda mapping polling a Kinesis stream uses (shared-throughput iterators)."""

KINESIS_FAN_OUT_ACTIONS: Final = ("kinesis:DescribeStreamConsumer", "kinesis:SubscribeToShard")
"""Reading through an enhanced fan-out consumer (on the consumer's ARN)."""

KINESIS_KEY_ACTIONS: Final = ("kms:Decrypt",)
"""Reading a stream encrypted with a customer key (the mapping, and the redrive)."""

KINESIS_REDRIVE_ACTIONS: Final = (
    "kinesis:DescribeStreamSummary",
    "kinesis:GetRecords",
    "kinesis:GetShardIterator",
)
"""What the Kinesis route's redrive reads of its stream: a known range of one shard back
(GetShardIterator AT_SEQUENCE_NUMBER, GetRecords) and the retention (DescribeStreamSummary). It
never lists shards or streams."""


@dataclass
class KinesisRedriveAccess(RedriveAccess):
    """The failure kinds' redrive grants with the Kinesis stream in place of a DynamoDB stream:
    whatever a kind asks of the stream (a range read back, its shard lineage), the Kinesis
    route's redrive reads a range back and the retention (:data:`KINESIS_REDRIVE_ACTIONS`); an
    S3 object carries its batch, but one without it is read back too."""

    def read_stream(self, actions: tuple[str, ...]) -> None:
        super().read_stream(KINESIS_REDRIVE_ACTIONS)


@dataclass
class KinesisStreamRoute:
    """What a redrive reads back of ``stream`` (a
    :class:`~cdc_constructs.redrive.RedriveRoute`): a range of a shard, the retention, and the
    records' key."""

    stream: kinesis.IStream

    @property
    def stream_arn(self) -> str:
        """The stream (not a fan-out consumer of it): what the redrive reads back."""
        return self.stream.stream_arn

    def redrive_access(self) -> RedriveAccess:
        return KinesisRedriveAccess(self.stream_arn)

    def grant_redrive(self, grantee: iam.IGrantable) -> None:
        """Decrypt the stream's records under its customer key, when it has one."""
        grant_key(grantee, self.stream.encryption_key, KINESIS_KEY_ACTIONS)


@dataclass
class KinesisRoute(KinesisStreamRoute):
    """A consumer's route to ``stream`` (kept ``stream_retention``), read through an enhanced
    fan-out consumer when ``enhanced_fan_out``; ``table``: the table streaming into it, when
    known here (its replication is then alarmed)."""

    stream_retention: Duration
    enhanced_fan_out: bool = False
    table: dynamodb.ITable | None = None
    fan_out_consumer: kinesis.StreamConsumer | None = None

    @property
    def source_arn(self) -> str:
        """What the mapping reads: the fan-out consumer, else the stream."""
        if self.fan_out_consumer is not None:
            return self.fan_out_consumer.stream_consumer_arn
        return self.stream.stream_arn

    @property
    def retention(self) -> Duration | None:
        return self.stream_retention

    @property
    def reads_table_stream(self) -> bool:
        return False

    def attach(self, consumer: Construct) -> None:
        """The fan-out consumer (``cdc-<consumer name>``), and the consumer's escape hatches
        ``stream``, ``stream_retention`` and ``fan_out_consumer``."""
        if self.enhanced_fan_out:
            self.fan_out_consumer = kinesis.StreamConsumer(
                consumer,
                "FanOutConsumer",
                stream=self.stream,
                stream_consumer_name=f"cdc-{consumer.consumer_name}",  # type: ignore[attr-defined]
            )
        consumer.stream = self.stream  # type: ignore[attr-defined]
        consumer.stream_retention = self.stream_retention  # type: ignore[attr-defined]
        consumer.fan_out_consumer = self.fan_out_consumer  # type: ignore[attr-defined]

    def grant_read(self, function: lambda_.IFunction) -> None:
        """Read this Kinesis stream (and its fan-out consumer), and nothing else."""
        function.add_to_role_policy(allow(KINESIS_READ_ACTIONS, [self.stream.stream_arn]))
        if self.fan_out_consumer is not None:
            function.add_to_role_policy(allow(KINESIS_FAN_OUT_ACTIONS, [self.source_arn]))
        grant_key(function, self.stream.encryption_key, KINESIS_KEY_ACTIONS)

    def mapping_added(
        self, consumer: Construct, mapping: lambda_.EventSourceMapping, options: ConsumerOptions
    ) -> None:
        """The mapping starts once the fan-out consumer exists."""
        if self.fan_out_consumer is not None:
            mapping.node.add_dependency(self.fan_out_consumer)

    def monitoring_options(self, options: ConsumerOptions) -> MonitoringOptions:
        """The lag alarm's threshold: as given, else a quarter of the record age and at most
        ``defaults.ITERATOR_AGE_ALARM_MAX_SECONDS``."""
        monitoring = options.monitoring
        if monitoring.iterator_age_alarm_threshold is not None:
            return monitoring
        quarter = options.mapping.record_age_seconds * defaults.ITERATOR_AGE_ALARM_FRACTION
        limit = defaults.ITERATOR_AGE_ALARM_MAX_SECONDS
        threshold = Duration.seconds(min(quarter, limit))
        return replace(monitoring, iterator_age_alarm_threshold=threshold)

    def add_alarms(
        self, consumer: Construct, options: ConsumerOptions, topic: sns.ITopic | None
    ) -> Mapping[str, cloudwatch.Alarm]:
        """The table's replication to the stream (``consumer.replication_alarms``; None without
        the table or without monitoring)."""
        alarms = None
        if self.table is not None and options.monitoring.monitoring:
            alarms = KinesisReplicationAlarms(
                consumer,
                "Replication",
                table_name=self.table.table_name,
                alarm_action=alarm_action_for(topic),
            )
        consumer.replication_alarms = alarms  # type: ignore[attr-defined]
        return dict(alarms.alarms) if alarms is not None else {}

    def make_redrive(self, scope: Construct, construct_id: str, **props: Any) -> StreamRedrive:
        return KinesisStreamRedrive(scope, construct_id, stream=self.stream, **props)


class KinesisStreamRedrive(StreamRedrive):
    """The redrive function of a KinesisConsumer: the same function as a StreamConsumer's
    (:class:`~cdc_constructs.redrive.StreamRedrive`: the runtime layer's
    ``cdc_consumer.redrive_handler``, invoked by hand once the consumer's fault is fixed, its
    lost-records and Errors alarms on the consumer's alarm topic) over the Kinesis stream's
    route: the handler then takes the Kinesis route (``cdc_consumer.routes.kinesis.replay``, on
    the one redrive driver). It replays the batches the on-failure
    destination holds (an S3 object carries its batch; an SQS message points at it, and the
    records are read back from the Kinesis stream while its retention holds them), in order per
    shard, refuses a batch older than the consumer's markers or, for a pointer, than the
    stream's retention (nothing deleted), and deletes each only after its records succeeded.
    Given the consumer's quarantine queue (as KinesisConsumer gives it), it drains it too, as
    the stream route's redrive does.

    Its grants on the stream: ``kinesis:GetShardIterator``, ``kinesis:GetRecords`` (read a range
    back) and ``kinesis:DescribeStreamSummary`` (the stream's retention, read at run time) on
    this stream only, and ``kms:Decrypt`` on its customer key when it has one; no DynamoDB
    Streams action.

    :param stream: the Kinesis stream the consumer reads (not its enhanced fan-out consumer):
        failure records of another stream are kept, and pointers are read back from it.

    Every other prop is :class:`~cdc_constructs.redrive.StreamRedrive`'s, with its default
    (``quarantine_queue`` and ``quarantine_bucket`` included: the consumer's quarantine,
    drained as on the stream route), except ``stream_arn`` and ``route`` (the stream's).

    Escape hatches: StreamRedrive's (:attr:`function`, :attr:`role`, :attr:`log_group`,
    :attr:`errors_alarm`, :attr:`lost_records_alarm`, :attr:`alarms`).
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, stream: kinesis.IStream, **props: Any
    ) -> None:
        for prop in ("stream_arn", "route"):
            if prop in props:
                raise TypeError(
                    f"KinesisStreamRedrive got unexpected prop {prop!r}: the stream's ARN and "
                    "route are read from stream"
                )
        super().__init__(scope, construct_id, route=KinesisStreamRoute(stream), **props)
