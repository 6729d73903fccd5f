"""The redrive tests' world on moto's server: a table with a stream, queues, a consumer, messages
in AWS's shapes, and DynamoDB Streams errors injected where moto answers differently (see
tests/cdc_consumer/test_redrive.py)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from cdc_consumer.redrive import CallableInvoker, Redrive

from cdc_local.endpoint import LocalEndpoint
from tests.cdc_consumer.fixtures import create_table

OTHER_STREAM_ARN = (
    "arn:aws:dynamodb:us-east-1:123456789012:table/other/stream/2024-01-01T00:00:00.000"
)


# --- The world: a table with a stream, queues, a consumer ------------------------------------


@dataclass
class Stream:
    aws: LocalEndpoint
    arn: str
    shard_id: str
    ddb: Any
    streams: Any

    def write(self, count: int) -> list[str]:
        """Write ``count`` items; return the sequence numbers of all records in the stream."""
        for number in range(count):
            self.ddb.put_item(
                TableName="orders",
                Item={"pk": {"S": f"order-{number}"}, "total": {"N": str(10 * number)}},
            )
        return [r["dynamodb"]["SequenceNumber"] for r in self.records()]

    def records(self) -> list[dict[str, Any]]:
        iterator = self.streams.get_shard_iterator(
            StreamArn=self.arn, ShardId=self.shard_id, ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        return self.streams.get_records(ShardIterator=iterator)["Records"]


@pytest.fixture
def stream(aws: LocalEndpoint) -> Stream:
    ddb = aws.client("dynamodb")
    create_table(ddb, "orders", stream=True)
    arn = ddb.describe_table(TableName="orders")["Table"]["LatestStreamArn"]
    streams = aws.client("dynamodbstreams")
    shards = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    return Stream(aws, arn, shards[0]["ShardId"], ddb, streams)


@pytest.fixture
def sqs(aws: LocalEndpoint) -> Any:
    return aws.client("sqs")


@pytest.fixture
def queue_url(sqs: Any) -> str:
    return sqs.create_queue(QueueName="orders-on-failure")["QueueUrl"]


def on_failure_message(
    stream: Stream, start: str, end: str, batch_size: int = 1, **overrides: Any
) -> str:
    """An on-failure record in AWS's shape (interfaces §5)."""
    info = {
        "shardId": stream.shard_id,
        "startSequenceNumber": start,
        "endSequenceNumber": end,
        "approximateArrivalOfFirstRecord": "2024-01-01T00:00:00Z",
        "approximateArrivalOfLastRecord": "2024-01-01T00:00:01Z",
        "batchSize": batch_size,
        "streamArn": stream.arn,
    }
    info.update(overrides)
    return json.dumps(
        {
            "requestContext": {
                "requestId": "316aa6d0-8154-xmpl-9af7-85d5f4a6bc81",
                "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:orders-consumer",
                "condition": "RetryAttemptsExhausted",
                "approximateInvokeCount": 6,
            },
            "responseContext": {
                "statusCode": 200,
                "executedVersion": "$LATEST",
                "functionError": "Unhandled",
            },
            "version": "1.0",
            "timestamp": "2024-01-01T00:05:00.000Z",
            "DDBStreamBatchInfo": info,
        }
    )


def send_on_failure(sqs: Any, queue_url: str, stream: Stream, *args: Any, **overrides: Any) -> str:
    """Send :func:`on_failure_message` to ``queue_url``; return the body sent."""
    body = on_failure_message(stream, *args, **overrides)
    sqs.send_message(QueueUrl=queue_url, MessageBody=body)
    return body


def send_failed_batch(
    sqs: Any, queue_url: str, stream: Stream, count: int
) -> tuple[list[str], str]:
    """Write ``count`` records and send the on-failure message of the batch of them all:
    their sequence numbers, and the body sent."""
    sequence_numbers = stream.write(count)
    body = send_on_failure(sqs, queue_url, stream, sequence_numbers[0], sequence_numbers[-1], count)
    return sequence_numbers, body


def quarantine_message(record: dict[str, Any], consumer: str = "orders") -> str:
    """A quarantine message (interfaces §4)."""
    return json.dumps(
        {
            "version": "1",
            "consumer": consumer,
            "sourceArn": record["eventSourceARN"],
            "error": {"type": "PermanentError", "message": "total must not be negative"},
            "record": record,
            "quarantinedAt": "2024-01-01T00:00:00Z",
        }
    )


def queue_bodies(sqs: Any, queue_url: str) -> list[str]:
    """Bodies of the messages visible now (without keeping them invisible afterwards)."""
    messages = sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0
    ).get("Messages", [])
    return [m["Body"] for m in messages]


@dataclass
class Consumer:
    """A consumer idempotent by eventID that stops at its first failure (interfaces §9).

    ``fail`` maps a sequence number to how many more times its record fails; ``raises`` makes
    every call raise (a function error).
    """

    fail: dict[str, int] = field(default_factory=dict)
    raises: bool = False
    applied: list[str] = field(default_factory=list)  # sequence numbers, in order applied
    seen_event_ids: set[str] = field(default_factory=set)
    duplicates: int = 0
    calls: int = 0

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.calls += 1
        assert context.get_remaining_time_in_millis() > 0
        if self.raises:
            raise ValueError("total must not be negative")
        for record in event["Records"]:
            sequence_number = record["dynamodb"]["SequenceNumber"]
            if self.fail.get(sequence_number, 0) > 0:
                self.fail[sequence_number] -= 1
                return {"batchItemFailures": [{"itemIdentifier": sequence_number}]}
            if record["eventID"] in self.seen_event_ids:
                self.duplicates += 1
                continue
            self.seen_event_ids.add(record["eventID"])
            self.applied.append(sequence_number)
        return {"batchItemFailures": []}


def make_redrive(stream: Stream, consumer: Callable[..., Any], **options: Any) -> Redrive:
    settings: dict[str, Any] = {
        "consumer_name": "orders",
        "receive_wait_seconds": 0,
        "sqs_client": stream.aws.client("sqs"),
        "streams_client": stream.streams,
    }
    return Redrive(invoker=CallableInvoker(consumer), stream_arn=stream.arn, **(settings | options))


def inject_stream_error(
    client_or_session: Any, operation: str, code: str, when: Callable[[dict[str, Any]], bool]
) -> None:
    """Make DynamoDB Streams ``operation`` fail with ``code`` when ``when(request params)``."""

    def hook(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        request = json.loads(params["body"])
        if not when(request):
            return None
        message = f"injected by the test: {code}"
        return AWSResponse("https://streams.dynamodb", 400, {}, None), {
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }

    events = getattr(client_or_session, "events", None) or client_or_session.meta.events
    events.register(f"before-call.dynamodb-streams.{operation}", hook)


def write_handler_module(directory: Path, name: str) -> None:
    (directory / f"{name}.py").write_text(
        textwrap.dedent(
            """
            applied = []

            def handler(event, context):
                applied.extend(r["dynamodb"]["SequenceNumber"] for r in event["Records"])
                return {"batchItemFailures": []}
            """
        )
    )


def session_for(aws: LocalEndpoint) -> boto3.session.Session:
    return boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=aws.region
    )
