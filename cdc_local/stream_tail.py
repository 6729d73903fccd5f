"""Reading a DynamoDB stream's new records, every shard of it, a parent's before its children's.

What the local pipeline's own readers of a table's stream share (the table's delivery to Kinesis,
a global table's replication): each keeps one :class:`StreamTail` per stream and asks it for the
records written since the last call. Event source mappings read the stream their own way (batches,
checkpoints, retries: :mod:`cdc_local.event_source_mapping`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["StreamTail"]

#: GetRecords' largest page.
_PAGE = 1000


@dataclass
class StreamTail:
    """The records of ``stream_arn`` not read yet, through ``streams`` (a ``dynamodbstreams``
    client of the stream's region), from the oldest record on (``TRIM_HORIZON``)."""

    stream_arn: str
    streams: Any
    _iterators: dict[str, str | None] = field(default_factory=dict)
    _parents: dict[str, str | None] = field(default_factory=dict)

    def read(self) -> list[dict[str, Any]]:
        """The stream's new records as GetRecords gives them; a closed shard read to its end
        makes the tail look for its children (cdc_local.shards)."""
        if not self._iterators:
            self._discover()
        records: list[dict[str, Any]] = []
        closed = False
        for shard_id, iterator in list(self._iterators.items()):
            if iterator is None or self._iterators.get(self._parents.get(shard_id) or ""):
                continue  # done, or its parent is not read to its end yet
            while iterator:
                response = self.streams.get_records(ShardIterator=iterator, Limit=_PAGE)
                iterator = response.get("NextShardIterator")
                records += response["Records"]
                if not response["Records"]:
                    break
            self._iterators[shard_id] = iterator
            closed = closed or iterator is None
        if closed and self._discover():
            records += self.read()
        return records

    def _discover(self) -> bool:
        """Take an iterator of each shard not seen before; whether there was one."""
        description = self.streams.describe_stream(StreamArn=self.stream_arn)
        found = False
        for shard in description["StreamDescription"]["Shards"]:
            if shard["ShardId"] not in self._iterators:
                self._parents[shard["ShardId"]] = shard.get("ParentShardId")
                self._iterators[shard["ShardId"]] = self.streams.get_shard_iterator(
                    StreamArn=self.stream_arn,
                    ShardId=shard["ShardId"],
                    ShardIteratorType="TRIM_HORIZON",
                )["ShardIterator"]
                found = True
        return found
