"""Each emulated event source mapping setting, against the AWS behaviour it follows."""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.cdc_local import recorder
from tests.cdc_local.helpers import batches, keys_of, put, queue_messages, stream_sequence_numbers


class FakeClock:
    """Epoch seconds that a test moves forward."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def test_batch_size_caps_each_invocation_and_records_arrive_in_stream_order(pipeline_for) -> None:
    """BatchSize: Lambda sends at most that many records per invocation, in stream order."""
    pipeline = pipeline_for("Basic")
    for i in range(25):
        put(pipeline, f"k{i:02}")
    pipeline.drain()
    assert [len(b) for b in batches()] == [10, 10, 5]
    assert [s for b in batches() for s in b] == stream_sequence_numbers(pipeline)


def test_handler_exception_fails_the_whole_batch_and_is_retried(pipeline_for) -> None:
    """A function error fails the whole batch; Lambda retries it MaximumRetryAttempts times
    (Plain: 1, no destination: then the batch is dropped and processing goes on)."""
    pipeline = pipeline_for("Plain")
    for i, mode in enumerate(["ok", "fail", "ok", "ok", "ok"]):
        put(pipeline, f"k{i}", mode=mode)
    pipeline.drain()
    seqs = stream_sequence_numbers(pipeline)
    assert batches() == [seqs[:4], seqs[:4], seqs[4:]]
    assert pipeline.counters.records_discarded == 4
    assert pipeline.counters.on_failure_messages == 0


def test_batch_item_failures_are_ignored_without_report_batch_item_failures(pipeline_for) -> None:
    """Lambda processes a partial batch response only when ReportBatchItemFailures is on."""
    pipeline = pipeline_for("Plain")
    put(pipeline, "a", mode="report")
    pipeline.drain()
    assert len(batches()) == 1
    assert pipeline.counters.records_succeeded == 1


def test_report_batch_item_failures_checkpoints_at_the_lowest_failed_record(pipeline_for) -> None:
    """With ReportBatchItemFailures and several failures reported, Lambda checkpoints at the
    lowest sequence number and retries every record from there on."""
    pipeline = pipeline_for("Basic")
    modes = ["ok", "ok", "ok", "report-once", "ok", "ok", "report-once", "ok"]
    for i, mode in enumerate(modes):
        put(pipeline, f"k{i}", mode=mode)
    pipeline.drain()
    seqs = stream_sequence_numbers(pipeline)
    assert batches() == [seqs, seqs[3:]]
    assert pipeline.counters.partial_failures == 1
    assert queue_messages(pipeline, "OnFailure") == []


def test_an_empty_or_unknown_item_identifier_fails_the_whole_batch(pipeline_for) -> None:
    """AWS: a null or empty itemIdentifier, or one that names no record of the batch, is a
    complete failure: the whole batch is retried, then discarded to the destination. It is not
    a function error, so the batch is not bisected."""
    pipeline = pipeline_for("Basic")
    put(pipeline, "a")
    put(pipeline, "b", mode="empty-id")
    put(pipeline, "c", mode="unknown-id")
    pipeline.drain()
    seqs = stream_sequence_numbers(pipeline)
    assert batches() == [seqs] * 3  # the invocation and MaximumRetryAttempts=2 retries
    [message] = queue_messages(pipeline, "OnFailure")
    assert message["DDBStreamBatchInfo"]["batchSize"] == 3
    assert pipeline.counters.bisections == 0


def test_bisect_halves_the_failing_batch_until_the_bad_record_is_alone(pipeline_for) -> None:
    """BisectBatchOnFunctionError splits a failed batch in two and retries each half; splitting
    does not consume the retry quota, so the lone bad record then gets MaximumRetryAttempts (2)
    retries and is discarded, and every other record is processed."""
    pipeline = pipeline_for("Basic")
    for i in range(8):
        put(pipeline, f"k{i}", mode="fail" if i == 5 else "ok")
    pipeline.drain()
    s = stream_sequence_numbers(pipeline)
    assert batches() == [s[0:8], s[0:4], s[4:8], s[4:6], s[4:5], s[5:6], s[5:6], s[5:6], s[6:8]]
    assert pipeline.counters.bisections == 3
    assert pipeline.counters.records_succeeded == 7
    [message] = queue_messages(pipeline, "OnFailure")
    assert message["DDBStreamBatchInfo"]["startSequenceNumber"] == s[5]
    assert message["DDBStreamBatchInfo"]["endSequenceNumber"] == s[5]


def test_retries_exhausted_send_one_on_failure_message_in_aws_shape(pipeline_for) -> None:
    """When retries run out, Lambda sends the destination one invocation record: request and
    response context, condition RetryAttemptsExhausted, and DDBStreamBatchInfo (shard id,
    start/end sequence numbers, arrival times, batch size, stream ARN) - not the records."""
    pipeline = pipeline_for("Basic")
    put(pipeline, "poison", mode="fail")
    pipeline.drain()
    [seq] = stream_sequence_numbers(pipeline)
    [message] = queue_messages(pipeline, "OnFailure")
    function = next(iter(pipeline.functions.values()))
    stream_arn = pipeline.client("dynamodb").describe_table(TableName=pipeline.table_name("Items"))[
        "Table"
    ]["LatestStreamArn"]
    shard = pipeline.client("dynamodbstreams").describe_stream(StreamArn=stream_arn)[
        "StreamDescription"
    ]["Shards"][0]["ShardId"]
    iso = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"
    assert message["version"] == "1.0"
    assert re.match(iso, message["timestamp"])
    assert message["requestContext"]["functionArn"] == function.arn
    assert message["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert message["requestContext"]["approximateInvokeCount"] == 3
    assert message["responseContext"] == {
        "statusCode": 200,
        "executedVersion": "$LATEST",
        "functionError": "Unhandled",
    }
    info = message["DDBStreamBatchInfo"]
    assert {
        k: info[k]
        for k in ("shardId", "startSequenceNumber", "endSequenceNumber", "batchSize", "streamArn")
    } == {
        "shardId": shard,
        "startSequenceNumber": seq,
        "endSequenceNumber": seq,
        "batchSize": 1,
        "streamArn": stream_arn,
    }
    assert re.match(iso, info["approximateArrivalOfFirstRecord"])
    assert re.match(iso, info["approximateArrivalOfLastRecord"])
    assert "Records" not in json.dumps(message)


def test_records_older_than_the_maximum_age_go_to_the_destination_unprocessed(pipeline_for) -> None:
    """MaximumRecordAgeInSeconds: records older than that (ApproximateCreationDateTime) are not
    sent to the function; they are discarded to the on-failure destination, condition
    RecordAgeExceeded. An S3 destination stores the invocation record with the payload."""
    clock = FakeClock()
    pipeline = pipeline_for("AgeToS3", clock=clock)
    for i in range(3):
        put(pipeline, f"k{i}")
    clock.offset = 61
    pipeline.drain()
    assert recorder.INVOCATIONS == []
    assert pipeline.counters.records_expired == 3
    s3 = pipeline.client("s3")
    bucket = pipeline.bucket_name("Failures")
    [key] = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    uuid = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    assert re.match(
        rf"^aws/lambda/{uuid}/shardId-[\w-]+/\d{{4}}/\d\d/\d\d/\d{{4}}-\d\d-\d\dT\d\d\.\d\d\.\d\d-{uuid}$",
        key,
    )
    stored = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    assert stored["requestContext"]["condition"] == "RecordAgeExceeded"
    assert stored["requestContext"]["approximateInvokeCount"] == 0
    assert stored["DDBStreamBatchInfo"]["batchSize"] == 3
    payload = json.loads(stored["payload"])
    assert [r["dynamodb"]["SequenceNumber"] for r in payload["Records"]] == stream_sequence_numbers(
        pipeline
    )


def test_s3_destination_keeps_the_payload_of_a_batch_whose_retries_ran_out(pipeline_for) -> None:
    pipeline = pipeline_for("AgeToS3")
    put(pipeline, "poison", mode="fail")
    pipeline.drain()
    s3 = pipeline.client("s3")
    bucket = pipeline.bucket_name("Failures")
    [key] = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    stored = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    assert stored["requestContext"]["condition"] == "RetryAttemptsExhausted"
    [record] = json.loads(stored["payload"])["Records"]
    assert record["dynamodb"]["NewImage"]["mode"] == {"S": "fail"}
    assert record["eventSourceARN"].endswith(record["eventSourceARN"].split("/stream/")[1])


def test_parallelization_factor_keeps_item_order_and_isolates_a_failing_lane(pipeline_for) -> None:
    """ParallelizationFactor: records are spread over concurrent batches by partition key, so one
    item's records stay in order; a failing batch blocks only its own lane."""
    pipeline = pipeline_for("Parallel")
    keys = [f"key{i}" for i in range(8)]
    for version in range(3):
        for key in keys:
            mode = "fail" if (key == "key3" and version == 1) else "ok"
            put(pipeline, key, mode=mode, version=version)
    pipeline.drain()
    order = stream_sequence_numbers(pipeline)
    position = {s: i for i, s in enumerate(order)}
    delivered: dict[str, list[str]] = {}
    for invocation in recorder.INVOCATIONS:
        for key, seq in zip(keys_of(invocation), invocation.sequence_numbers, strict=True):
            delivered.setdefault(key, []).append(seq)
    for seqs in delivered.values():
        assert seqs == sorted(seqs, key=position.__getitem__)
    # Keys that share an invocation share a lane: more than one lane, at most four.
    lanes: list[set[str]] = []
    for invocation in recorder.INVOCATIONS:
        group = set(keys_of(invocation))
        for lane in [lane for lane in lanes if lane & group]:
            lanes.remove(lane)
            group |= lane
        lanes.append(group)
    assert 1 < len(lanes) <= 4
    poisoned = next(lane for lane in lanes if "key3" in lane)
    [message] = queue_messages(pipeline, "OnFailure")
    assert message["DDBStreamBatchInfo"]["batchSize"] <= 5
    healthy = [k for k in keys if k not in poisoned]
    for key in healthy:
        assert len(delivered[key]) == 3  # each delivered once: other lanes never retried


def test_batching_window_waits_for_a_full_batch_or_the_window(pipeline_for) -> None:
    """MaximumBatchingWindowInSeconds: Lambda gathers records until the batch is full (BatchSize
    3 here) or the window (5 s) has passed since the first one."""
    clock = FakeClock()
    pipeline = pipeline_for("Window", clock=clock)
    put(pipeline, "a")
    pipeline.poll()
    assert recorder.INVOCATIONS == []
    put(pipeline, "b")
    put(pipeline, "c")
    pipeline.poll()
    assert [len(b) for b in batches()] == [3]
    put(pipeline, "d")
    pipeline.poll()
    clock.offset = 4
    pipeline.poll()
    assert len(batches()) == 1
    clock.offset = 6
    pipeline.poll()
    assert [len(b) for b in batches()] == [3, 1]


def test_latest_starting_position_skips_records_written_before_the_mapping_started(
    aws, assembly_dir
) -> None:
    """StartingPosition LATEST: only records written after the mapping starts are read."""
    from cdc_local.runner import LocalPipeline

    pipeline = LocalPipeline(assembly_dir, "Window", endpoint=aws, flush_windows=True)
    pipeline.provision()
    put(pipeline, "before")
    pipeline.start()
    put(pipeline, "after")
    pipeline.drain()
    pipeline.close()
    assert [keys_of(i) for i in recorder.INVOCATIONS] == [["after"]]


def test_partial_failure_with_bisect_splits_at_the_reported_record_not_in_half(
    pipeline_for,
) -> None:
    """With both BisectBatchOnFunctionError and ReportBatchItemFailures, a partial batch response
    splits the batch at the returned sequence number and only the remaining records are retried;
    halving is for function errors. Retries running out discard those remaining records."""
    pipeline = pipeline_for("Basic")
    for i in range(6):
        put(pipeline, f"k{i}", mode="report" if i == 3 else "ok")
    pipeline.drain()
    s = stream_sequence_numbers(pipeline)
    assert batches() == [s, s[3:], s[3:]]
    assert pipeline.counters.bisections == 0
    [message] = queue_messages(pipeline, "OnFailure")
    info = message["DDBStreamBatchInfo"]
    assert (info["startSequenceNumber"], info["endSequenceNumber"], info["batchSize"]) == (
        s[3],
        s[5],
        3,
    )


def test_infinite_retries_on_a_poison_record_stop_the_drain_with_an_explanation(
    pipeline_for,
) -> None:
    """MaximumRetryAttempts -1 (Lambda's default) retries a failing batch until its records
    expire: on AWS the shard is blocked for up to 24 h. Draining says so instead of spinning."""
    from cdc_local.exceptions import PipelineStuck

    pipeline = pipeline_for("Window", flush_windows=True)
    put(pipeline, "poison", mode="fail")
    with pytest.raises(
        PipelineStuck, match=r"MaximumRetryAttempts is -1.*ValueError: poison record"
    ):
        pipeline.drain()
