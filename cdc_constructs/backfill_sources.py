"""What a backfill reads and whom it feeds: the consumer (a :class:`StreamConsumer`, or one
member of its group), its table and stream; and the refusals knowable at synthesis."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_dynamodb as dynamodb

from cdc_constructs.exceptions import Problem
from cdc_constructs.filter_checks import as_pattern
from cdc_constructs.stream_consumer import StreamConsumer

__all__ = ["BackfillSource", "check_consumer"]

SNAPSHOT_EVENT_NAME = "INSERT"
"""The ``eventName`` of a snapshot row (``cdc_consumer.snapshots``: a stream-shaped INSERT)."""


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
    if not isinstance(consumer, StreamConsumer):
        return [Problem("consumer", consumer, "a StreamConsumer")]
    if not consumer.route.reads_table_stream:
        return [
            Problem(
                "consumer",
                consumer.node.path,
                f"a StreamConsumer of a DynamoDB stream: a {type(consumer).__name__} reads the "
                "table's changes from another stream, and a backfill's time horizon is checked "
                "against how far the consumer has read the table's own stream (backfill its "
                "view through a StreamConsumer on the same table instead)",
            )
        ]
    if consumer.source_table.table_stream_arn is None:
        return [Problem("consumer", consumer.node.path, "a consumer of a table with a stream")]
    found = _check_member(consumer, member)
    return found or _check_takes_rows(consumer, member)


def _check_takes_rows(consumer: StreamConsumer, member: str | None) -> list[Problem]:
    """The consumer backfilled can take a snapshot row (an INSERT): some filter pattern of
    its own (a member's; a single consumer's mapping) does not pin ``eventName`` without it."""
    if member is not None and consumer.group.names:
        (chosen,) = [m for m in consumer.group.members if m.consumer_name == member]
        patterns, whose = list(chosen.filters), f"member {member!r}"
    else:
        patterns, whose = list(consumer.options.mapping.filter_patterns), "its mapping"
    if not patterns or any(_admits_insert(as_pattern(p)) for p in patterns):
        return []
    prop, value = ("member", member) if member is not None else ("consumer", consumer.node.path)
    return [
        Problem(
            prop,
            value,
            f"a consumer that takes INSERT changes: the filters of {whose} admit no INSERT, "
            "and a backfill hands each item over as one (a snapshot row)",
        )
    ]


def _admits_insert(pattern: Any) -> bool:
    names = pattern.get("eventName") if isinstance(pattern, Mapping) else None
    if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
        return SNAPSHOT_EVENT_NAME in names
    return True


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
