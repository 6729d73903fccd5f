"""Reading a range of a shard back from the stream (GetShardIterator AT_SEQUENCE_NUMBER, then
GetRecords page by page), in the shape Lambda delivers records: one reader for every route, whose
client calls and record shape the route gives (:mod:`cdc_consumer.routes.replay`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from cdc_consumer.exceptions import RecordsLostError
from cdc_consumer.redrive.defaults import (
    DEFAULT_MAX_EMPTY_PAGES,
    DEFAULT_PAGE_LIMIT,
    LOST_ERROR_CODES,
)
from cdc_consumer.routes.replay import ReplayRoute, route_of_raw, route_of_stream

__all__ = ["StreamRangeReader", "to_lambda_record"]


def to_lambda_record(
    record: Mapping[str, Any], stream_arn: str, shard_id: str = ""
) -> dict[str, Any]:
    """A GetRecords record (as boto3 returns it, of any route) in the shape Lambda delivers it
    from ``stream_arn`` (``shard_id``: the shard it was read from, where the route's record
    names it). ``record`` is not changed."""
    route = route_of_raw(record)
    if route is None:
        raise ValueError(f"{str(record)[:120]!r} is no route's GetRecords record")
    return route.lambda_record(record, shard_id, stream_arn)


@dataclass
class StreamRangeReader:
    """Reads the records between two sequence numbers of one shard (both included).

    Sequence numbers are compared as integers (they are decimal strings of varying length).
    Reading stops at the first record past the end, at the end of a closed shard (no
    ``NextShardIterator``), or after ``max_empty_pages`` empty pages in a row. Raises
    :class:`RecordsLostError` when the stream no longer holds the range (trimmed, shard not
    found, iterator expired) or when the records that come back do not start at the start
    sequence number or do not reach the end one. ``route``: the stream's (default: the one its
    ARN names).
    """

    streams_client: Any
    stream_arn: str
    max_empty_pages: int = DEFAULT_MAX_EMPTY_PAGES
    page_limit: int = DEFAULT_PAGE_LIMIT
    route: ReplayRoute | None = None
    _route: ReplayRoute = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._route = self.route or route_of_stream(self.stream_arn)

    def read(self, shard_id: str, start: str, end: str) -> list[dict[str, Any]]:
        first, last = int(start), int(end)
        try:
            records = self._records(shard_id, start, first, last)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code in LOST_ERROR_CODES:
                message = error.response["Error"].get("Message", "")
                raise RecordsLostError(shard_id, start, end, f"{code}: {message}") from error
            raise
        seq = self._route.raw_sequence
        if not records or seq(records[0]) != first:
            found = f"the first record read is {seq(records[0])}" if records else "none was read"
            raise RecordsLostError(
                shard_id,
                start,
                end,
                f"the start sequence number {start} is not in the shard ({found})",
            )
        if seq(records[-1]) != last:
            raise RecordsLostError(
                shard_id,
                start,
                end,
                f"the end sequence number {end} is not in the shard (the last record read is"
                f" {seq(records[-1])})",
            )
        return [self._route.lambda_record(r, shard_id, self.stream_arn) for r in records]

    def _records(self, shard_id: str, start: str, first: int, last: int) -> list[dict[str, Any]]:
        route, client, arn = self._route, self.streams_client, self.stream_arn
        iterator: str | None = route.shard_iterator(client, arn, shard_id, start)
        records: list[dict[str, Any]] = []
        empty_pages = 0
        while iterator is not None:
            page = route.records_page(client, arn, iterator, self.page_limit)
            iterator = page.get("NextShardIterator")
            if not page["Records"]:
                empty_pages += 1
                if empty_pages >= self.max_empty_pages:
                    break
                continue
            empty_pages = 0
            records.extend(r for r in page["Records"] if first <= route.raw_sequence(r) <= last)
            if route.raw_sequence(page["Records"][-1]) >= last:
                break
        return records
