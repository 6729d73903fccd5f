"""The DynamoDB stream route's records: a table's own stream, as Lambda delivers it.

A record is the DynamoDB change itself (``eventSource`` ``aws:dynamodb``): its
``dynamodb.SequenceNumber`` names it in ``batchItemFailures`` and orders one item's changes
exactly; ``ApproximateCreationDateTime`` is in epoch seconds, rounded down to the second, so a
change stands at the last microsecond of its second (:func:`cdc_consumer.versions.stream_version`).
Lambda's filters match the record whole. The ledger lists a record in the lane of its stream and
shard (:mod:`cdc_consumer.batch_ledger`).

This route also reads any record no other route claims (a backfill's snapshot rows, records
built by hand): they have a DynamoDB stream record's shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from cdc_consumer.exceptions import UndecodableRecordError
from cdc_consumer.routes.route import Created, Edit, LanePosition
from cdc_consumer.versions import seconds_to_us, stream_version

#: ``eventSource`` of a record Lambda delivers from a DynamoDB stream.
EVENT_SOURCE = "aws:dynamodb"


#: The last ApproximateCreationDateTime decoded, and what it decoded to (replaced whole, so a
#: reader never sees half of it).
_last_time: tuple[Any, int | None, datetime | None] = (None, None, None)


class DynamoDBStreamRoute:
    """The DynamoDB stream route (:class:`~cdc_consumer.routes.route.Route`)."""

    name = "dynamodb_stream"
    event_source = EVENT_SOURCE
    identifier_field = "dynamodb.SequenceNumber"

    def recognises(self, record: Any) -> bool:
        """Whether ``record`` says it comes from a DynamoDB stream."""
        return isinstance(record, Mapping) and record.get("eventSource") == EVENT_SOURCE

    def item_identifier(self, record: Any) -> str | None:
        """``dynamodb.SequenceNumber``. Without ABC checks for a record as JSON (a dict): this
        runs once per record per batch."""
        if type(record) is dict:
            stream = record.get("dynamodb")
            value = stream.get("SequenceNumber") if type(stream) is dict else None
            if type(value) is str and value:
                return value
        stream = record.get("dynamodb") if isinstance(record, Mapping) else None
        value = stream.get("SequenceNumber") if isinstance(stream, Mapping) else None
        return value if isinstance(value, str) and value else None

    def change_document(self, record: Mapping[str, Any]) -> Mapping[str, Any]:
        """The record itself."""
        return record

    def created(self, stream: Mapping[str, Any], event_id: str) -> Created:
        """Epoch seconds, in microseconds and as a datetime."""
        global _last_time
        value = stream.get("ApproximateCreationDateTime")
        if value is None:
            return None, None
        last = _last_time  # one read: (value, its microseconds, its datetime)
        if value == last[0] and type(value) is type(last[0]):
            return last[1], last[2]  # the records of a batch mostly share their second
        try:
            if type(value) is float and value.is_integer():
                time_us = int(value) * 1_000_000  # the common case, exactly, without Decimal
            else:
                time_us = seconds_to_us(value)
            created = datetime.fromtimestamp(time_us / 1_000_000, tz=UTC)  # in datetime's range
        except (TypeError, ValueError, ArithmeticError, OverflowError, OSError) as error:
            raise UndecodableRecordError(
                f"record {event_id}: dynamodb.ApproximateCreationDateTime must be epoch seconds, "
                f"got {value!r}"
            ) from error
        _last_time = (value, time_us, created)
        return time_us, created

    def version(self, time_us: int, sequence_number: str) -> str:
        """At the last microsecond of its second (:func:`~cdc_consumer.versions.stream_version`)."""
        return stream_version(time_us, sequence_number)

    def filter_view(self, record: Mapping[str, Any], edit: Edit | None = None) -> Any:
        """The record whole (``edit`` applied to it)."""
        return record if edit is None else edit(record)

    def envelope(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """The record without its ``dynamodb`` object."""
        return {k: v for k, v in record.items() if k != "dynamodb"}

    def lane_position(self, record: Any) -> LanePosition | None:
        """The record's (stream ARN, sequence number); None for a record that does not say it
        comes from a DynamoDB stream (a snapshot row), or without a numeric sequence number:
        it keeps a marker."""
        if not isinstance(record, dict) or record.get("eventSource") != EVENT_SOURCE:
            return None
        stream = record.get("dynamodb")
        number = stream.get("SequenceNumber") if isinstance(stream, dict) else None
        if not isinstance(number, str) or not number.isdigit():
            return None
        arn = record.get("eventSourceARN")
        return (arn if isinstance(arn, str) else None), int(number)


ROUTE = DynamoDBStreamRoute()
