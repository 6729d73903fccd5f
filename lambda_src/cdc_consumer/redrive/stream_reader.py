"""Reading a range of a shard back from the stream, in the shape Lambda delivers records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from cdc_consumer.exceptions import RecordsLostError
from cdc_consumer.redrive.defaults import (
    DEFAULT_MAX_EMPTY_PAGES,
    DEFAULT_PAGE_LIMIT,
    LOST_ERROR_CODES,
)
from cdc_consumer.wire import to_wire

__all__ = ["StreamRangeReader", "to_lambda_record"]

#: The one value of a GetRecords record that boto3 parses into a datetime (in ``dynamodb``).
_CREATED = "ApproximateCreationDateTime"


def to_lambda_record(record: Mapping[str, Any], stream_arn: str) -> dict[str, Any]:
    """A GetRecords record (as boto3 returns it) in the shape Lambda delivers it to a consumer.

    Lambda's event differs from boto3's GetRecords response in these ways: it adds
    ``eventSourceARN``; it carries the wire JSON, so ``dynamodb.ApproximateCreationDateTime`` is
    epoch seconds (whole seconds, as DynamoDB Streams rounds it down to the second) and binary
    attributes are base64 text (see :func:`cdc_consumer.wire.to_wire`); and ``userIdentity``
    has lower-case keys (``type``, ``principalId``), which is what TTL filters and the
    runtime's TTL detection look at. ``record`` is not changed.
    """
    converted: dict[str, Any] = to_wire(record)  # a copy: every mapping in it is new
    stream = converted.get("dynamodb")
    if isinstance(stream, dict) and isinstance(stream.get(_CREATED), datetime):
        stream[_CREATED] = int(stream[_CREATED].timestamp())
    identity = converted.get("userIdentity")
    if isinstance(identity, Mapping):
        converted["userIdentity"] = {
            "type": identity.get("Type", identity.get("type")),
            "principalId": identity.get("PrincipalId", identity.get("principalId")),
        }
    converted["eventSourceARN"] = stream_arn
    return converted


def _seq(record: Mapping[str, Any]) -> int:
    return int(record["dynamodb"]["SequenceNumber"])


@dataclass
class StreamRangeReader:
    """Reads the records between two sequence numbers of one shard (both included).

    Sequence numbers are compared as integers (they are decimal strings of varying length).
    Reading stops at the first record past the end, at the end of a closed shard (no
    ``NextShardIterator``), or after ``max_empty_pages`` empty pages in a row. Raises
    :class:`RecordsLostError` when the stream no longer holds the range (trimmed, shard not
    found, iterator expired) or when the records that come back do not start at the start
    sequence number or do not reach the end one.
    """

    streams_client: Any
    stream_arn: str
    max_empty_pages: int = DEFAULT_MAX_EMPTY_PAGES
    page_limit: int = DEFAULT_PAGE_LIMIT

    def read(self, shard_id: str, start: str, end: str) -> list[dict[str, Any]]:
        first, last = int(start), int(end)

        def lost(reason: str) -> RecordsLostError:
            return RecordsLostError(shard_id, start, end, reason)

        try:
            iterator: str | None = self.streams_client.get_shard_iterator(
                StreamArn=self.stream_arn,
                ShardId=shard_id,
                ShardIteratorType="AT_SEQUENCE_NUMBER",
                SequenceNumber=start,
            )["ShardIterator"]
            records: list[dict[str, Any]] = []
            empty_pages = 0
            while iterator is not None:
                page = self.streams_client.get_records(
                    ShardIterator=iterator, Limit=self.page_limit
                )
                iterator = page.get("NextShardIterator")
                if not page["Records"]:
                    empty_pages += 1
                    if empty_pages >= self.max_empty_pages:
                        break
                    continue
                empty_pages = 0
                records.extend(r for r in page["Records"] if first <= _seq(r) <= last)
                if _seq(page["Records"][-1]) >= last:
                    break
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code in LOST_ERROR_CODES:
                raise lost(f"{code}: {error.response['Error'].get('Message', '')}") from error
            raise
        if not records or _seq(records[0]) != first:
            found = f"the first record read is {_seq(records[0])}" if records else "none was read"
            raise lost(f"the start sequence number {start} is not in the shard ({found})")
        if _seq(records[-1]) != last:
            raise lost(
                f"the end sequence number {end} is not in the shard (the last record read is"
                f" {_seq(records[-1])})"
            )
        return [to_lambda_record(r, self.stream_arn) for r in records]
