"""Shard rollover: DynamoDB Streams' parent and child shards on the local endpoint.

DynamoDB closes a stream's shard and opens a child about every four hours (and when a
partition splits): an item's later changes are then in the child, and Lambda reads a parent
shard to its end before its children. moto keeps one shard per stream. This module gives each
local stream a lineage of shards over moto's one list of records, so the local mapping, the
on-failure destinations and the redrive see what they see on AWS:

- :func:`roll_shards` closes the open shard of a table's stream at its newest record and opens
  a child (``ParentShardId`` the closed one) that takes every later record. The child's id is
  ``shardId-<20-digit epoch ms>-<8 hex>`` (the creation time on the caller's clock, after its
  parent's), the shape DynamoDB's ids have. A shard with no record since it opened is not
  closed (the call returns it).
- ``DescribeStream`` lists the shards, parents first, with ``ParentShardId`` and
  ``SequenceNumberRange`` (``EndingSequenceNumber`` once closed). A closed shard whose records
  are all trimmed (:mod:`cdc_local.retention`) is no longer listed, as on AWS after 24 hours:
  its children's parent is then a shard DescribeStream does not know.
- ``GetShardIterator`` takes any listed shard (another id: ``ResourceNotFoundException``; a
  sequence number outside the shard: ``ValidationException``); ``TRIM_HORIZON`` starts at the
  shard's first record not trimmed, ``LATEST`` of a closed shard at its end. ``GetRecords``
  returns only the shard's records and, once a closed shard is read to its end, no
  ``NextShardIterator``.

One child per rollover (a split into two children by key range is not modelled: it changes
nothing for one item's order, which is what the lineage is for). Until a stream's first
rollover moto behaves exactly as before. :func:`apply` patches moto's DynamoDB Streams backend
once per process (the server runs in this process); :class:`cdc_local.endpoint.LocalEndpoint`
calls it when it starts.

Used by :meth:`cdc_local.runner.LocalPipeline.roll_shards`, the local mapping
(:class:`cdc_local.event_source_mapping.EventSourceMapping` reads a child once its parent is
read and settled) and the tests of the redrive's lineage order.
"""

from __future__ import annotations

import functools
import time
import uuid
from dataclasses import dataclass
from typing import Any

from cdc_local.retention import horizon_of

__all__ = ["LocalShard", "apply", "roll_shards", "shards_of"]

#: The attribute set on moto's StreamShard: its lineage of local shards, oldest first.
_SHARDS = "_cdc_local_shards"
#: The attribute set on moto's ShardIterator: the local shard it reads.
_ITERATOR_SHARD = "_cdc_local_shard"
_MARKER = "_cdc_local_shards_patch"


@dataclass
class LocalShard:
    """One shard of a local stream: its records are moto's ``start..end`` (``end`` None while
    the shard is open)."""

    shard_id: str
    parent_id: str | None
    start: int
    end: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The shard as DescribeStream lists it."""
        numbers = {"StartingSequenceNumber": str(self.start)}
        if self.end is not None:
            numbers["EndingSequenceNumber"] = str(self.end)
        shard: dict[str, Any] = {"ShardId": self.shard_id, "SequenceNumberRange": numbers}
        if self.parent_id is not None:
            shard["ParentShardId"] = self.parent_id
        return shard


def _error(code: str, message: str) -> Exception:
    from moto.core.exceptions import JsonRESTError

    return JsonRESTError(code, message)


def shards_of(stream_shard: Any) -> list[LocalShard]:
    """The local shards of moto's ``stream_shard`` (one, moto's own, until the first rollover)."""
    shards: list[LocalShard] | None = getattr(stream_shard, _SHARDS, None)
    if shards is None:
        return [LocalShard(stream_shard.id, None, stream_shard.starting_sequence_number)]
    return shards


def _listed(stream_shard: Any) -> list[LocalShard]:
    horizon = horizon_of(stream_shard)
    return [s for s in shards_of(stream_shard) if s.end is None or s.end >= horizon]


def roll_shards(table_name: str | None = None, now: float | None = None) -> dict[str, str]:
    """Close the open shard of each local table's stream (or of ``table_name``'s) and open its
    child; return each table's open shard id. ``now`` (epoch seconds, default the wall clock)
    goes into the child's id."""
    from moto.dynamodb.models import dynamodb_backends

    apply()
    opened: dict[str, str] = {}
    for regions in dynamodb_backends.values():
        for backend in regions.values():
            for table in backend.tables.values():
                shard = getattr(table, "stream_shard", None)
                if shard is not None and table_name in (None, table.name):
                    opened[table.name] = _roll(shard, time.time() if now is None else now)
    return opened


def _roll(stream_shard: Any, now: float) -> str:
    shards = shards_of(stream_shard)
    current = shards[-1]
    newest = stream_shard.starting_sequence_number + len(stream_shard.items) - 1
    if newest < current.start:
        return current.shard_id  # nothing written since it opened: nothing to close
    parent_ms = int(current.shard_id.split("-")[1]) if current.shard_id.count("-") == 2 else 0
    created_ms = max(int(now * 1000), parent_ms + 1)
    child = LocalShard(
        f"shardId-{created_ms:020d}-{uuid.uuid4().hex[:8]}", current.shard_id, newest + 1
    )
    current.end = newest
    setattr(stream_shard, _SHARDS, [*shards, child])
    return child.shard_id


def apply() -> None:
    """Patch moto's DynamoDB Streams backend to serve the local shards (idempotent)."""
    from moto.dynamodbstreams import models

    if getattr(models.DynamoDBStreamsBackend.get_shard_iterator, _MARKER, False):
        return
    describe = models.DynamoDBStreamsBackend.describe_stream
    iterator_of = models.DynamoDBStreamsBackend.get_shard_iterator
    get = models.ShardIterator.get

    @functools.wraps(describe)
    def describe_stream(self: Any, arn: str) -> Any:
        stream = describe(self, arn)
        shard = self._get_table_from_arn(arn).stream_shard
        if shard is not None and getattr(shard, _SHARDS, None) is not None:
            stream["Shards"] = [s.to_json() for s in _listed(shard)]
        return stream

    @functools.wraps(iterator_of)
    def get_shard_iterator(
        self: Any, arn: str, shard_id: str, shard_iterator_type: str, sequence_number: Any = None
    ) -> Any:
        stream_shard = self._get_table_from_arn(arn).stream_shard
        if stream_shard is None or getattr(stream_shard, _SHARDS, None) is None:
            return iterator_of(self, arn, shard_id, shard_iterator_type, sequence_number)
        local = _find(stream_shard, shard_id)
        if shard_iterator_type in ("AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER"):
            _check_in(local, int(sequence_number))
        iterator = iterator_of(
            self, arn, stream_shard.id, shard_iterator_type, sequence_number
        )  # moto's (and the retention's) checks, on moto's one shard
        if shard_iterator_type == "TRIM_HORIZON":
            iterator.sequence_number = max(int(iterator.sequence_number), local.start)
        elif shard_iterator_type == "LATEST" and local.end is not None:
            iterator.sequence_number = local.end + 1
        setattr(iterator, _ITERATOR_SHARD, local)
        return iterator

    @functools.wraps(get)
    def get_records(self: Any, limit: int = 1000) -> Any:
        local: LocalShard | None = getattr(self, _ITERATOR_SHARD, None)
        if local is None and getattr(self.stream_shard, _SHARDS, None) is not None:
            local = shards_of(self.stream_shard)[0]  # taken before the first rollover: the root's
        if local is None:
            return get(self, limit)
        if local.end is not None:
            limit = min(limit, local.end - int(self.sequence_number) + 1)
            if limit <= 0:
                return {"Records": []}  # a closed shard read to its end: no next iterator
        page = get(self, limit)
        setattr(
            self.streams_backend.shard_iterators[page["NextShardIterator"]], _ITERATOR_SHARD, local
        )
        records = page["Records"]
        if (
            local.end is not None
            and records
            and int(records[-1]["dynamodb"]["SequenceNumber"]) >= local.end
        ):
            return {"Records": records}
        return page

    setattr(get_shard_iterator, _MARKER, True)
    # Patching moto's classes in place: mypy refuses any assignment to a method.
    models.DynamoDBStreamsBackend.describe_stream = describe_stream  # type: ignore[method-assign]
    models.DynamoDBStreamsBackend.get_shard_iterator = get_shard_iterator  # type: ignore[method-assign]
    models.ShardIterator.get = get_records  # type: ignore[method-assign]


def _find(stream_shard: Any, shard_id: str) -> LocalShard:
    for local in _listed(stream_shard):
        if local.shard_id == shard_id:
            return local
    raise _error(
        "ResourceNotFoundException",
        f"Requested resource not found: Shard {shard_id} does not exist in the stream",
    )


def _check_in(local: LocalShard, sequence_number: int) -> None:
    if sequence_number < local.start or (local.end is not None and sequence_number > local.end):
        raise _error(
            "ValidationException",
            f"Invalid SequenceNumber {sequence_number} for shard {local.shard_id}"
            f" ({local.start}..{local.end if local.end is not None else 'open'})",
        )
