"""Redrive from an S3 on-failure destination (issue 12), against moto's server.

The objects are written by the local pipeline's destination (cdc_local.destinations), which
writes AWS's shape: the invocation record with the batch as ``payload``, keyed
``aws/lambda/<mapping UUID>/<shard id>/YYYY/MM/DD/...``. The stream is trimmed with
cdc_local.retention, so these tests show a replay of records the stream no longer holds.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError
from cdc_consumer import redrive_handler
from cdc_consumer.redrive import main, to_lambda_record
from cdc_consumer.redrive_shapes import RETRY_ATTEMPTS_EXHAUSTED

from cdc_local.destinations import FailedInvocation, OnFailureDestination, invocation_record
from cdc_local.retention import StreamRetention
from tests.cdc_consumer.redrive_world import (
    OTHER_STREAM_ARN,
    Consumer,
    Stream,
    make_redrive,
    session_for,
    write_handler_module,
)

BUCKET = "orders-failed-batches"
MAPPING = "6f1bd3a2-8a53-4f0e-a2a1-2b4c2f3b9f7e"
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:orders-consumer"
DAY = 24 * 60 * 60


class Clock:
    def __init__(self) -> None:
        import time

        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def s3(stream: Stream) -> Any:
    client = stream.aws.client("s3")
    client.create_bucket(Bucket=BUCKET)
    return client


def lambda_records(stream: Stream) -> list[dict[str, Any]]:
    return [to_lambda_record(r, stream.arn) for r in stream.records()]


def put_batch(
    stream: Stream,
    records: list[dict[str, Any]],
    *,
    mapping: str = MAPPING,
    function_arn: str = FUNCTION_ARN,
    at: float = 1_700_000_000.0,
    shard_id: str | None = None,
) -> str:
    """Write one failed batch (of ``shard_id``, default the stream's first shard) as Lambda
    does; return its key."""
    destination = OnFailureDestination(f"arn:aws:s3:::{BUCKET}", stream.aws, mapping_uuid=mapping)
    record = invocation_record(
        records=records,
        condition=RETRY_ATTEMPTS_EXHAUSTED,
        function_arn=function_arn,
        shard_id=shard_id or stream.shard_id,
        stream_arn=stream.arn,
        failure=FailedInvocation(str(uuid.uuid4()), 200, "Unhandled", 6),
        now=at,
    )
    before = set(keys(destination.client))
    destination.send(record, {"Records": records}, at)
    (key,) = set(keys(destination.client)) - before
    return key


def keys(s3: Any, prefix: str = "") -> list[str]:
    return sorted(
        item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    )


def put_raw(s3: Any, key: str, body: str) -> str:
    s3.put_object(Bucket=BUCKET, Key=key, Body=body.encode())
    return key


def trim_everything(stream: Stream) -> None:
    clock = Clock()
    clock.now += DAY + 60
    assert StreamRetention(clock=clock).trim() > 0
    with pytest.raises(ClientError, match="TrimmedDataAccessException"):
        stream.streams.get_shard_iterator(
            StreamArn=stream.arn,
            ShardId=stream.shard_id,
            ShardIteratorType="AT_SEQUENCE_NUMBER",
            SequenceNumber=str(10**21 + 17454423009),
        )


def test_replays_objects_in_stream_order_after_the_stream_trimmed_them_then_deletes(
    stream: Stream, s3: Any
) -> None:
    stream.write(5)
    records = lambda_records(stream)
    later = put_batch(stream, records[3:], at=1_700_000_100.0)
    earlier = put_batch(stream, records[:3], at=1_700_000_200.0)  # written later, older records
    trim_everything(stream)
    consumer = Consumer()
    redrive = make_redrive(stream, consumer, s3_client=s3, function_name=FUNCTION_ARN)

    report = redrive.run_bucket(BUCKET)

    assert report.ok, report.summary()
    assert consumer.applied == [r["dynamodb"]["SequenceNumber"] for r in records]
    assert (report.messages_received, report.messages_deleted) == (2, 2)
    assert report.records_replayed == 5 and not report.lost
    assert keys(s3) == [] and {earlier, later}
    again = make_redrive(stream, consumer, s3_client=s3).run_bucket(BUCKET)
    assert again.ok and again.messages_received == 0 and again.invocations == 0


def test_a_batch_still_failing_keeps_its_object_and_every_later_one_of_its_shard(
    stream: Stream, s3: Any
) -> None:
    stream.write(4)
    records = lambda_records(stream)
    first = put_batch(stream, records[:2])
    second = put_batch(stream, records[2:])
    broken = Consumer(fail={records[1]["dynamodb"]["SequenceNumber"]: 99})

    report = make_redrive(stream, broken, s3_client=s3, max_attempts=2).run_bucket(BUCKET)

    assert not report.ok
    reasons = {f.message_id: f.reason for f in report.failed}
    assert "still failed after 2 attempt(s)" in reasons[first]
    (held,) = report.held
    assert held.message_id == second
    assert f"an earlier batch of shard {stream.shard_id} ({first})" in held.reason
    assert broken.applied == [records[0]["dynamodb"]["SequenceNumber"]]
    assert keys(s3) == sorted([first, second])

    fixed = Consumer(seen_event_ids=set(broken.seen_event_ids))
    assert make_redrive(stream, fixed, s3_client=s3).run_bucket(BUCKET).ok
    assert fixed.applied == [r["dynamodb"]["SequenceNumber"] for r in records[1:]]
    assert keys(s3) == []


def test_the_mappings_filters_are_respected(stream: Stream, s3: Any) -> None:
    stream.write(2)
    stream.ddb.put_item(TableName="orders", Item={"pk": {"S": "order-0"}, "total": {"N": "5"}})
    records = lambda_records(stream)
    put_batch(stream, records)
    consumer = Consumer()

    report = make_redrive(
        stream, consumer, s3_client=s3, filters=[{"eventName": ["MODIFY"]}]
    ).run_bucket(BUCKET)

    assert report.ok and report.records_filtered == 2
    assert consumer.applied == [records[2]["dynamodb"]["SequenceNumber"]]


def test_dry_run_lists_objects_and_records_without_invoking_or_deleting(
    stream: Stream, s3: Any
) -> None:
    stream.write(3)
    records = lambda_records(stream)
    key = put_batch(stream, records)
    consumer = Consumer()

    report = make_redrive(stream, consumer, s3_client=s3).run_bucket(BUCKET, dry_run=True)

    (planned,) = report.planned
    assert (planned.message_id, planned.record_count) == (key, 3)
    assert planned.first_sequence_number == records[0]["dynamodb"]["SequenceNumber"]
    assert consumer.calls == 0 and keys(s3) == [key]
    assert f"planned {key}: shard {stream.shard_id}" in report.summary()


# --- Bad input: kept, reported with the reason, nothing deleted ------------------------------


def aws_key(stream: Stream, name: str) -> str:
    return f"aws/lambda/{MAPPING}/{stream.shard_id}/2024/01/01/{name}"


def test_objects_not_in_awss_shape_or_not_this_consumers_are_kept_with_the_reason(
    stream: Stream, s3: Any
) -> None:
    stream.write(3)
    records = lambda_records(stream)
    good = json.loads(
        s3.get_object(Bucket=BUCKET, Key=put_batch(stream, records[:1]))["Body"].read()
    )
    s3.delete_object(Bucket=BUCKET, Key=keys(s3)[0])
    bad = {
        put_raw(s3, "failed/batch.json", json.dumps(good)): "the key is not in AWS's shape",
        put_raw(s3, aws_key(stream, "truncated"), json.dumps(good)[:-40]): "body is not JSON",
        put_raw(
            s3,
            aws_key(stream, "pointer"),
            json.dumps({k: v for k, v in good.items() if k != "payload"}),
        ): "has no payload",
        put_raw(
            s3,
            aws_key(stream, "payload-cut"),
            json.dumps({**good, "payload": good["payload"][:-10]}),
        ): "payload is not JSON",
        put_raw(
            s3,
            aws_key(stream, "mismatch"),
            json.dumps({**good, "payload": json.dumps({"Records": records[1:2]})}),
        ): "does not match its DDBStreamBatchInfo",
    }
    foreign_stream = {**good["DDBStreamBatchInfo"], "streamArn": OTHER_STREAM_ARN}
    foreign = {
        put_raw(
            s3,
            aws_key(stream, "other-stream"),
            json.dumps({**good, "DDBStreamBatchInfo": foreign_stream}),
        ): f"is for stream {OTHER_STREAM_ARN!r}",
        put_batch(
            stream, records[1:2], mapping=str(uuid.uuid4())
        ): "was written by event source mapping",
        put_batch(
            stream, records[2:], function_arn=FUNCTION_ARN.replace("orders-", "billing-")
        ): "from function 'billing-consumer'",
    }
    before = keys(s3)
    consumer = Consumer()
    redrive = make_redrive(
        stream, consumer, s3_client=s3, function_name=FUNCTION_ARN, mapping_uuid=MAPPING
    )

    report = redrive.run_bucket(BUCKET, prefix="")

    assert not report.ok and consumer.calls == 0 and report.messages_deleted == 0
    failed = {f.message_id: f.reason for f in report.failed}
    kept = {k.message_id: k.reason for k in report.kept}
    for key, reason in bad.items():
        assert reason in failed[key], (key, failed.get(key))
    for key, reason in foreign.items():
        assert reason in kept[key], (key, kept.get(key))
    assert keys(s3) == before


def statuses(stream: Stream, count: int) -> list[dict[str, Any]]:
    """``count`` changes of one item (order-0's status 0, 1, ...), in Lambda's shape."""
    for number in range(count):
        stream.ddb.put_item(
            TableName="orders", Item={"pk": {"S": "order-0"}, "status": {"S": f"s{number}"}}
        )
    return lambda_records(stream)


def deny_reads_of(s3: Any, *locked: str) -> None:
    """Make GetObject of the ``locked`` keys fail with AccessDenied."""

    def deny(params: dict[str, Any], **_: Any) -> Any:
        if any(params["url_path"].endswith(key.rsplit("/", 1)[1]) for key in locked):
            return AWSResponse("https://s3", 403, {}, None), {
                "Error": {"Code": "AccessDenied", "Message": "Access Denied"},
                "ResponseMetadata": {"HTTPStatusCode": 403},
            }
        return None

    s3.meta.events.register("before-call.s3.GetObject", deny)


def test_an_object_the_caller_cannot_read_holds_back_the_later_objects_of_its_shard(
    stream: Stream, s3: Any
) -> None:
    """Three failed batches of one item's changes; the middle one cannot be read (S3 refuses
    it). The batch written before it is replayed; the one written after it holds a newer change
    of the item and is held, reported with the reason (issue 23 §2): replaying it would leave
    the item with the older status once the middle one is readable again."""
    records = statuses(stream, 3)
    put_batch(stream, records[:1], at=1_700_000_000.0)  # before the locked one: replayed
    locked = put_batch(stream, records[1:2], at=1_700_000_100.0)
    later = put_batch(stream, records[2:], at=1_700_000_200.0)
    deny_reads_of(s3, locked)
    consumer = Consumer()

    report = make_redrive(stream, consumer, s3_client=s3).run_bucket(BUCKET)

    (failed,) = report.failed
    assert failed.message_id == locked and "AccessDenied" in failed.reason
    (held,) = report.held
    assert held.message_id == later and locked in held.reason
    assert not report.ok and report.messages_deleted == 1
    assert consumer.applied == [records[0]["dynamodb"]["SequenceNumber"]]
    assert keys(s3) == sorted([locked, later])
    assert f"HELD {later}: object {locked}" in report.summary()


def test_a_truncated_object_holds_back_the_later_objects_of_its_shard_until_it_is_fixed(
    stream: Stream, s3: Any
) -> None:
    records = statuses(stream, 2)
    truncated = put_batch(stream, records[:1], at=1_700_000_000.0)
    whole = s3.get_object(Bucket=BUCKET, Key=truncated)["Body"].read()
    put_raw(s3, truncated, whole.decode()[:-40])
    later = put_batch(stream, records[1:], at=1_700_000_100.0)
    consumer = Consumer()

    report = make_redrive(stream, consumer, s3_client=s3).run_bucket(BUCKET)

    assert [f.message_id for f in report.failed] == [truncated]
    assert [h.message_id for h in report.held] == [later]
    assert consumer.applied == [] and keys(s3) == sorted([truncated, later])

    s3.put_object(Bucket=BUCKET, Key=truncated, Body=whole)  # restored from its version
    assert make_redrive(stream, consumer, s3_client=s3).run_bucket(BUCKET).ok
    assert consumer.applied == [r["dynamodb"]["SequenceNumber"] for r in records]


# --- The command line and the function ------------------------------------------------------


def test_cli_replays_an_object_whose_records_the_stream_no_longer_holds(
    stream: Stream, s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stream.write(3)
    records = lambda_records(stream)
    put_batch(stream, records)
    trim_everything(stream)
    write_handler_module(tmp_path, "cli_consumer_s3")
    argv = ["--bucket", BUCKET, "--prefix", f"aws/lambda/{MAPPING}/", "--json"]
    argv += ["--stream-arn", stream.arn, "--handler", "cli_consumer_s3:handler"]
    argv += ["--path", str(tmp_path)]

    status = main(argv, session=session_for(stream.aws))

    out, err = capsys.readouterr()
    assert status == 0, err
    assert sys.modules["cli_consumer_s3"].applied == [
        r["dynamodb"]["SequenceNumber"] for r in records
    ]
    report = json.loads(out)
    assert report["ok"] and report["messages_deleted"] == 1
    assert f"redrive on-failure s3://{BUCKET}/aws/lambda/{MAPPING}/: 1 object(s)" in err
    assert keys(s3) == []


def shared_bucket(stream: Stream) -> tuple[str, str]:
    """Our mapping's failed batch and another consumer's (its own mapping and function) in one
    bucket; return their keys."""
    records = lambda_records(stream)
    ours = put_batch(stream, records[:1])
    theirs = put_batch(
        stream,
        records[1:],
        mapping=str(uuid.uuid4()),
        function_arn=FUNCTION_ARN.replace("orders-", "billing-"),
    )
    return ours, theirs


def test_cli_scoped_to_its_mapping_never_replays_another_consumers_object(
    stream: Stream, s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shared bucket, the default prefix: with --mapping-uuid only this consumer's object is
    replayed and deleted; the other consumer's stays (issue 23 §4)."""
    stream.write(2)
    ours, theirs = shared_bucket(stream)
    write_handler_module(tmp_path, "cli_consumer_s3_scoped")
    argv = ["--bucket", BUCKET, "--stream-arn", stream.arn, "--mapping-uuid", MAPPING]
    argv += ["--handler", "cli_consumer_s3_scoped:handler", "--path", str(tmp_path), "--json"]

    status = main(argv, session=session_for(stream.aws))

    out, err = capsys.readouterr()
    assert status == 0, err
    assert sys.modules["cli_consumer_s3_scoped"].applied == [
        lambda_records(stream)[0]["dynamodb"]["SequenceNumber"]
    ]
    assert json.loads(out)["queue_url"] == f"s3://{BUCKET}/aws/lambda/{MAPPING}/"
    assert keys(s3) == [theirs] and ours not in keys(s3)


def test_cli_without_its_mapping_refuses_a_bucket_and_touches_nothing(
    stream: Stream, s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--bucket with --handler and the default prefix names no consumer: one line, exit 2,
    nothing replayed or deleted (it replayed and deleted the other consumer's object)."""
    stream.write(2)
    before = sorted(shared_bucket(stream))
    write_handler_module(tmp_path, "cli_consumer_s3_unscoped")
    argv = ["--bucket", BUCKET, "--stream-arn", stream.arn]
    argv += ["--handler", "cli_consumer_s3_unscoped:handler", "--path", str(tmp_path)]

    assert main(argv, session=session_for(stream.aws)) == 2

    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "whose batches?" in line and "give --mapping-uuid UUID" in line
    assert sys.modules["cli_consumer_s3_unscoped"].applied == []
    assert keys(s3) == before

    argv += ["--prefix", "aws/lambda/", "--mapping-uuid", str(uuid.uuid4())]
    argv[-3] = f"aws/lambda/{MAPPING}/"  # a prefix naming another mapping than --mapping-uuid
    assert main(argv, session=session_for(stream.aws)) == 2
    assert "name two mappings" in capsys.readouterr().err
    assert keys(s3) == before


def test_cli_dry_run_lists_objects_and_bad_objects_exit_1(
    stream: Stream, s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stream.write(1)
    key = put_batch(stream, lambda_records(stream))
    put_raw(s3, aws_key(stream, "2030-01-01T00.00.00-junk"), "{")  # written after it
    write_handler_module(tmp_path, "cli_consumer_s3_dry")
    argv = ["--bucket", BUCKET, "--stream-arn", stream.arn, "--dry-run"]
    argv += ["--handler", "cli_consumer_s3_dry:handler", "--path", str(tmp_path)]
    argv += ["--mapping-uuid", MAPPING]

    assert main(argv, session=session_for(stream.aws)) == 1

    err = capsys.readouterr().err
    assert f"planned {key}: shard {stream.shard_id}" in err and "1 record(s)" in err
    assert "FAILED aws/lambda/" in err and "body is not JSON" in err
    assert sys.modules["cli_consumer_s3_dry"].applied == []
    assert len(keys(s3)) == 2


def test_cli_a_bucket_that_does_not_exist_is_one_line_and_exit_2(
    stream: Stream, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_handler_module(tmp_path, "cli_consumer_s3_missing")
    argv = ["--bucket", "no-such-bucket", "--stream-arn", stream.arn]
    argv += ["--handler", "cli_consumer_s3_missing:handler", "--path", str(tmp_path)]
    argv += ["--mapping-uuid", MAPPING]

    assert main(argv, session=session_for(stream.aws)) == 2

    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "cannot list bucket no-such-bucket (NoSuchBucket" in line and "check --bucket" in line


def test_redrive_function_reads_whatever_destination_the_consumer_has(
    stream: Stream, s3: Any
) -> None:
    stream.write(2)
    records = lambda_records(stream)
    put_batch(stream, records)
    put_batch(stream, records[:1], mapping=str(uuid.uuid4()))  # another mapping's: not listed
    consumer = Consumer()
    environ = {
        "ON_FAILURE_BUCKET_NAME": BUCKET,
        "EVENT_SOURCE_MAPPING_UUID": MAPPING,
        "CDC_CONSUMER_NAME": "orders",
        "CONSUMER_FUNCTION_NAME": "orders-consumer",
        "STREAM_ARN": stream.arn,
    }

    result = redrive_handler.handler(
        {"source": "on-failure"},
        None,
        redrive=make_redrive(stream, consumer, s3_client=s3, mapping_uuid=MAPPING),
        environ=environ,
    )

    assert result["ok"], result
    (report,) = result["reports"]
    # The root of Lambda's layout: every mapping of the function (its current one's here).
    assert report["queue_url"] == f"s3://{BUCKET}/aws/lambda/"
    assert consumer.applied == [r["dynamodb"]["SequenceNumber"] for r in records]
    assert len(keys(s3)) == 1  # the other mapping's object is untouched
