"""Helpers for testing consumers of the Kinesis route: DynamoDB changes as Kinesis records in
AWS's published format, and a delivery that reorders and repeats them per item as AWS allows.

Needs nothing beyond boto3, like :mod:`cdc_consumer.testing`::

    stream = TableStream(clock=MicrosecondClock())
    changes = [stream.put(...), stream.put(...), stream.delete(...)]
    delivery = KinesisDelivery(seed=7)
    records = delivery.deliver(changes)                 # reordered, some twice
    handler(kinesis_event(records[:100]), FakeContext())
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.routes.kinesis.records import (
    KINESIS_EVENT_SOURCE,
    encode_data,
    kinesis_sequence_number,
)
from cdc_consumer.versions import seconds_to_us

#: The Kinesis stream ARN records carry unless told otherwise.
DEFAULT_KINESIS_ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/source-table-changes"
#: A first Kinesis sequence number shaped like Kinesis's (56 digits).
FIRST_KINESIS_SEQUENCE_NUMBER = 49_600_000_000_000_000_000_000_000_000_000_000_000_000_000_000_000
PRECISIONS = ("MICROSECOND", "MILLISECOND")


def kinesis_data(
    stream_record: Mapping[str, Any],
    *,
    table_name: str = "source-table",
    precision: str = "MICROSECOND",
) -> dict[str, Any]:
    """The DynamoDB change Kinesis Data Streams for DynamoDB publishes for the change a DynamoDB
    stream record describes (AWS's format: no ``SequenceNumber`` nor ``StreamViewType``, the
    creation time in milli- or microseconds per ``precision``, ``recordFormat``, ``tableName``)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    stream = stream_record["dynamodb"]
    time_us = seconds_to_us(stream["ApproximateCreationDateTime"])
    dynamodb: dict[str, Any] = {
        "ApproximateCreationDateTime": time_us if precision == "MICROSECOND" else time_us // 1000,
        "Keys": stream["Keys"],
    }
    for image in ("NewImage", "OldImage"):
        if image in stream:
            dynamodb[image] = stream[image]
    dynamodb["SizeBytes"] = stream.get("SizeBytes", 1)
    return {
        "awsRegion": stream_record.get("awsRegion", "us-east-1"),
        "eventID": stream_record["eventID"],
        "eventName": stream_record["eventName"],
        "userIdentity": stream_record.get("userIdentity"),
        "recordFormat": "application/json",
        "tableName": table_name,
        "dynamodb": dynamodb,
        "eventSource": "aws:dynamodb",
    }


def kinesis_record(
    data: Mapping[str, Any] | str,
    *,
    sequence_number: str | int,
    stream_arn: str = DEFAULT_KINESIS_ARN,
    shard_id: str = "shardId-000000000000",
    partition_key: str | None = None,
    arrival: float = 1_700_000_000.0,
) -> dict[str, Any]:
    """One record as Lambda delivers it from a Kinesis stream; ``data`` is the change (encoded
    here) or the base64 text itself (to test bad data)."""
    encoded = data if isinstance(data, str) else encode_data(data)
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": partition_key or "0" * 32,
            "sequenceNumber": str(sequence_number),
            "data": encoded,
            "approximateArrivalTimestamp": arrival,
        },
        "eventSource": KINESIS_EVENT_SOURCE,
        "eventVersion": "1.0",
        "eventID": f"{shard_id}:{sequence_number}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": "arn:aws:iam::123456789012:role/cdc-consumer",
        "awsRegion": "us-east-1",
        "eventSourceARN": stream_arn,
    }


def kinesis_event(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The Lambda event for a batch of Kinesis records."""
    return {"Records": list(records)}


@dataclass
class MicrosecondClock:
    """A clock for :class:`~cdc_consumer.testing.TableStream` that advances ``step_us``
    microseconds per reading, so every change has its own creation time (as DynamoDB's
    MICROSECOND precision gives one item's changes)."""

    start_us: int = 1_700_000_000_000_000
    step_us: int = 1
    _ticks: int = 0

    def __call__(self) -> float:
        # Division is correctly rounded, so the float's shortest repr is the exact microsecond
        # (what seconds_to_us reads back).
        self._ticks += 1
        return (self.start_us + self._ticks * self.step_us) / 1_000_000


@dataclass
class KinesisDelivery:
    """What a Kinesis stream fed by a table delivers: each change once or more, one item's
    changes possibly out of order, each delivery a record with its own sequence number.

    ``reorder``: the chance a change is delivered late, up to ``max_delay`` positions after
    its place. ``duplicate``: the chance a change is delivered once more, up to ``max_delay``
    positions later (a retried PutRecord). Seeded, so a failing test can be replayed.
    """

    seed: int = 0
    reorder: float = 0.2
    duplicate: float = 0.1
    max_delay: int = 20
    table_name: str = "source-table"
    precision: str = "MICROSECOND"
    stream_arn: str = DEFAULT_KINESIS_ARN
    next_sequence_number: int = FIRST_KINESIS_SEQUENCE_NUMBER
    delivered: list[dict[str, Any]] = field(default_factory=list)

    def deliver(self, stream_records: Sequence[Mapping[str, Any] | None]) -> list[dict[str, Any]]:
        """The Kinesis records for ``stream_records`` (None entries, writes that changed
        nothing, are skipped), in delivery order; also appended to :attr:`delivered`."""
        rng = random.Random(self.seed + len(self.delivered))
        slots: list[tuple[float, int, dict[str, Any]]] = []
        for position, record in enumerate(r for r in stream_records if r is not None):
            data = kinesis_data(record, table_name=self.table_name, precision=self.precision)
            delay = rng.randint(1, self.max_delay) if rng.random() < self.reorder else 0
            slots.append((position + delay + 0.5 * bool(delay), len(slots), data))
            if rng.random() < self.duplicate:
                slots.append((position + rng.randint(1, self.max_delay) + 0.5, len(slots), data))
        records = []
        for _, _, data in sorted(slots, key=lambda slot: (slot[0], slot[1])):
            records.append(
                kinesis_record(
                    data, sequence_number=self.next_sequence_number, stream_arn=self.stream_arn
                )
            )
            self.next_sequence_number += 1
        self.delivered += records
        return records


def kinesis_redelivery(
    records: Sequence[Mapping[str, Any]], response: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """What Lambda delivers next after ``response`` to a batch of Kinesis ``records``: from the
    lowest reported sequence number on (``[]`` when nothing failed)."""
    failures = response.get("batchItemFailures") or []
    if not failures:
        return []
    failed = {failure["itemIdentifier"] for failure in failures}
    positions = [i for i, r in enumerate(records) if kinesis_sequence_number(r) in failed]
    if len(positions) != len(failed):
        raise ValueError(f"itemIdentifier(s) {sorted(failed)} are not all in the batch")
    return list(records[min(positions) :])
