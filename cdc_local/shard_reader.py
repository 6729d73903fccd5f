"""Reading a stream shard by shard with GetShardIterator and GetRecords, written once for every
stream the local pipeline reads (a table's DynamoDB stream, a route's source).

A :class:`ShardReader` keeps an iterator per shard. :meth:`ShardReader.read` reads every shard
that is ready to its present end, page by page, handing each record to the caller as it comes
(so the caller's state, e.g. which shards are settled, is current for the next shard); a shard
whose pages end (no next iterator) is closed and makes the reader look for new shards, which are
read from their start. What "ready" means is the caller's: a child shard (``ParentShardId``) is
read at the earliest once its parent is read to its end (:meth:`ShardReader.read_to_end`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

__all__ = ["ShardCalls", "ShardPages", "ShardReader"]


class ShardPages(Protocol):
    """A stream's shards and pages, through its service's API."""

    def shards(self) -> list[tuple[str, str | None]]:
        """Each shard's id and its parent's (None without one), oldest first."""
        ...

    def iterator(self, shard_id: str, position: str) -> str:
        """GetShardIterator of ``shard_id`` at ``position`` (TRIM_HORIZON, LATEST)."""
        ...

    def page(self, iterator: str) -> tuple[list[dict[str, Any]], str | None]:
        """GetRecords: one page of records and the next iterator (None: the shard is closed and
        read to its end)."""
        ...


class ShardCalls:
    """:class:`ShardPages` of one stream through a boto3 ``client`` of an API with DynamoDB
    Streams' and Kinesis' shape: ``stream`` names the stream in a request (``{"StreamArn":
    ...}``, ``{"StreamName": ...}``), ``limit`` is GetRecords' largest page; a subclass lists
    the shards (:meth:`listed`)."""

    def __init__(self, client: Any, stream: Mapping[str, str], limit: int) -> None:
        self.client = client
        self.stream = dict(stream)
        self.limit = limit

    def listed(self) -> list[dict[str, Any]]:
        """The stream's shards as its API describes them (``ShardId``, ``ParentShardId``)."""
        raise NotImplementedError

    def shards(self) -> list[tuple[str, str | None]]:
        return [(shard["ShardId"], shard.get("ParentShardId")) for shard in self.listed()]

    def iterator(self, shard_id: str, position: str) -> str:
        iterator: str = self.client.get_shard_iterator(
            **self.stream, ShardId=shard_id, ShardIteratorType=position
        )["ShardIterator"]
        return iterator

    def page(self, iterator: str) -> tuple[list[dict[str, Any]], str | None]:
        response = self.client.get_records(ShardIterator=iterator, Limit=self.limit)
        return response["Records"], response.get("NextShardIterator")


class ShardReader:
    """The iterators of ``pages``' shards (none until :meth:`discover`)."""

    def __init__(self, pages: ShardPages) -> None:
        self.pages = pages
        self.iterators: dict[str, str | None] = {}
        #: Shard id -> its parent, for the shards known.
        self.parents: dict[str, str | None] = {}

    def discover(self, position: str = "TRIM_HORIZON") -> int:
        """Take an iterator of each shard not seen before, at ``position``; how many."""
        found = 0
        for shard_id, parent in self.pages.shards():
            if shard_id not in self.iterators:
                self.parents[shard_id] = parent
                self.iterators[shard_id] = self.pages.iterator(shard_id, position)
                found += 1
        return found

    def read_to_end(self, shard_id: str | None) -> bool:
        """Whether ``shard_id`` is closed and read to its end (an unknown shard counts as one)."""
        return shard_id is None or self.iterators.get(shard_id, None) is None

    def read(
        self,
        accept: Callable[[str, dict[str, Any]], None],
        ready: Callable[[str | None], bool] | None = None,
    ) -> tuple[int, int]:
        """Read each open shard whose parent is ``ready`` (default: read to its end) to its
        present end, calling ``accept(shard_id, record)`` for each record; then, if a shard
        closed, look for new shards. Returns (records read, shards found)."""
        ready = ready or self.read_to_end
        read, closed = 0, False
        for shard_id, iterator in list(self.iterators.items()):
            if iterator is None or not ready(self.parents.get(shard_id)):
                continue
            while iterator:
                records, iterator = self.pages.page(iterator)
                for record in records:
                    accept(shard_id, record)
                read += len(records)
                if not records:
                    break
            self.iterators[shard_id] = iterator
            closed = closed or iterator is None
        return read, self.discover() if closed else 0
