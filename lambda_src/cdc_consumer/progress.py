"""How far a consumer has applied its stream: the progress a backfill checks its horizon against.

With :data:`~cdc_consumer.environment_variables.CONSUMER_PROGRESS_ENV` set (ViewBackfill sets it on
the
consumer it backfills), each batch's newest settled ``ApproximateCreationDateTime`` is written
to the idempotency-table item :meth:`ConsumerProgress.record_id` (attribute ``appliedUntilUs``;
the first write also keeps its batch's oldest time, ``firstAppliedUs``), only forward (a
condition keeps the larger value when containers race) and at most once per
:attr:`ConsumerProgress.INTERVAL_SECONDS` per container. Without the variable nothing is
written: the streaming path of a consumer that is not backfilled pays one environment lookup per
batch. The item has no expiration: it is one item per consumer, and a backfill reads it later.

It is written after the batch's transactions, so what it says is applied: a backfill whose
horizon is at or below it knows the consumer reads the stream there (docs/backfill.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer import logs
from cdc_consumer.backfill.shapes import ConsumerProgress
from cdc_consumer.defaults import ID_ATTRIBUTE
from cdc_consumer.environment_variables import CONSUMER_PROGRESS_ENV
from cdc_consumer.versions import seconds_to_us

__all__ = ["ProgressRecorder", "newest_time_us", "oldest_time_us", "read_progress"]


def newest_time_us(records: Sequence[Any]) -> int | None:
    """The newest ``dynamodb.ApproximateCreationDateTime`` of ``records`` (epoch µs)."""
    times = _times(records)
    return None if not times else seconds_to_us(max(times))


def oldest_time_us(records: Sequence[Any]) -> int | None:
    """The oldest ``dynamodb.ApproximateCreationDateTime`` of ``records`` (epoch µs)."""
    times = _times(records)
    return None if not times else seconds_to_us(min(times))


def _times(records: Sequence[Any]) -> list[float]:
    times = []
    for record in records:
        stream = record.get("dynamodb") if isinstance(record, dict) else None
        value = stream.get("ApproximateCreationDateTime") if isinstance(stream, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            times.append(value)
    return times


class ProgressRecorder:
    """Writes one consumer's progress (see the module docstring); one per processor."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.written_at: float | None = None
        self.written_us = 0

    @staticmethod
    def enabled() -> bool:
        return os.environ.get(CONSUMER_PROGRESS_ENV) == "1"

    def note(self, client: Any, table: str, consumer: str, settled: Sequence[Any]) -> None:
        """Record the newest creation time of the ``settled`` records (applied, duplicates or
        quarantined: nothing before them is pending). A failed write is logged, not raised: the
        records are applied, and the next batch writes again."""
        newest = newest_time_us(settled)
        now = self.clock()
        if newest is None or newest <= self.written_us:
            return
        interval = ConsumerProgress.INTERVAL_SECONDS
        if self.written_at is not None and now - self.written_at < interval:
            return
        try:
            client.update_item(
                TableName=table,
                Key={ID_ATTRIBUTE: {"S": ConsumerProgress.record_id(consumer)}},
                # The first record's time is kept once: a horizon before it is refused.
                UpdateExpression="SET #t = :t, #f = if_not_exists(#f, :f)",
                ConditionExpression="attribute_not_exists(#t) OR #t < :t",
                ExpressionAttributeNames={
                    "#t": ConsumerProgress.APPLIED_UNTIL,
                    "#f": ConsumerProgress.FIRST_APPLIED,
                },
                ExpressionAttributeValues={
                    ":t": {"N": str(newest)},
                    ":f": {"N": str(oldest_time_us(settled))},
                },
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                logs.log(
                    "WARNING",
                    "progress not recorded",
                    consumer=consumer,
                    error=logs.describe_error(error),
                )
                return
        except BotoCoreError as error:
            logs.log(
                "WARNING",
                "progress not recorded",
                consumer=consumer,
                error=logs.describe_error(error),
            )
            return
        self.written_at, self.written_us = now, newest


def read_progress(client: Any, table: str, consumer: str) -> ConsumerProgress | None:
    """The consumer's recorded progress (a consistent read), or None when it has none."""
    response = client.get_item(
        TableName=table,
        Key={ID_ATTRIBUTE: {"S": ConsumerProgress.record_id(consumer)}},
        ConsistentRead=True,
    )
    item = response.get("Item", {})
    value = item.get(ConsumerProgress.APPLIED_UNTIL, {}).get("N")
    first = item.get(ConsumerProgress.FIRST_APPLIED, {}).get("N")
    if value is None:
        return None
    return ConsumerProgress(consumer, int(value), None if first is None else int(first))
