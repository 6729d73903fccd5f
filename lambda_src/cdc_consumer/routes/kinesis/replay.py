"""The Kinesis route as the redrive reads it back (:class:`~cdc_consumer.routes.replay.
ReplayRoute`): a table's changes in a Kinesis data stream, its records named by their Kinesis
sequence number, a failed batch described under ``KinesisBatchInfo`` (AWS Lambda developer
guide, "Retain discarded batch records for a Kinesis Data Streams event source").

A record's item is the DynamoDB change's ``dynamodb.Keys`` inside its ``data``
(:mod:`cdc_consumer.routes.kinesis.records`), as on the stream route, so one item is one item
across the quarantine queue and the failed-batch bucket. A change's place is its
``ApproximateCreationDateTime`` (milli- or microseconds, read as microseconds) and then the
Kinesis sequence number (exact within a shard). A record whose data cannot be decoded (often why
it was quarantined) has no known item: it is its own item (keyed by its sequence number), so it
holds nothing and nothing holds it, and its place is its arrival time. A quarantine pointer to a
record too big for a message has no data: its own ``dynamodb`` keeps the change's keys and times.

The stream's retention is read at run time (``DescribeStreamSummary``: it can be changed outside
the app); a pointer whose records arrived longer ago is not read. Shards are replayed each on its
own (no lineage is read: the redrive function is granted no ``ListShards``).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from cdc_consumer.exceptions import MalformedMessageError, UndecodableRecordError
from cdc_consumer.redrive_shapes import OnFailureMessage
from cdc_consumer.routes.kinesis.records import (
    ROUTE as RECORDS,
)
from cdc_consumer.routes.kinesis.records import (
    decode_data,
    is_kinesis_record,
    kinesis_sequence_number,
    kinesis_time_to_us,
)

__all__ = ["KINESIS_STREAM_ARN_PATTERN", "ROUTE", "KinesisReplay", "to_lambda_kinesis_record"]

#: A Kinesis data stream ARN: ``arn:<partition>:kinesis:<region>:<account>:stream/<name>``.
KINESIS_STREAM_ARN_PATTERN = re.compile(r"^arn:aws[a-z-]*:kinesis:[a-z0-9-]+:\d{12}:stream/[^/]+$")
#: Microseconds in a second: an undecodable record's arrival time (seconds) in the change's unit.
_US = 1_000_000


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


def _change(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The DynamoDB change's ``dynamodb`` section, or None when the data cannot be decoded."""
    pointer = record.get("dynamodb")
    if "data" not in record.get("kinesis", {}) and isinstance(pointer, Mapping) and pointer:
        return pointer
    try:
        stream = decode_data(record).get("dynamodb")
    except UndecodableRecordError:
        return None
    return stream if isinstance(stream, Mapping) else None


class KinesisReplay:
    """The Kinesis route's answers to the redrive."""

    name = "Kinesis data stream"
    batch_info = OnFailureMessage.KINESIS_BATCH_INFO
    arn_shape = "arn:aws:kinesis:REGION:ACCOUNT:stream/NAME"

    def owns_stream(self, stream_arn: str) -> bool:
        return bool(KINESIS_STREAM_ARN_PATTERN.match(stream_arn))

    def owns_record(self, record: Any) -> bool:
        return is_kinesis_record(record)

    def owns_raw(self, raw: Any) -> bool:
        return isinstance(raw, Mapping) and "Data" in raw and "PartitionKey" in raw

    def client(self, session: Any) -> Any:
        return session.client("kinesis")

    def shard_iterator(self, client: Any, stream_arn: str, shard_id: str, start: str) -> str:
        return str(
            client.get_shard_iterator(
                StreamARN=stream_arn,
                ShardId=shard_id,
                ShardIteratorType="AT_SEQUENCE_NUMBER",
                StartingSequenceNumber=start,
            )["ShardIterator"]
        )

    def records_page(self, client: Any, stream_arn: str, iterator: str, limit: int) -> Any:
        return client.get_records(ShardIterator=iterator, Limit=limit, StreamARN=stream_arn)

    def raw_sequence(self, raw: Mapping[str, Any]) -> int:
        return int(raw["SequenceNumber"])

    def lambda_record(
        self, raw: Mapping[str, Any], shard_id: str, stream_arn: str
    ) -> dict[str, Any]:
        return to_lambda_kinesis_record(raw, shard_id, stream_arn)

    def retention_seconds(self, client: Any, stream_arn: str) -> int | None:
        """DescribeStreamSummary's RetentionPeriodHours, in seconds."""
        summary = client.describe_stream_summary(StreamARN=stream_arn)
        return int(summary["StreamDescriptionSummary"]["RetentionPeriodHours"]) * 3600

    def shard_parents(
        self, client: Any, stream_arn: str, shards: Iterable[str]
    ) -> dict[str, str | None]:
        return dict.fromkeys(shards)  # each shard on its own: no lineage is read

    def sequence_number(self, record: Any) -> str | None:
        return kinesis_sequence_number(record)

    def check_record(self, record: Mapping[str, Any], what: str) -> None:
        """An ``eventID`` and a ``kinesis.sequenceNumber`` of digits (the data may be what made
        it poison, so it is not required to decode)."""
        number = kinesis_sequence_number(record)
        if not record.get("eventID") or not (number or "").isdigit():
            raise MalformedMessageError(
                f"{what} is a Kinesis record with eventID {str(record.get('eventID'))[:120]!r}"
                f" and kinesis.sequenceNumber {str(number)[:120]!r}; expected both, the"
                " sequence number a string of digits"
            )

    def filter_view(self, record: Mapping[str, Any]) -> Any:
        return RECORDS.filter_view(record)

    def item_key(self, record: Mapping[str, Any]) -> str:
        """The change's key attributes as canonical JSON; an undecodable record's own sequence
        number."""
        stream = _change(record)
        if stream is None:
            return f"undecodable Kinesis record {kinesis_sequence_number(record)}"
        return json.dumps(stream.get("Keys", {}), sort_keys=True)

    def change_of(self, record: Mapping[str, Any]) -> tuple[int, int]:
        """(``ApproximateCreationDateTime`` in microseconds, Kinesis sequence number)."""
        number = int(kinesis_sequence_number(record) or 0)
        stream = _change(record)
        try:
            created = kinesis_time_to_us((stream or {}).get("ApproximateCreationDateTime"))
        except ValueError:  # undecodable, or no creation time: the arrival time stands in
            arrival = record.get("kinesis", {}).get("approximateArrivalTimestamp", 0)
            created = int(float(arrival or 0) * _US)
        return created, number

    def written_at(self, record: Mapping[str, Any]) -> float | None:
        value = record.get("kinesis", {}).get("approximateArrivalTimestamp")
        try:
            return float(value) if value is not None else None
        except (TypeError, ValueError):
            return None


ROUTE = KinesisReplay()
"""The Kinesis route."""
