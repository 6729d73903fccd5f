"""The Kinesis route of the local pipeline: a table's changes delivered to moto's Kinesis (late
and repeated per item when told), and Lambda's Kinesis mapping with the stream mapping's
semantics (batching, filters, bisect, retries, partial batch responses, record age, on-failure
destination with KinesisBatchInfo)."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer import Change
from cdc_consumer.filter_patterns import FilterCriteria

from cdc_local.destinations import OnFailureDestination
from cdc_local.endpoint import LocalEndpoint
from cdc_local.event_source_mapping import EventSourceMapping, MappingSettings
from cdc_local.functions import InvocationResult
from cdc_local.routes import SourceContext
from cdc_local.routes.kinesis import KinesisDelivery, KinesisRoute, filter_view
from cdc_local.shards import roll_shards


@dataclass
class FakeFunction:
    """Answers each invocation as ``decide(batch)`` says: ``"ok"``, ``"raise"`` or a sequence
    number to report; records every batch it was given."""

    decide: Any = None
    arn: str = "arn:aws:lambda:us-east-1:123456789012:function:probe"
    batches: list[list[dict[str, Any]]] = field(default_factory=list)

    def invoke(self, event: dict[str, Any]) -> InvocationResult:
        batch = event["Records"]
        self.batches.append(batch)
        outcome = self.decide(batch) if self.decide else "ok"
        if outcome == "raise":
            return InvocationResult(str(uuid.uuid4()), error_type="ValueError", error_message="x")
        failures = [] if outcome == "ok" else [{"itemIdentifier": outcome}]
        return InvocationResult(str(uuid.uuid4()), response={"batchItemFailures": failures})


def changes(batch: list[dict[str, Any]]) -> list[str]:
    return [Change.from_record(record).keys["pk"] for record in batch]


def setup_table(aws: LocalEndpoint) -> tuple[str, str]:
    """A table with a stream and a Kinesis stream (2 shards); their names."""
    suffix = uuid.uuid4().hex[:8]
    ddb = aws.client("dynamodb")
    ddb.create_table(
        TableName=f"orders-{suffix}",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    aws.client("kinesis").create_stream(StreamName=f"changes-{suffix}", ShardCount=2)
    return f"orders-{suffix}", f"changes-{suffix}"


def delivery(aws: LocalEndpoint, table: str, stream: str, **options: Any) -> KinesisDelivery:
    stream_arn = aws.client("dynamodb").describe_table(TableName=table)["Table"]["LatestStreamArn"]
    return KinesisDelivery(
        table_stream_arn=stream_arn,
        kinesis_stream_name=stream,
        table_name=table,
        precision=options.pop("precision", "MICROSECOND"),
        streams=aws.client("dynamodbstreams"),
        kinesis=aws.client("kinesis"),
        **options,
    )


def mapping(
    aws: LocalEndpoint, stream: str, function: FakeFunction, **settings: Any
) -> EventSourceMapping:
    """The Kinesis route's mapping of ``stream``; ``feeds``: the deliveries whose put times
    count as the records' arrivals."""
    destination = settings.pop("destination", None)
    clock = settings.pop("clock", time.time)
    feeds = settings.pop("feeds", ())
    arn = f"arn:aws:kinesis:us-east-1:123456789012:stream/{stream}"
    source = KinesisRoute().source(
        aws.client("kinesis"), arn, SourceContext(function.arn, feeds=feeds)
    )
    return EventSourceMapping(
        name="KinesisMapping",
        source=source,
        function=function,  # type: ignore[arg-type]
        settings=MappingSettings(**settings),
        destination=destination,
        clock=clock,
    )


def write(aws: LocalEndpoint, table: str, count: int, items: int = 5) -> None:
    ddb = aws.client("dynamodb")
    for n in range(count):
        ddb.put_item(TableName=table, Item={"pk": {"S": f"k{n % items}"}, "n": {"N": str(n)}})


def test_delivery_puts_every_change_in_aws_format_late_and_repeated(aws: LocalEndpoint) -> None:
    table, stream = setup_table(aws)
    write(aws, table, 200)
    emulator = delivery(
        aws, table, stream, reorder_probability=0.3, duplicate_probability=0.2, seed=4
    )
    while emulator.pump():
        pass
    function = FakeFunction()
    reader = mapping(aws, stream, function, batch_size=1000)
    reader.drain()
    records = [record for batch in function.batches for record in batch]
    assert emulator.counters.changes_read == 200
    assert len(records) == 200 + emulator.counters.duplicated
    decoded = [Change.from_record(record) for record in records]
    assert Counter(c.event_id for c in decoded).most_common(1)[0][1] >= 2  # repeated
    assert {c.event_id for c in decoded} == {  # every change, none lost
        c.event_id for c in decoded
    } and len({c.event_id for c in decoded}) == 200
    data = json.loads(base64.b64decode(records[0]["kinesis"]["data"]))
    assert data["recordFormat"] == "application/json" and data["tableName"] == table
    assert "SequenceNumber" not in data["dynamodb"]
    assert data["dynamodb"]["ApproximateCreationDateTime"] > 10**15  # microseconds
    # Late per item: some change of an item arrives after a newer change of the same item.
    newest: dict[str, int] = {}
    late = 0
    for change in decoded:
        assert change.creation_time_us is not None
        late += change.creation_time_us < newest.get(change.keys["pk"], 0)
        newest[change.keys["pk"]] = max(newest.get(change.keys["pk"], 0), change.creation_time_us)
    assert late > 0
    # One item's records stay in one shard (the partition key is a hash of its key).
    shards: dict[str, set[str]] = {}
    for record, change in zip(records, decoded, strict=True):
        shards.setdefault(change.keys["pk"], set()).add(record["eventID"].split(":")[0])
    assert all(len(s) == 1 for s in shards.values())


def test_milliseconds_precision(aws: LocalEndpoint) -> None:
    table, stream = setup_table(aws)
    write(aws, table, 3)
    emulator = delivery(aws, table, stream, precision="MILLISECOND")
    emulator.pump()
    function = FakeFunction()
    mapping(aws, stream, function).drain()
    times = [
        json.loads(base64.b64decode(r["kinesis"]["data"]))["dynamodb"][
            "ApproximateCreationDateTime"
        ]
        for batch in function.batches
        for r in batch
    ]
    assert all(10**12 < t < 10**14 for t in times) and len(set(times)) == 3


def test_batching_partial_failures_and_bisect(aws: LocalEndpoint) -> None:
    table, stream = setup_table(aws)
    write(aws, table, 12, items=1)  # one item: one shard, in order
    delivery(aws, table, stream).pump()
    seen: set[str] = set()

    def decide(batch: list[dict[str, Any]]) -> str:
        numbers = [json.loads(base64.b64decode(r["kinesis"]["data"])) for r in batch]
        for record, data in zip(batch, numbers, strict=True):
            n = data["dynamodb"]["NewImage"]["n"]["N"]
            if n == "5" and "5" not in seen:
                seen.add("5")
                return record["kinesis"]["sequenceNumber"]  # reported once
            if n == "9":
                return "raise" if len(batch) > 1 else "ok"  # fails until alone
        return "ok"

    function = FakeFunction(decide)
    reader = mapping(
        aws,
        stream,
        function,
        batch_size=4,
        report_batch_item_failures=True,
        bisect_batch_on_function_error=True,
        maximum_retry_attempts=2,
    )
    reader.drain()
    sizes = [len(b) for b in function.batches]
    assert sizes[0] == 4 and max(sizes) == 4
    assert reader.counters.partial_failures == 1
    assert reader.counters.bisections >= 1
    assert reader.counters.records_succeeded == 12
    assert reader.counters.on_failure_messages == 0


def test_retries_run_out_to_the_on_failure_queue_with_kinesis_batch_info(
    aws: LocalEndpoint,
) -> None:
    table, stream = setup_table(aws)
    write(aws, table, 3, items=1)
    delivery(aws, table, stream).pump()
    sqs = aws.client("sqs")
    queue = sqs.create_queue(QueueName=f"on-failure-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    function = FakeFunction(lambda batch: "raise")
    reader = mapping(
        aws,
        stream,
        function,
        batch_size=10,
        maximum_retry_attempts=1,
        on_failure_arn=arn,
        destination=OnFailureDestination(arn, aws, queue_url=queue),
    )
    reader.drain()
    assert len(function.batches) == 2  # the first try and one retry
    (message,) = sqs.receive_message(QueueUrl=queue)["Messages"]
    body = json.loads(message["Body"])
    info = body["KinesisBatchInfo"]
    assert "DDBStreamBatchInfo" not in body
    assert body["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert info["batchSize"] == 3
    assert info["streamArn"].endswith(f":stream/{stream}")
    assert info["startSequenceNumber"] == function.batches[0][0]["kinesis"]["sequenceNumber"]


def test_record_age_counts_from_arrival_in_the_stream(aws: LocalEndpoint) -> None:
    table, stream = setup_table(aws)
    write(aws, table, 4)
    now = [time.time()]
    emulator = delivery(aws, table, stream, clock=lambda: now[0])
    emulator.pump()
    now[0] += 120  # two minutes later the mapping reads them
    function = FakeFunction()
    reader = mapping(
        aws,
        stream,
        function,
        maximum_record_age_seconds=60,
        clock=lambda: now[0],
        feeds=[emulator],
    )
    reader.drain()
    assert function.batches == []
    assert reader.counters.records_expired == 4


def test_filters_match_the_decoded_data(aws: LocalEndpoint) -> None:
    table, stream = setup_table(aws)
    write(aws, table, 6, items=6)
    aws.client("dynamodb").delete_item(TableName=table, Key={"pk": {"S": "k2"}})
    delivery(aws, table, stream).pump()
    function = FakeFunction()
    only_removes = FilterCriteria([{"data": {"eventName": ["REMOVE"]}}])
    reader = mapping(aws, stream, function, filters=only_removes)
    reader.drain()
    delivered = [record for batch in function.batches for record in batch]
    assert [Change.from_record(r).event_name for r in delivered] == ["REMOVE"]
    assert reader.counters.records_filtered_out == 6
    assert filter_view(delivered[0])["data"]["eventName"] == "REMOVE"


def test_delivery_follows_the_table_streams_child_shards(aws: LocalEndpoint) -> None:
    """After a rollover of the table's stream (cdc_local.shards), the delivery reads the parent
    to its end and then the child: every change reaches Kinesis, each item's in order."""
    table, stream = setup_table(aws)
    ddb = aws.client("dynamodb")

    def write_from(first: int, count: int) -> None:
        for n in range(first, first + count):
            ddb.put_item(TableName=table, Item={"pk": {"S": f"k{n % 5}"}, "n": {"N": str(n)}})

    write_from(0, 6)
    emulator = delivery(aws, table, stream)
    while emulator.pump():
        pass
    roll_shards(table)
    write_from(6, 6)
    roll_shards(table)
    write_from(12, 3)
    while emulator.pump():
        pass
    function = FakeFunction()
    mapping(aws, stream, function, batch_size=1000).drain()
    decoded = [Change.from_record(record) for batch in function.batches for record in batch]
    assert emulator.counters.changes_read == 15 and len(decoded) == 15
    by_item: dict[str, list[int]] = {}
    for change in decoded:
        by_item.setdefault(change.keys["pk"], []).append(int(change.new_image["n"]))
    assert all(numbers == sorted(numbers) for numbers in by_item.values()), by_item
