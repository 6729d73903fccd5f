"""A table's Kinesis streaming destination, played locally: the Kinesis route's feed
(:mod:`cdc_local.routes.kinesis`).

moto does not stream a table's changes to Kinesis, so :class:`KinesisDelivery` plays DynamoDB's
part: it reads the table's DynamoDB stream (moto has one; the changes in commit order) and puts
each change into the Kinesis stream in AWS's published format: base64 JSON without
``SequenceNumber``, ``ApproximateCreationDateTime`` in micro- or milliseconds as the table's
``ApproximateCreationDateTimePrecision`` says (stamped strictly increasing, as DynamoDB's
microsecond times are for one item), the partition key a hash of the item's key. With the fault
plan's ``feed`` (:class:`~cdc_local.faults.FeedFaults`) a change is put late, after later
changes (of its item too), or once more, later: what AWS allows ("The Kinesis data stream
records might appear in a different order than when the item changes occurred. The same item
notifications might also appear more than once in the stream"); or a record that is not a
change is put too.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.redrive.stream_reader import to_lambda_record
from cdc_consumer.versions import MICROSECONDS_PER_SECOND

from cdc_local.exceptions import LocalPipelineError
from cdc_local.stream_tail import StreamTail
from cdc_local.ttl import TtlLedger

__all__ = ["DeliveryCounters", "KinesisDelivery"]

#: PutRecords takes at most 500 records per call.
PUT_RECORDS_LIMIT = 500
#: How many later changes a late or repeated change waits for, at most: wide enough that one
#: item's changes (an order changes every few hundred writes in the reference workload) overtake
#: each other.
MAX_DELAY_CHANGES = 300


@dataclass
class DeliveryCounters:
    changes_read: int = 0
    records_put: int = 0
    reordered: int = 0
    duplicated: int = 0
    poison: int = 0
    #: Records put after a newer change of the same item had been put (out of order per item).
    out_of_order: int = 0


@dataclass
class KinesisDelivery:
    """Reads a table's DynamoDB stream and puts each change into a Kinesis stream, late or twice
    as the probabilities say (seeded). :meth:`pump` moves what is available; a change held back
    is put once ``delay`` later changes were put, or when the table has nothing new (so a drain
    ends with everything delivered)."""

    table_stream_arn: str
    kinesis_stream_name: str
    table_name: str
    precision: str
    streams: Any
    kinesis: Any
    ttl_ledger: TtlLedger | None = None
    reorder_probability: float = 0.0
    duplicate_probability: float = 0.0
    poison_probability: float = 0.0
    seed: int = 0
    clock: Callable[[], float] = time.time
    counters: DeliveryCounters = field(default_factory=DeliveryCounters)
    #: ``stream/shard:sequence`` -> the pipeline clock when it was put (record age counts from it).
    arrivals: dict[str, float] = field(default_factory=dict)
    #: The eventID of every change read from the table (what the consumers must account for).
    event_ids: set[str] = field(default_factory=set)
    _held: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    _tail: StreamTail | None = None
    _last_time: int = 0
    _newest: dict[str, int] = field(default_factory=dict)
    _puts: int = 0
    _random: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def pump(self) -> bool:
        """Read the table's new changes and put what is due; whether anything was put."""
        changes = self._read()
        due: list[dict[str, Any]] = []
        for change in changes:
            self.counters.changes_read += 1
            self.event_ids.add(change["eventID"])
            if self._random.random() < self.poison_probability:
                self.counters.poison += 1
                due.append({"poison": f"not a DynamoDB change {self.counters.poison}"})
            if self._random.random() < self.reorder_probability:
                self.counters.reordered += 1
                self._hold(change)
            else:
                due.append(change)
            if self._random.random() < self.duplicate_probability:
                self.counters.duplicated += 1
                self._hold(change)
        if not changes and self._held:  # nothing new: what waits goes now
            due += [data for _, data in self._held]
            self._held.clear()
        self._put(due)
        return bool(due)

    def _hold(self, data: dict[str, Any]) -> None:
        self._held.append((self._puts + self._random.randint(1, MAX_DELAY_CHANGES), data))

    def _put(self, records: list[dict[str, Any]]) -> None:
        """Put ``records`` in order, each held change right after the put that makes it due."""
        ordered: list[Mapping[str, Any]] = []
        for data in records:
            ordered.append(data)
            self._puts += 1
            released = [d for when, d in self._held if when <= self._puts]
            self._held = [(when, d) for when, d in self._held if when > self._puts]
            ordered += released
        for start in range(0, len(ordered), PUT_RECORDS_LIMIT):
            self._put_batch(ordered[start : start + PUT_RECORDS_LIMIT])

    def _put_batch(self, batch: Sequence[Mapping[str, Any]]) -> None:
        for data in batch:
            if "dynamodb" in data:
                key = json.dumps(data["dynamodb"]["Keys"], sort_keys=True)
                created = data["dynamodb"]["ApproximateCreationDateTime"]
                self.counters.out_of_order += created < self._newest.get(key, created)
                self._newest[key] = max(created, self._newest.get(key, created))
        entries = [
            {
                "Data": json.dumps(data, separators=(",", ":")).encode(),
                "PartitionKey": hashlib.md5(
                    json.dumps(data.get("dynamodb", {}).get("Keys"), sort_keys=True).encode()
                ).hexdigest(),
            }
            for data in batch
        ]
        response = self.kinesis.put_records(StreamName=self.kinesis_stream_name, Records=entries)
        if response.get("FailedRecordCount"):
            raise LocalPipelineError(f"PutRecords failed locally: {response['Records'][:3]}")
        now = self.clock()
        for result in response["Records"]:
            where = f"{self.kinesis_stream_name}/{result['ShardId']}:{result['SequenceNumber']}"
            self.arrivals[where] = now
        self.counters.records_put += len(batch)

    def _read(self) -> list[dict[str, Any]]:
        """The table's new changes, a parent shard's before its children's."""
        if self._tail is None:
            self._tail = StreamTail(self.table_stream_arn, self.streams)
        return [self._data(raw) for raw in self._tail.read()]

    def _data(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """A DynamoDB stream record as the change DynamoDB puts into Kinesis (AWS's format)."""
        created = raw["dynamodb"]["ApproximateCreationDateTime"].timestamp()
        record = to_lambda_record(raw, self.table_stream_arn)
        if self.ttl_ledger is not None:
            record = self.ttl_ledger.annotate(self.table_stream_arn, record)
        step = 1 if self.precision == "MICROSECOND" else 1000
        time_us = max(int(created * MICROSECONDS_PER_SECOND), self._last_time + step)
        self._last_time = time_us
        dynamodb = {
            "ApproximateCreationDateTime": time_us if step == 1 else time_us // 1000,
            "Keys": record["dynamodb"]["Keys"],
            **{
                k: record["dynamodb"][k]
                for k in ("NewImage", "OldImage")
                if k in record["dynamodb"]
            },
            "SizeBytes": record["dynamodb"].get("SizeBytes", 1),
        }
        return {
            "awsRegion": record.get("awsRegion", "us-east-1"),
            "eventID": record["eventID"],
            "eventName": record["eventName"],
            "userIdentity": record.get("userIdentity"),
            "recordFormat": "application/json",
            "tableName": self.table_name,
            "dynamodb": dynamodb,
            "eventSource": "aws:dynamodb",
        }
