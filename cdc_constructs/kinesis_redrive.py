"""KinesisStreamRedrive: the redrive function of a KinesisConsumer (the Kinesis route).

The same function as a StreamConsumer's (:class:`~cdc_constructs.redrive.StreamRedrive`: the
runtime layer's ``cdc_consumer.redrive_handler``, invoked by hand once the consumer's fault is
fixed, its lost-records and Errors alarms on the consumer's alarm topic), given the Kinesis
stream's ARN: the handler then takes the Kinesis route (``cdc_consumer.routes.kinesis.replay``,
on the one redrive driver). It replays the batches the on-failure destination holds (an S3
object carries its batch; an SQS message points at it, and the records are read back from the
Kinesis stream while its retention holds them), in order per shard, refuses a
batch older than the consumer's markers or, for a pointer, than the stream's retention (nothing
deleted), and deletes each only after its records succeeded. Given the consumer's quarantine
queue (as KinesisConsumer gives it), it drains it too, as the stream route's redrive does: each
message a Kinesis record, held behind an earlier change of its item in the queue or the bucket,
refused when older than the markers, deleted after success (``QUARANTINE_QUEUE_URL``; receive,
delete and change-visibility on the queue, and its key's decrypt when it is encrypted).

Its grants on the stream: ``kinesis:GetShardIterator``, ``kinesis:GetRecords`` (read a range
back) and ``kinesis:DescribeStreamSummary`` (the stream's retention, read at run time) on this
stream only, and ``kms:Decrypt`` on its customer key when it has one; no DynamoDB Streams action.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from aws_cdk import aws_kinesis as kinesis
from constructs import Construct

from cdc_constructs.failure_kinds.kind import RedriveAccess
from cdc_constructs.permissions import grant_key
from cdc_constructs.redrive import StreamRedrive

__all__ = ["KINESIS_REDRIVE_ACTIONS", "KinesisStreamRedrive"]

KINESIS_REDRIVE_ACTIONS: Final = (
    "kinesis:DescribeStreamSummary",
    "kinesis:GetRecords",
    "kinesis:GetShardIterator",
)
"""What the Kinesis route's redrive reads of its stream: a known range of one shard back
(GetShardIterator AT_SEQUENCE_NUMBER, GetRecords) and the retention (DescribeStreamSummary). It
never lists shards or streams."""

KINESIS_REDRIVE_KEY_ACTIONS: Final = ("kms:Decrypt",)
"""Reading records of a stream encrypted with a customer key."""


class KinesisStreamRedrive(StreamRedrive):
    """A redrive function for one Kinesis consumer (see the module docstring).

    :param stream: the Kinesis stream the consumer reads (not its enhanced fan-out consumer):
        failure records of another stream are kept, and pointers are read back from it.

    Every other prop is :class:`~cdc_constructs.redrive.StreamRedrive`'s, with its default
    (``quarantine_queue`` and ``quarantine_bucket`` included: the consumer's quarantine,
    drained as on the stream route), except ``stream_arn`` (the stream's).

    Escape hatches: StreamRedrive's (:attr:`function`, :attr:`role`, :attr:`log_group`,
    :attr:`errors_alarm`, :attr:`lost_records_alarm`, :attr:`alarms`).
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, stream: kinesis.IStream, **props: Any
    ) -> None:
        if "stream_arn" in props:
            raise TypeError(
                "KinesisStreamRedrive got unexpected prop 'stream_arn': the stream's ARN is read"
                " from stream"
            )
        super().__init__(scope, construct_id, stream_arn=stream.stream_arn, **props)
        grant_key(self.function, stream.encryption_key, KINESIS_REDRIVE_KEY_ACTIONS)

    def _access(self, stream_arn: str) -> RedriveAccess:
        return KinesisRedriveAccess(stream_arn)


@dataclass
class KinesisRedriveAccess(RedriveAccess):
    """The failure kinds' redrive grants with the Kinesis stream in place of a DynamoDB stream:
    whatever a kind asks of the stream (a range read back, its shard lineage), the Kinesis
    route's redrive reads a range back and the retention (:data:`KINESIS_REDRIVE_ACTIONS`); an
    S3 object carries its batch, but one without it is read back too."""

    def read_stream(self, actions: tuple[str, ...]) -> None:
        super().read_stream(KINESIS_REDRIVE_ACTIONS)
