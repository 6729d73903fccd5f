"""Redrive on the Kinesis route (issue 30), against moto's server: a KinesisConsumer's failed
batches, as Lambda writes them to an S3 destination (``KinesisBatchInfo`` with the batch as
payload) or an SQS one (``KinesisBatchInfo`` only: the records are read back from the stream),
replayed exactly once, in order per shard, and refused, with nothing deleted, when the markers or
the stream's retention no longer cover them."""

from __future__ import annotations

import json
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cdc_consumer import redrive_handler
from cdc_consumer.environment_variables import (
    CONSUMER_FUNCTION_NAME_ENV,
    CONSUMER_NAME_ENV,
    MAPPING_UUID_ENV,
    MARKER_TTL_ENV,
    ON_FAILURE_BUCKET_ENV,
    STREAM_ARN_ENV,
)
from cdc_consumer.exceptions import RedriveSetupError
from cdc_consumer.redrive import CallableInvoker, Redrive, main
from cdc_consumer.redrive.lease import RedriveLease
from cdc_consumer.redrive_shapes import RETRY_ATTEMPTS_EXHAUSTED, RedriveCause
from cdc_consumer.routes.kinesis.replay import ROUTE as KINESIS
from cdc_consumer.routes.kinesis.replay import to_lambda_kinesis_record

from cdc_local.destinations import FailedInvocation, OnFailureDestination
from cdc_local.endpoint import LocalEndpoint
from cdc_local.routes.kinesis import kinesis_invocation_record
from tests.cdc_consumer.fixtures import create_table
from tests.cdc_consumer.redrive_world import session_for

BUCKET = "orders-failed-batches"
MAPPING = "6f1bd3a2-8a53-4f0e-a2a1-2b4c2f3b9f7e"
FUNCTION = "orders-consumer"
FUNCTION_ARN = f"arn:aws:lambda:us-east-1:123456789012:function:{FUNCTION}"
HOUR = 3600


@dataclass
class KinesisStream:
    aws: LocalEndpoint
    client: Any
    name: str
    arn: str
    shard_id: str

    def put(self, count: int, start: int = 0) -> list[dict[str, Any]]:
        """Put ``count`` DynamoDB changes; return them as Lambda delivers them."""
        for number in range(start, start + count):
            change = {
                "eventID": f"change-{number}",
                "eventName": "INSERT",
                "dynamodb": {"Keys": {"pk": {"S": f"order-{number}"}}},
                "eventSource": "aws:dynamodb",
            }
            self.client.put_record(
                StreamName=self.name, Data=json.dumps(change).encode(), PartitionKey="one"
            )
        return self.records()[start : start + count]

    def records(self) -> list[dict[str, Any]]:
        iterator = self.client.get_shard_iterator(
            StreamName=self.name, ShardId=self.shard_id, ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        raw = self.client.get_records(ShardIterator=iterator)["Records"]
        return [to_lambda_kinesis_record(r, self.shard_id, self.arn) for r in raw]


@pytest.fixture
def stream(aws: LocalEndpoint) -> KinesisStream:
    client = aws.client("kinesis")
    client.create_stream(StreamName="orders-changes", ShardCount=1)
    arn = client.describe_stream_summary(StreamName="orders-changes")["StreamDescriptionSummary"][
        "StreamARN"
    ]
    shard = client.list_shards(StreamName="orders-changes")["Shards"][0]["ShardId"]
    return KinesisStream(aws, client, "orders-changes", arn, shard)


@pytest.fixture
def s3(stream: KinesisStream) -> Any:
    client = stream.aws.client("s3")
    client.create_bucket(Bucket=BUCKET)
    return client


@dataclass
class Consumer:
    """Applies each Kinesis record once (by sequence number), failing those in ``fail``."""

    fail: set[str] = field(default_factory=set)
    applied: list[str] = field(default_factory=list)
    calls: int = 0

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.calls += 1
        for record in event["Records"]:
            sequence = record["kinesis"]["sequenceNumber"]
            if sequence in self.fail:
                return {"batchItemFailures": [{"itemIdentifier": sequence}]}
            self.applied.append(sequence)
        return {"batchItemFailures": []}


def record_of(stream: KinesisStream, records: list[dict[str, Any]], now: float) -> dict[str, Any]:
    return kinesis_invocation_record(
        records=records,
        condition=RETRY_ATTEMPTS_EXHAUSTED,
        function_arn=FUNCTION_ARN,
        shard_id=stream.shard_id,
        stream_arn=stream.arn,
        failure=FailedInvocation(str(uuid.uuid4()), 200, "Unhandled", 6),
        now=now,
    )


def put_batch(stream: KinesisStream, records: list[dict[str, Any]], now: float) -> str:
    """Write one failed batch to the bucket as Lambda does; return its key."""
    destination = OnFailureDestination(f"arn:aws:s3:::{BUCKET}", stream.aws, mapping_uuid=MAPPING)
    destination.send(record_of(stream, records, now), {"Records": records}, now)
    return keys(destination.client)[-1]


def keys(s3: Any) -> list[str]:
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []))


def kinesis_redrive(stream: KinesisStream, consumer: Consumer, **options: Any) -> Redrive:
    settings: dict[str, Any] = {
        "streams_client": stream.client,
        "s3_client": stream.aws.client("s3"),
        "sqs_client": stream.aws.client("sqs"),
        "function_name": FUNCTION,
        "mapping_uuid": MAPPING,
        "receive_wait_seconds": 0,
    }
    return Redrive(invoker=CallableInvoker(consumer), stream_arn=stream.arn, **(settings | options))


def sequences(records: list[dict[str, Any]]) -> list[str]:
    return [r["kinesis"]["sequenceNumber"] for r in records]


def test_a_failed_kinesis_batch_in_the_bucket_is_redriven_exactly_once(
    stream: KinesisStream, s3: Any
) -> None:
    records = stream.put(3)
    put_batch(stream, records, time.time())
    consumer = Consumer()
    redrive = kinesis_redrive(stream, consumer, marker_ttl_seconds=30 * 24 * HOUR)

    first = redrive.run_bucket(BUCKET)
    second = redrive.run_bucket(BUCKET)

    assert first.ok, first.summary()
    assert (first.records_replayed, first.messages_deleted) == (3, 1)
    assert consumer.applied == sequences(records)
    assert keys(s3) == []
    assert (second.messages_received, second.records_replayed) == (0, 0)


def test_the_redrive_function_redrives_the_kinesis_route(stream: KinesisStream, s3: Any) -> None:
    """The provisioned handler, given a Kinesis stream ARN, takes the Kinesis route."""
    records = stream.put(2)
    put_batch(stream, records, time.time())
    consumer = Consumer()
    environ = {
        CONSUMER_FUNCTION_NAME_ENV: FUNCTION,
        CONSUMER_NAME_ENV: "orders",
        STREAM_ARN_ENV: stream.arn,
        ON_FAILURE_BUCKET_ENV: BUCKET,
        MAPPING_UUID_ENV: MAPPING,
        MARKER_TTL_ENV: str(30 * 24 * HOUR),
    }
    assert redrive_handler._redrive(environ).route is KINESIS

    result = redrive_handler.handler(
        {}, None, redrive=kinesis_redrive(stream, consumer), environ=environ
    )

    assert result["ok"] and result["lostRecords"] == 0
    assert consumer.applied == sequences(records)
    assert keys(s3) == []


def test_an_object_older_than_the_markers_is_refused_and_kept(
    stream: KinesisStream, s3: Any
) -> None:
    records = stream.put(2)
    key = put_batch(stream, records, time.time())
    consumer = Consumer()
    later = time.time() + 8 * 24 * HOUR
    redrive = kinesis_redrive(
        stream, consumer, marker_ttl_seconds=7 * 24 * HOUR, clock=lambda: later
    )

    report = redrive.run_bucket(BUCKET)

    assert [(r.message_id, r.cause) for r in report.refused] == [
        (key, RedriveCause.OLDER_THAN_MARKERS)
    ]
    assert not report.ok and consumer.calls == 0
    assert keys(s3) == [key]


def test_a_queued_pointer_is_read_back_from_the_stream_and_deleted_after_success(
    stream: KinesisStream,
) -> None:
    sqs = stream.aws.client("sqs")
    queue_url = sqs.create_queue(QueueName="orders-on-failure")["QueueUrl"]
    records = stream.put(4)
    body = json.dumps(record_of(stream, records[1:3], time.time()))
    sqs.send_message(QueueUrl=queue_url, MessageBody=body)
    consumer = Consumer()

    report = kinesis_redrive(stream, consumer).run(queue_url)

    assert report.ok, report.summary()
    assert consumer.applied == sequences(records[1:3])
    assert [r["kinesis"]["data"] for r in records[1:3]] == [
        r["kinesis"]["data"] for r in stream.records()[1:3]
    ]
    assert sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=0).get("Messages") is None


def test_a_pointer_past_the_streams_retention_is_refused_lost_and_kept(
    stream: KinesisStream,
) -> None:
    sqs = stream.aws.client("sqs")
    queue_url = sqs.create_queue(QueueName="orders-on-failure")["QueueUrl"]
    records = stream.put(2)
    body = json.dumps(record_of(stream, records, time.time()))
    sqs.send_message(QueueUrl=queue_url, MessageBody=body)
    consumer = Consumer()
    retention = stream.client.describe_stream_summary(StreamName=stream.name)[
        "StreamDescriptionSummary"
    ]["RetentionPeriodHours"]
    later = time.time() + (retention + 1) * HOUR

    report = kinesis_redrive(stream, consumer, clock=lambda: later).run(queue_url)

    assert [r.cause for r in report.refused] == [RedriveCause.OLDER_THAN_STREAM_RETENTION]
    assert report.lost_record_count == 2 and not report.ok
    assert consumer.calls == 0
    left = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=0).get("Messages", [])
    assert len(left) == 1


def test_a_shards_later_batch_waits_for_its_failed_earlier_one(
    stream: KinesisStream, s3: Any
) -> None:
    records = stream.put(4)
    now = time.time()
    first = put_batch(stream, records[:2], now)
    second = put_batch(stream, records[2:], now + 1)
    consumer = Consumer(fail={records[1]["kinesis"]["sequenceNumber"]})

    report = kinesis_redrive(stream, consumer, max_attempts=1).run_bucket(BUCKET)

    assert [f.message_id for f in report.failed] == [first]
    assert [(h.message_id, h.cause) for h in report.held] == [
        (second, RedriveCause.EARLIER_BATCH_OF_SHARD)
    ]
    assert consumer.applied == sequences(records[:1])
    assert keys(s3) == sorted([first, second])


def test_another_streams_batch_is_kept_unreplayed(stream: KinesisStream, s3: Any) -> None:
    records = stream.put(1)
    key = put_batch(stream, records, time.time())
    other = stream.arn.replace("orders-changes", "other")
    consumer = Consumer()
    redrive = Redrive(
        invoker=CallableInvoker(consumer),
        stream_arn=other,
        streams_client=stream.client,
        s3_client=s3,
    )

    report = redrive.run_bucket(BUCKET)

    assert [k.cause for k in report.kept] == [RedriveCause.FOREIGN]
    assert consumer.calls == 0 and keys(s3) == [key]


def test_a_redrive_refuses_a_stream_of_no_route_a_bucket_as_quarantine_and_a_location_of_no_kind(
    stream: KinesisStream,
) -> None:
    """The route is the stream's: an ARN of no route (an enhanced fan-out consumer's) is
    refused naming both routes' shapes; a location no failure kind claims is refused naming the
    value and the kinds (it is not taken for a queue)."""
    consumer_arn = f"{stream.arn}/consumer/fan-out:1"
    with pytest.raises(RedriveSetupError, match="or a Kinesis data stream ARN"):
        Redrive(invoker=CallableInvoker(Consumer()), stream_arn=consumer_arn).check("s3://b/p")
    with pytest.raises(RedriveSetupError, match="the quarantine queue's URL"):
        kinesis_redrive(stream, Consumer()).run(f"s3://{BUCKET}/aws/lambda/", "quarantine")
    with pytest.raises(RedriveSetupError) as refused:
        kinesis_redrive(stream, Consumer()).run("orders-on-failure")
    message = str(refused.value)
    assert "'orders-on-failure'" in message and "s3://BUCKET/PREFIX" in message
    assert "an on-failure queue's URL" in message


def test_the_dynamodb_route_is_unchanged_by_a_kinesis_arn_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # its clients need one, run alone too
    assert isinstance(
        redrive_handler._redrive(
            {
                CONSUMER_FUNCTION_NAME_ENV: FUNCTION,
                STREAM_ARN_ENV: "arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/label",
            }
        ),
        Redrive,
    )


def write_kinesis_handler(directory: Path, name: str) -> None:
    (directory / f"{name}.py").write_text(
        "applied = []\n\n\n"
        "def handler(event, context):\n"
        '    applied.extend(r["kinesis"]["sequenceNumber"] for r in event["Records"])\n'
        '    return {"batchItemFailures": []}\n'
    )


def test_the_command_line_redrives_the_kinesis_route_from_the_bucket_and_the_queue(
    stream: KinesisStream, s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """cdc-redrive given a Kinesis stream ARN takes the Kinesis route: an object's batch, then
    an SQS pointer read back from the stream (its quarantine: test_redrive_kinesis_quarantine)."""
    records = stream.put(3)
    put_batch(stream, records[:2], time.time())
    sqs = stream.aws.client("sqs")
    queue_url = sqs.create_queue(QueueName="orders-pointers")["QueueUrl"]
    sqs.send_message(
        QueueUrl=queue_url, MessageBody=json.dumps(record_of(stream, records[2:], time.time()))
    )
    write_kinesis_handler(tmp_path, "cli_kinesis_consumer")
    handler = ["--handler", "cli_kinesis_consumer:handler", "--path", str(tmp_path)]
    session = session_for(stream.aws)

    bucket = ["--bucket", BUCKET, "--mapping-uuid", MAPPING, "--stream-arn", stream.arn, "--json"]
    assert main(bucket + handler, session=session) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["messages_deleted"] == 1
    queue = ["--queue-url", queue_url, "--stream-arn", stream.arn, "--consumer-function", FUNCTION]
    assert main(queue + handler, session=session) == 0, capsys.readouterr().err
    assert sys.modules["cli_kinesis_consumer"].applied == sequences(records)
    assert keys(s3) == []


def test_a_second_run_while_the_first_holds_the_queue_touches_nothing(
    stream: KinesisStream,
) -> None:
    """Two runs on one on-failure queue: receiving hides the first run's messages (a shard's
    earlier batch) from the second, which would replay the later batch first. The redrive
    lease (cdc_consumer.redrive.lease) keeps them apart: a run that finds it held reads
    nothing and says who holds it; once given back, a run takes it."""
    ddb = stream.aws.client("dynamodb")
    create_table(ddb, "orders-idempotency", key="id")
    sqs = stream.aws.client("sqs")
    queue_url = sqs.create_queue(QueueName="orders-on-failure")["QueueUrl"]
    records = stream.put(4)
    for batch in (records[:2], records[2:]):
        sqs.send_message(
            QueueUrl=queue_url, MessageBody=json.dumps(record_of(stream, batch, time.time()))
        )
    lease = {"consumer_name": "orders", "lease_table": "orders-idempotency", "dynamodb_client": ddb}
    first = RedriveLease(ddb, "orders-idempotency", "orders", stream.arn, owner="first")
    assert first.take() is None
    consumer = Consumer()

    busy = kinesis_redrive(stream, consumer, **lease).run(queue_url)

    assert busy.busy is not None and busy.busy.owner == "first" and not busy.ok
    assert (busy.messages_received, consumer.calls) == (0, 0)
    first.release()
    done = kinesis_redrive(stream, consumer, **lease).run(queue_url)
    assert done.busy is None
    assert consumer.applied == sequences(records)
