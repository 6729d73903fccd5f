"""Reading a DynamoDB stream's new records, every shard of it, a parent's before its children's.

What the local pipeline's own readers of a table's stream share (a route's feed, a global table's
replication): each keeps one :class:`StreamTail` per stream and asks it for the records written
since the last call. :class:`StreamPages` is the stream's API for a
:class:`~cdc_local.shard_reader.ShardReader` (event source mappings read it their own way:
batches, checkpoints, retries: :mod:`cdc_local.event_source_mapping`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc_local.shard_reader import ShardCalls, ShardReader

__all__ = ["GET_RECORDS_LIMIT", "StreamPages", "StreamTail"]

#: GetRecords returns at most 1,000 records per call (DynamoDB Streams API limit).
GET_RECORDS_LIMIT = 1000


class StreamPages(ShardCalls):
    """The shards and pages of ``stream_arn`` through ``streams`` (a ``dynamodbstreams`` client
    of the stream's region)."""

    def __init__(self, streams: Any, stream_arn: str) -> None:
        super().__init__(streams, {"StreamArn": stream_arn}, GET_RECORDS_LIMIT)
        self.streams = streams
        self.stream_arn = stream_arn

    def describe(self) -> dict[str, Any]:
        """DescribeStream's ``StreamDescription``."""
        description: dict[str, Any] = self.streams.describe_stream(StreamArn=self.stream_arn)[
            "StreamDescription"
        ]
        return description

    def listed(self) -> list[dict[str, Any]]:
        shards: list[dict[str, Any]] = self.describe()["Shards"]
        return shards


@dataclass
class StreamTail:
    """The records of ``stream_arn`` not read yet, through ``streams`` (a ``dynamodbstreams``
    client of the stream's region), from the oldest record on (``TRIM_HORIZON``)."""

    stream_arn: str
    streams: Any
    _reader: ShardReader | None = field(default=None, repr=False)

    def read(self) -> list[dict[str, Any]]:
        """The stream's new records as GetRecords gives them; a closed shard read to its end
        makes the tail read its children (cdc_local.shards) in the same call."""
        if self._reader is None:
            self._reader = ShardReader(StreamPages(self.streams, self.stream_arn))
        if not self._reader.iterators:
            self._reader.discover()
        records: list[dict[str, Any]] = []
        while True:
            _, found = self._reader.read(lambda _shard, record: records.append(record))
            if not found:
                return records
