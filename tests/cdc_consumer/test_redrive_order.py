"""A redrive never applies a change of an item before an earlier pending change of that item
(issue 23 §2 and §7), against moto's server with the local shard rollover (cdc_local.shards):
a child shard's batches wait for its parent's, conservatively when the lineage is unknown, and
a run holds one object in memory at a time."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

from cdc_consumer import redrive_handler
from cdc_consumer.redrive import Source, to_lambda_record
from cdc_consumer.redrive_shapes import RedriveCause

from cdc_local.retention import StreamRetention
from cdc_local.shards import roll_shards
from tests.cdc_consumer.redrive_world import (
    Consumer,
    Stream,
    inject_stream_error,
    make_redrive,
    quarantine_message,
)
from tests.cdc_consumer.test_redrive_s3 import BUCKET, DAY, Clock, keys, put_batch, s3

__all__ = ["s3"]  # the fixture, used by name


def change_status(stream: Stream, status: str, pk: str = "order-0") -> None:
    stream.ddb.put_item(TableName="orders", Item={"pk": {"S": pk}, "status": {"S": status}})


def shard_records(stream: Stream, shard_id: str) -> list[dict[str, Any]]:
    """The records of one shard, in Lambda's shape."""
    iterator = stream.streams.get_shard_iterator(
        StreamArn=stream.arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    return [
        to_lambda_record(r, stream.arn)
        for r in stream.streams.get_records(ShardIterator=iterator)["Records"]
    ]


def sequence_numbers(records: list[dict[str, Any]]) -> list[str]:
    return [r["dynamodb"]["SequenceNumber"] for r in records]


def rolled_batches(stream: Stream, generations: int) -> list[tuple[str, list[dict[str, Any]]]]:
    """Change order-0 once per shard, rolling the shard after each change; write each shard's
    batch to the bucket, as failed batches; return (shard id, records) oldest first."""
    batches = []
    shard = stream.shard_id
    for generation in range(generations):
        change_status(stream, f"s{generation}")
        records = shard_records(stream, shard)
        put_batch(stream, records, shard_id=shard, at=1_700_000_000.0 + generation)
        batches.append((shard, records))
        shard = roll_shards("orders")["orders"]
    return batches


def test_a_child_shards_batch_waits_while_its_parents_batch_still_fails(
    stream: Stream, s3: Any
) -> None:
    """order-0 changed to s0 in the parent shard and to s1 in its child, both batches failed.
    While s0 still fails, s1 is held (replaying it would let s0 land last after the fix)."""
    (parent, old), (child, new) = rolled_batches(stream, 2)
    assert (
        stream.streams.describe_stream(StreamArn=stream.arn)["StreamDescription"]["Shards"][1][
            "ParentShardId"
        ]
        == parent
    )
    broken = Consumer(fail={sequence_numbers(old)[0]: 99})

    report = make_redrive(stream, broken, s3_client=s3, max_attempts=2).run_bucket(BUCKET)

    assert not report.ok and broken.applied == []
    (held,) = report.held
    assert f"/{child}/" in held.message_id
    assert f"shard {parent} is an ancestor of shard {child}" in held.reason
    assert len(keys(s3)) == 2

    fixed = Consumer()
    assert make_redrive(stream, fixed, s3_client=s3).run_bucket(BUCKET).ok
    assert fixed.applied == sequence_numbers(old) + sequence_numbers(new)  # s1 lands last
    assert keys(s3) == []


def trim_everything(stream: Stream) -> None:
    clock = Clock()
    clock.now += DAY + 60
    StreamRetention(clock=clock).trim()


def test_when_describe_stream_no_longer_lists_the_shards_an_earlier_shard_holds_later_ones(
    stream: Stream, s3: Any
) -> None:
    """A week later every shard of the batches is trimmed: DescribeStream lists only the open
    shard, so the batches' shards have no known parent. Redrive is conservative: a pending
    batch of an earlier shard (by the creation time in the ids) holds back the later shards',
    and the report says the lineage is unknown."""
    batches = rolled_batches(stream, 3)
    trim_everything(stream)
    listed = stream.streams.describe_stream(StreamArn=stream.arn)["StreamDescription"]["Shards"]
    assert {s["ShardId"] for s in listed}.isdisjoint(shard for shard, _ in batches)
    (first, old), (second, _), _ = batches
    broken = Consumer(fail={sequence_numbers(old)[0]: 99})

    report = make_redrive(stream, broken, s3_client=s3, max_attempts=1).run_bucket(BUCKET)

    assert broken.applied == [] and len(report.held) == 2, report.summary()
    reasons = {h.message_id.split("/")[3]: h.reason for h in report.held}
    assert f"the parent of shard {second} is unknown" in reasons[second]
    assert f"shard {first}, before it in the replay order, may be an ancestor" in reasons[second]
    (note,) = [n for n in report.notes if "lineage" in n]
    assert "is not known to its root" in note and "DescribeStream does not list it" in note
    fixed = Consumer()
    assert make_redrive(stream, fixed, s3_client=s3).run_bucket(BUCKET).ok
    assert fixed.applied == [n for _, records in batches for n in sequence_numbers(records)]


def test_a_describe_stream_the_redrive_may_not_call_makes_it_conservative_and_says_why(
    stream: Stream, s3: Any
) -> None:
    (parent, old), _ = rolled_batches(stream, 2)
    streams = stream.aws.client("dynamodbstreams")
    inject_stream_error(streams, "DescribeStream", "AccessDeniedException", lambda _: True)
    broken = Consumer(fail={sequence_numbers(old)[0]: 99})

    report = make_redrive(
        stream, broken, s3_client=s3, streams_client=streams, max_attempts=1
    ).run_bucket(BUCKET)

    (held,) = report.held
    assert "DescribeStream of the stream failed (AccessDeniedException" in held.reason
    assert f"shard {parent}, before it in the replay order" in held.reason
    assert broken.applied == []


# --- Memory: one object at a time (issue 23 §7) ----------------------------------------------


def big_batches(stream: Stream, first: int, count: int, size: int) -> int:
    """``count`` failed batches of one record each (items big-<first>...) with a ``size``-byte
    attribute; return the size of one object's payload."""
    for number in range(first, first + count):
        stream.ddb.put_item(
            TableName="orders",
            Item={"pk": {"S": f"big-{number}"}, "blob": {"S": str(number % 10) * size}},
        )
    records = [to_lambda_record(r, stream.arn) for r in stream.records()][-count:]
    for number, record in enumerate(records):
        put_batch(stream, [record], at=1_700_000_000.0 + first + number)
    return len(json.dumps({"Records": [records[0]]}))


def peak_of_run(stream: Stream, s3: Any) -> tuple[int, int]:
    """The peak of traced memory (bytes) while a run replays the bucket, and how many records
    it applied."""
    consumer = Consumer()
    redrive = make_redrive(stream, consumer, s3_client=s3)
    tracemalloc.start()
    try:
        report = redrive.run_bucket(BUCKET)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.ok, report.summary()
    return peak, len(consumer.applied)


def test_a_runs_memory_is_a_function_of_one_object_not_of_the_count(
    stream: Stream, s3: Any
) -> None:
    """A run of 3 objects of about 300 KB, then one of 15: the peak of traced memory (this
    process, moto's server thread included) grows by less than three objects' size, while the
    second run replays 12 objects more. Reading every object before replaying any, as the
    redrive did, grows the peak by several times the 12 objects' bytes."""
    size = big_batches(stream, 0, 3, 300_000)
    few, applied = peak_of_run(stream, s3)
    assert applied == 3 and keys(s3) == []
    big_batches(stream, 3, 15, 300_000)

    many, applied = peak_of_run(stream, s3)

    assert applied == 15
    # 12 objects more may add a quarter of their bytes (buffers, the report's lines; measured:
    # about two objects'); reading every object first adds all 12 objects' bytes at least.
    assert many - few < 12 * size / 4, (
        f"peak {many} bytes for 15 objects, {few} for 3 ({size} each)"
    )


# --- Between the quarantine queue and the bucket (issue 23 §2) -------------------------------


def quarantine_of(stream: Stream) -> str:
    sqs = stream.aws.client("sqs")
    return sqs.create_queue(QueueName="orders-quarantine")["QueueUrl"]


def quarantine(stream: Stream, url: str, record: dict[str, Any]) -> None:
    stream.aws.client("sqs").send_message(QueueUrl=url, MessageBody=quarantine_message(record))


def both_sources(stream: Stream, s3: Any, consumer: Consumer, url: str) -> Any:
    return make_redrive(
        stream, consumer, s3_client=s3, quarantine_queue_url=url, on_failure_bucket=BUCKET
    )


def test_a_bucket_object_waits_while_the_quarantine_holds_an_earlier_change_of_its_item(
    stream: Stream, s3: Any
) -> None:
    """order-0 became s0, which the consumer quarantined (poison then), then s1, whose batch
    failed into the bucket. With the fix in, replaying the bucket first would apply s1 and then
    the quarantine's s0 last: the object is held until the quarantine's s0 is replayed."""
    url = quarantine_of(stream)
    change_status(stream, "s0")
    change_status(stream, "s1")
    first, second = shard_records(stream, stream.shard_id)
    quarantine(stream, url, first)
    key = put_batch(stream, [second])
    consumer = Consumer()

    report = both_sources(stream, s3, consumer, url).run_bucket(BUCKET)

    (held,) = report.held
    assert held.message_id == key and not report.ok and consumer.applied == []
    assert "the quarantine queue holds an earlier change of item" in held.reason
    assert held.cause is RedriveCause.EARLIER_CHANGE_IN_QUARANTINE
    assert both_sources(stream, s3, consumer, url).run(url, Source.QUARANTINE).ok
    assert both_sources(stream, s3, consumer, url).run_bucket(BUCKET).ok
    assert consumer.applied == sequence_numbers([first, second])


def test_an_object_holding_the_quarantined_change_itself_is_not_held_by_it(
    stream: Stream, s3: Any
) -> None:
    """The long model run's deadlock, reduced: order-0's s1 was quarantined (poison) in a
    delivery of the batch s0, s1, s2 that then failed whole into the bucket. The quarantine's s1
    is one of the object's own records (a batch holds every change of an item between its first
    and last), so it holds nothing: the object replays s0, s1, s2 in order, and the quarantine's
    s1 is then a duplicate. Before, the object waited for the quarantine's s1 and the
    quarantine's s1 for the object's s0: neither was ever replayed."""
    url = quarantine_of(stream)
    for status in ("s0", "s1", "s2"):
        change_status(stream, status)
    records = shard_records(stream, stream.shard_id)
    quarantine(stream, url, records[1])
    put_batch(stream, records)
    consumer = Consumer()

    report = both_sources(stream, s3, consumer, url).run_bucket(BUCKET)

    assert report.ok and not report.held, report.summary()
    assert consumer.applied == sequence_numbers(records)
    assert both_sources(stream, s3, consumer, url).run(url, Source.QUARANTINE).ok
    assert consumer.applied == sequence_numbers(records) and consumer.duplicates == 1


def test_a_quarantined_record_waits_while_the_bucket_holds_an_earlier_change_of_its_item(
    stream: Stream, s3: Any
) -> None:
    url = quarantine_of(stream)
    change_status(stream, "s0")
    change_status(stream, "s1")
    first, second = shard_records(stream, stream.shard_id)
    key = put_batch(stream, [first])
    quarantine(stream, url, second)
    consumer = Consumer()

    report = both_sources(stream, s3, consumer, url).run(url, Source.QUARANTINE)

    (held,) = report.held
    assert "the failed-batch bucket holds an earlier change of item" in held.reason
    assert held.cause is RedriveCause.EARLIER_CHANGE_IN_BUCKET
    assert key in held.reason and consumer.applied == [] and not report.ok
    assert both_sources(stream, s3, consumer, url).run_bucket(BUCKET).ok
    assert both_sources(stream, s3, consumer, url).run(url, Source.QUARANTINE).ok
    assert consumer.applied == sequence_numbers([first, second])


def test_the_redrive_function_replays_both_sources_in_each_items_order(
    stream: Stream, s3: Any
) -> None:
    """One invocation (source "all"): the object held for the quarantine's earlier change is
    replayed in a second on-failure round, once the quarantine replayed that change."""
    url = quarantine_of(stream)
    change_status(stream, "s0")
    change_status(stream, "s1")
    first, second = shard_records(stream, stream.shard_id)
    quarantine(stream, url, first)
    put_batch(stream, [second])
    consumer = Consumer()
    environ = {
        "ON_FAILURE_BUCKET_NAME": BUCKET,
        "QUARANTINE_QUEUE_URL": url,
        "CDC_CONSUMER_NAME": "orders",
        "CONSUMER_FUNCTION_NAME": "orders-consumer",
        "STREAM_ARN": stream.arn,
    }

    result = redrive_handler.handler(
        {}, None, redrive=both_sources(stream, s3, consumer, url), environ=environ
    )

    assert result["ok"], result
    assert [r["source"] for r in result["reports"]] == ["on-failure", "quarantine", "on-failure"]
    assert consumer.applied == sequence_numbers([first, second])
    assert keys(s3) == []


def test_a_quarantined_change_still_poison_after_the_fix_is_set_aside_as_the_consumer_does(
    stream: Stream, s3: Any
) -> None:
    """The quarantined s0 is still poison for the fixed consumer: the quarantine round
    quarantines it again (reported, not ok), and the object with s1 then goes in the second
    on-failure round, as the running consumer would have applied s1 past the poison s0."""
    url = quarantine_of(stream)
    sqs = stream.aws.client("sqs")
    change_status(stream, "s0")
    change_status(stream, "s1")
    first, second = shard_records(stream, stream.shard_id)
    quarantine(stream, url, first)
    put_batch(stream, [second])
    applied: list[str] = []

    def still_poison_s0(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for record in event["Records"]:
            if record["dynamodb"]["NewImage"]["status"]["S"] == "s0":
                sqs.send_message(QueueUrl=url, MessageBody=quarantine_message(record))
            else:
                applied.append(record["dynamodb"]["SequenceNumber"])
        return {"batchItemFailures": []}

    environ = {"ON_FAILURE_BUCKET_NAME": BUCKET, "QUARANTINE_QUEUE_URL": url}
    environ |= {"CONSUMER_FUNCTION_NAME": "orders-consumer", "STREAM_ARN": stream.arn}
    redrive = make_redrive(
        stream, still_poison_s0, s3_client=s3, quarantine_queue_url=url, on_failure_bucket=BUCKET
    )

    result = redrive_handler.handler({}, None, redrive=redrive, environ=environ)

    assert not result["ok"] and result["requarantinedRecords"] == 1 and result["heldMessages"] == 0
    assert applied == sequence_numbers([second]) and keys(s3) == []
