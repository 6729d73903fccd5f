"""A quarantine for any record (issue 30): a poison record too big for a queue message (SQS
refuses more than the queue's MaximumMessageSize, 256 KiB by default; a DynamoDB item reaches
400 KB, a record carries two images and binary travels as base64) is kept whole in the bucket,
its message pointing at it; redriven like any other, and counted.

On main the runtime sent it as one message: SQS refused it, the send was treated as transient
and the shard stalled on the record (``test_an_oversize_record_is_quarantined_not_stalled``)."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

from cdc_consumer import Change, PermanentError, StreamProcessor
from cdc_consumer.quarantine_shapes import QUARANTINE_S3_PREFIX
from cdc_consumer.redrive import CallableInvoker, Redrive, Source
from cdc_consumer.redrive_shapes import RedriveCause
from cdc_consumer.service_limits import MAX_QUEUE_MESSAGE_BYTES
from cdc_consumer.testing import FakeContext, stream_event

from cdc_local.endpoint import LocalEndpoint, patched_environ
from tests.cdc_consumer.fixtures import Resources

BUCKET = "orders-failed-batches"
STREAM_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2024-01-01T00:00:00.000"


def big_record(size: int = 300_000) -> dict[str, Any]:
    """An INSERT whose new image holds ``size`` bytes of binary (base64: a third more)."""
    blob = base64.b64encode(b"x" * size).decode()
    return {
        "eventID": "big-1",
        "eventName": "INSERT",
        "eventSource": "aws:dynamodb",
        "eventSourceARN": STREAM_ARN,
        "awsRegion": "us-east-1",
        "eventVersion": "1.1",
        "dynamodb": {
            "ApproximateCreationDateTime": 1_700_000_000,
            "Keys": {"pk": {"S": "order-1"}},
            "NewImage": {"pk": {"S": "order-1"}, "blob": {"B": blob}},
            "SequenceNumber": "100000000000000000001",
            "SizeBytes": size,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }


def aws_sized_queue(resources: Resources) -> str:
    """A quarantine queue that refuses what SQS refuses (moto's default takes 1 MiB)."""
    return resources.sqs.create_queue(
        QueueName="quarantine-aws-sized",
        Attributes={"MaximumMessageSize": str(MAX_QUEUE_MESSAGE_BYTES)},
    )["QueueUrl"]


def poison_processor(resources: Resources, queue_url: str) -> Any:
    processor = StreamProcessor(
        "test-consumer",
        idempotency_table=resources.idempotency_table,
        quarantine_queue_url=queue_url,
        dynamodb_client=resources.dynamodb,
        sqs_client=resources.sqs,
    )

    @processor.projection
    def refuse(change: Change) -> list[dict[str, Any]]:
        raise PermanentError("the order is too large to apply")

    return processor


def received(resources: Resources, queue_url: str) -> list[dict[str, Any]]:
    messages = resources.sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0
    ).get("Messages", [])
    return [json.loads(m["Body"]) for m in messages]


def test_an_oversize_record_is_quarantined_not_stalled(
    resources: Resources, aws: LocalEndpoint
) -> None:
    s3 = aws.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    queue_url = aws_sized_queue(resources)
    record = big_record()

    with patched_environ({"QUARANTINE_BUCKET_NAME": BUCKET}):
        response = poison_processor(resources, queue_url).handle(
            stream_event([copy.deepcopy(record)]), FakeContext()
        )

    assert response == {"batchItemFailures": []}  # not stalled: quarantined, processing went on
    (message,) = received(resources, queue_url)
    location = message["recordLocation"]
    assert location["bucket"] == BUCKET and location["key"].startswith(QUARANTINE_S3_PREFIX)
    assert "NewImage" not in message["record"]["dynamodb"]
    assert message["record"]["dynamodb"]["Keys"] == record["dynamodb"]["Keys"]
    stored = json.loads(s3.get_object(Bucket=BUCKET, Key=location["key"])["Body"].read())
    assert (
        stored["record"] == record
        and stored["error"]["message"] == "the order is too large to apply"
    )


def test_without_a_bucket_an_oversize_record_is_reported_never_dropped(
    resources: Resources,
) -> None:
    queue_url = aws_sized_queue(resources)
    record = big_record()

    response = poison_processor(resources, queue_url).handle(
        stream_event([copy.deepcopy(record)]), FakeContext()
    )

    assert response == {"batchItemFailures": [{"itemIdentifier": "100000000000000000001"}]}
    assert received(resources, queue_url) == []


def test_a_record_kept_in_the_bucket_is_redriven_whole_and_its_object_deleted(
    resources: Resources, aws: LocalEndpoint
) -> None:
    s3 = aws.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    queue_url = aws_sized_queue(resources)
    record = big_record()
    with patched_environ({"QUARANTINE_BUCKET_NAME": BUCKET}):
        poison_processor(resources, queue_url).handle(
            stream_event([copy.deepcopy(record)]), FakeContext()
        )
    replayed: list[dict[str, Any]] = []

    def fixed(event: dict[str, Any], context: Any) -> dict[str, Any]:
        replayed.extend(event["Records"])
        return {"batchItemFailures": []}

    report = Redrive(
        invoker=CallableInvoker(fixed),
        stream_arn=STREAM_ARN,
        sqs_client=resources.sqs,
        s3_client=s3,
        consumer_name="test-consumer",
        receive_wait_seconds=0,
    ).run(queue_url, Source.QUARANTINE)

    assert report.ok, report.summary()
    assert replayed == [record]  # whole: both the keys and the image the queue could not take
    assert received(resources, queue_url) == []
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount", 0) == 0


def test_a_pointer_whose_object_is_gone_is_kept_with_the_reason(
    resources: Resources, aws: LocalEndpoint
) -> None:
    s3 = aws.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    queue_url = aws_sized_queue(resources)
    with patched_environ({"QUARANTINE_BUCKET_NAME": BUCKET}):
        poison_processor(resources, queue_url).handle(stream_event([big_record()]), FakeContext())
    (message,) = received(resources, queue_url)
    s3.delete_object(Bucket=BUCKET, Key=message["recordLocation"]["key"])

    report = Redrive(
        invoker=CallableInvoker(lambda event, context: {"batchItemFailures": []}),
        stream_arn=STREAM_ARN,
        sqs_client=resources.sqs,
        s3_client=s3,
        consumer_name="test-consumer",
        receive_wait_seconds=0,
    ).run(queue_url, Source.QUARANTINE)

    (failed,) = report.failed
    assert failed.cause is RedriveCause.UNREADABLE and "quarantine bucket" in failed.reason
    assert len(received(resources, queue_url)) == 1
