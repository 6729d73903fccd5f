"""How many readers each table's stream has in the app, so a third (a second, for a table with
replicas) is refused when it is made, not found throttled in production.

DynamoDB Streams serves two concurrent readers per shard; AWS's Lambda guide asks for one on a
global table's stream. Every StreamConsumer, StreamFanOut and OutboxPublisher counts as a
reader of its table's stream. The count is kept per app (a hidden construct at the app's root),
so readers in different stacks count together. A global table's replica is one stream however
many ``ReplicaTable`` constructs read it: they are counted by the replica (its table's name and
region), not by the construct. A reader given ``extra_reader_reason`` is
accepted over the limit, and CdcChecks' CDC-ESM11 is acknowledged on it with that reason.

Readers this library does not make (a plain ``add_event_source_mapping``, a ``CfnPipe``) are not
counted here; CdcChecks' CDC-ESM11 counts every reader of the synthesized app.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack, Token
from aws_cdk import aws_dynamodb as dynamodb
from cdc_consumer.service_limits import MAX_STREAM_READERS, MAX_STREAM_READERS_WITH_REPLICAS
from constructs import Construct, IConstruct

from cdc_constructs.acknowledge import acknowledge
from cdc_constructs.exceptions import Problem

__all__ = ["READERS_RULE", "StreamReaders"]

READERS_RULE = "CDC-ESM11"
"""The CdcChecks rule a reader's ``extra_reader_reason`` acknowledges."""

_REGISTRY_ID = "CdcStreamReaders"


class StreamReaders(Construct):
    """The app's stream readers made by this library: table key -> the readers' paths."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.readers: dict[str, list[str]] = {}
        self.replicated: set[str] = set()
        """The keys of streams known to be a global table's replica's (ReplicaTable)."""
        self.aliases: dict[str, str] = {}
        """Construct path of a table -> the key of the stream it reads (a replica's)."""

    def mark_replicated(self, table: dynamodb.ITable, stream: str | None = None) -> None:
        """Count ``table``'s stream as a global table's (one reader); ``stream`` names the
        replica it reads (say ``replica us-west-2 orders``), so every table reading that
        replica counts its readers together."""
        if stream is not None:
            self.aliases[table.node.path] = stream
        self.replicated.add(self._key(table))

    def _key(self, table: dynamodb.ITable) -> str:
        return self.aliases.get(table.node.path) or _table_key(table)

    @classmethod
    def of(cls, scope: IConstruct) -> StreamReaders:
        """The app's registry (made at the app's root on first use)."""
        root = scope.node.root
        found = root.node.try_find_child(_REGISTRY_ID)
        if isinstance(found, StreamReaders):
            return found
        return cls(root, _REGISTRY_ID)  # type: ignore[arg-type]

    def problems(
        self, table: dynamodb.ITable, reader: str, extra_reader_reason: Any
    ) -> list[Problem]:
        """A problem when ``reader`` would be one reader too many of ``table``'s stream and no
        ``extra_reader_reason`` accepts it; also when that reason is not a sentence."""
        if extra_reader_reason is not None and (
            not isinstance(extra_reader_reason, str) or not extra_reader_reason.strip()
        ):
            return [
                Problem(
                    "extra_reader_reason",
                    extra_reader_reason,
                    "a sentence saying why this stream may have another reader, or omitted",
                )
            ]
        others = self.readers.get(self._key(table), [])
        replicated = self._key(table) in self.replicated or _has_replicas(table)
        limit = MAX_STREAM_READERS_WITH_REPLICAS if replicated else MAX_STREAM_READERS
        if len(others) < limit or extra_reader_reason is not None:
            return []
        replicas = " for a table with replicas" if limit == 1 else ""
        return [
            Problem(
                "table",
                table.node.path,
                f"a table whose stream has room for another reader (at most {limit}{replicas}): "
                f"{reader} would be reader {len(others) + 1}, after {', '.join(others)}. "
                "DynamoDB Streams throttles a third reader of a shard. Run these consumers "
                "behind one mapping (cdc_consumer's ConsumerGroup), fan out once through a "
                "StreamFanOut, or give extra_reader_reason to accept the throttling",
            )
        ]

    def add(
        self,
        table: dynamodb.ITable,
        reader: str,
        reader_resource: IConstruct,
        extra_reader_reason: str | None,
    ) -> None:
        """Count ``reader``; with a reason, acknowledge CDC-ESM11 on its mapping or pipe."""
        self.readers.setdefault(self._key(table), []).append(reader)
        if extra_reader_reason:
            acknowledge(reader_resource, READERS_RULE, extra_reader_reason)


def _table_key(table: dynamodb.ITable) -> str:
    """A table made in this app by its construct path; an imported one by its stream ARN when
    that is a literal (two imports of one table then count together), else its path."""
    arn = table.table_stream_arn
    if arn is not None and not Token.is_unresolved(arn):
        return arn
    return table.node.path


def _has_replicas(table: dynamodb.ITable) -> bool:
    """A TableV2 (AWS::DynamoDB::GlobalTable) with more than its own region's replica."""
    child = table.node.default_child
    if not isinstance(child, dynamodb.CfnGlobalTable):
        return False
    replicas = Stack.of(table).resolve(child.replicas)
    return isinstance(replicas, list) and len(replicas) > 1
