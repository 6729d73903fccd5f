"""What a backfill reads and whom it feeds: the consumer (a :class:`StreamConsumer`, or one
member of its group), its table and stream; and the refusals knowable at synthesis."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_dynamodb as dynamodb

from cdc_constructs.exceptions import Problem
from cdc_constructs.kinesis_consumer import KinesisConsumer
from cdc_constructs.stream_consumer import StreamConsumer

__all__ = ["BackfillSource", "check_consumer"]


@dataclass(frozen=True)
class BackfillSource:
    """The consumer a backfill feeds and the table it scans (props checked first)."""

    consumer: StreamConsumer
    consumer_name: str
    """The consumer backfilled: its name, or the member's for a group."""

    @classmethod
    def of(cls, consumer: StreamConsumer, member: str | None) -> BackfillSource:
        return cls(consumer, member or consumer.consumer_name)

    @property
    def table(self) -> dynamodb.ITable:
        return self.consumer.source_table

    @property
    def stream_arn(self) -> str:
        return self.consumer.stream_arn


def check_consumer(consumer: Any, member: Any) -> list[Problem]:
    """``consumer`` is a StreamConsumer on a DynamoDB stream; ``member`` names one of its
    group's members (required with a group, refused without one)."""
    if isinstance(consumer, KinesisConsumer):
        return [
            Problem(
                "consumer",
                consumer.node.path,
                "a StreamConsumer of a DynamoDB stream: a KinesisConsumer reads the table's "
                "changes from a Kinesis stream, and a backfill's time horizon is checked "
                "against how far the consumer has read the table's own stream (backfill a "
                "KinesisConsumer's view through a StreamConsumer on the same table instead)",
            )
        ]
    if not isinstance(consumer, StreamConsumer):
        return [Problem("consumer", consumer, "a StreamConsumer")]
    if consumer.source_table.table_stream_arn is None:
        return [Problem("consumer", consumer.node.path, "a consumer of a table with a stream")]
    return _check_member(consumer, member)


def _check_member(consumer: StreamConsumer, member: Any) -> list[Problem]:
    names = consumer.group.names
    if not names:
        if member is None or member == consumer.consumer_name:
            return []
        return [
            Problem(
                "member",
                member,
                f"None: consumer {consumer.node.path} has no members (it is one consumer)",
            )
        ]
    if member not in names:
        return [
            Problem(
                "member",
                member,
                f"the consumer_name of the member of {consumer.node.path} to backfill, one "
                f"of {names} (a backfill feeds one member)",
            )
        ]
    return []
