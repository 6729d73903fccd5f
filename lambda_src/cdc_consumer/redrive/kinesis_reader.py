"""Reading a range of a Kinesis shard back (GetShardIterator AT_SEQUENCE_NUMBER, then GetRecords),
in the shape Lambda delivers Kinesis records; and how long the stream keeps a record."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from cdc_consumer.exceptions import RecordsLostError
from cdc_consumer.redrive.defaults import DEFAULT_MAX_EMPTY_PAGES, LOST_ERROR_CODES

__all__ = ["KINESIS_PAGE_LIMIT", "KinesisRangeReader", "to_lambda_kinesis_record"]

#: GetRecords page size on a Kinesis shard: 1,000 records (the API allows 10,000 and 10 MB a
#: call; a shard serves 2 MB/s to all its readers, the mapping included, so pages stay small).
KINESIS_PAGE_LIMIT = 1000


def to_lambda_kinesis_record(
    record: Mapping[str, Any],
    shard_id: str,
    stream_arn: str,
    *,
    arrival: float | None = None,
    function_arn: str | None = None,
) -> dict[str, Any]:
    """A Kinesis GetRecords record (as boto3 returns it) in the shape Lambda delivers it:
    ``kinesis.data`` base64 text, ``approximateArrivalTimestamp`` epoch seconds (``arrival``
    when given), ``eventID`` ``<shard id>:<sequence number>``, the stream's ARN and region."""
    sequence = str(record["SequenceNumber"])
    stamp = record.get("ApproximateArrivalTimestamp")
    if arrival is None:
        arrival = stamp.timestamp() if isinstance(stamp, datetime) else float(stamp or 0)
    data = record["Data"]
    converted: dict[str, Any] = {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": record["PartitionKey"],
            "sequenceNumber": sequence,
            "data": base64.b64encode(data).decode() if isinstance(data, bytes) else data,
            "approximateArrivalTimestamp": arrival,
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"{shard_id}:{sequence}",
        "eventName": "aws:kinesis:record",
        "awsRegion": stream_arn.split(":")[3],
        "eventSourceARN": stream_arn,
    }
    if function_arn:
        converted["invokeIdentityArn"] = function_arn
    return converted


@dataclass
class KinesisRangeReader:
    """Reads the records between two sequence numbers of one Kinesis shard (both included).

    Raises :class:`RecordsLostError` when the stream no longer holds the range (trimmed past its
    retention, shard or stream gone, iterator expired) or when what comes back does not start
    at the start sequence number or does not reach the end one.
    """

    kinesis_client: Any
    stream_arn: str
    max_empty_pages: int = DEFAULT_MAX_EMPTY_PAGES
    page_limit: int = KINESIS_PAGE_LIMIT

    def retention_seconds(self) -> int:
        """How long the stream keeps a record (DescribeStreamSummary's RetentionPeriodHours):
        read at run time, as it can be changed outside the app."""
        summary = self.kinesis_client.describe_stream_summary(StreamARN=self.stream_arn)
        return int(summary["StreamDescriptionSummary"]["RetentionPeriodHours"]) * 3600

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
        if not records or _seq(records[0]) != first:
            found = f"the first record read is {_seq(records[0])}" if records else "none was read"
            raise RecordsLostError(
                shard_id, start, end, f"the start sequence number is not in the shard ({found})"
            )
        if _seq(records[-1]) != last:
            raise RecordsLostError(
                shard_id,
                start,
                end,
                f"the end sequence number is not in the shard (the last record read is"
                f" {_seq(records[-1])})",
            )
        return [to_lambda_kinesis_record(r, shard_id, self.stream_arn) for r in records]

    def _records(self, shard_id: str, start: str, first: int, last: int) -> list[dict[str, Any]]:
        iterator: str | None = self.kinesis_client.get_shard_iterator(
            StreamARN=self.stream_arn,
            ShardId=shard_id,
            ShardIteratorType="AT_SEQUENCE_NUMBER",
            StartingSequenceNumber=start,
        )["ShardIterator"]
        records: list[dict[str, Any]] = []
        empty_pages = 0
        while iterator is not None:
            page = self.kinesis_client.get_records(
                ShardIterator=iterator, Limit=self.page_limit, StreamARN=self.stream_arn
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
        return records


def _seq(record: Mapping[str, Any]) -> int:
    return int(record["SequenceNumber"])
