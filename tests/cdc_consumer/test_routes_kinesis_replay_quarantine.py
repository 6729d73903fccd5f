"""The Kinesis route's quarantine redrive (issue 30), against moto's server: a poison Kinesis
record the consumer quarantined (the runtime's own send), replayed once the fault is fixed,
exactly once, deleted only after success; held while the failed-batch bucket holds an earlier
change of its item (and a bucket batch held while the quarantine holds one); refused when older
than the markers; another stream's message kept; what the consumer quarantines again reported.
The same run from the redrive function and from ``cdc-redrive --quarantine``."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
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
    QUARANTINE_QUEUE_ENV,
    STREAM_ARN_ENV,
)
from cdc_consumer.exceptions import RedriveSetupError
from cdc_consumer.quarantine import quarantine_message, send_to_quarantine
from cdc_consumer.redrive import CallableInvoker, Redrive, main
from cdc_consumer.redrive.messages import parse_quarantine_message
from cdc_consumer.redrive.pending_changes import change_of, item_key
from cdc_consumer.redrive_shapes import RedriveCause
from cdc_consumer.routes.kinesis.replay import ROUTE as KINESIS
from cdc_consumer.service_limits import MAX_QUEUE_MESSAGE_BYTES
from cdc_consumer.wire import dumps

from tests.cdc_consumer.redrive_world import session_for
from tests.cdc_consumer.test_routes_kinesis_replay import (
    BUCKET,
    FUNCTION,
    HOUR,
    MAPPING,
    KinesisStream,
    keys,
    put_batch,
    s3,  # noqa: F401 (a fixture)
    sequences,
    stream,  # noqa: F401 (a fixture)
)

CONSUMER = "orders"
MARKERS = 30 * 24 * HOUR


def put_changes(
    stream: KinesisStream,  # noqa: F811
    items: list[str],
    padding: int = 0,
) -> list[dict[str, Any]]:
    """One change per entry of ``items`` (an item's key), created a millisecond apart, as
    Lambda delivers them (``padding`` characters in each new image)."""
    start = len(stream.records())
    created = int(time.time() * 1000)
    for offset, item in enumerate(items):
        change = {
            "eventID": f"change-{start + offset}",
            "eventName": "MODIFY",
            "eventSource": "aws:dynamodb",
            "dynamodb": {
                "Keys": {"pk": {"S": item}},
                "NewImage": {
                    "pk": {"S": item},
                    "version": {"N": str(start + offset)},
                    "padding": {"S": "x" * padding},
                },
                "ApproximateCreationDateTime": created + offset,
            },
        }
        stream.client.put_record(
            StreamName=stream.name, Data=json.dumps(change).encode(), PartitionKey=item
        )
    return stream.records()[start:]


@dataclass
class Consumer:
    """Applies each record once; a record in ``poison`` is quarantined (as the runtime does)
    while ``fixed`` is False."""

    sqs: Any
    queue_url: str
    poison: set[str] = field(default_factory=set)
    fixed: bool = False
    applied: list[str] = field(default_factory=list)

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        for record in event["Records"]:
            sequence = record["kinesis"]["sequenceNumber"]
            if sequence in self.poison and not self.fixed:
                send_to_quarantine(
                    self.sqs, self.queue_url, CONSUMER, record, ValueError("bad total")
                )
                continue
            if sequence not in self.applied:
                self.applied.append(sequence)
        return {"batchItemFailures": []}


@pytest.fixture
def quarantine(stream: KinesisStream) -> tuple[Any, str]:  # noqa: F811
    sqs = stream.aws.client("sqs")
    return sqs, sqs.create_queue(QueueName="orders-quarantine")["QueueUrl"]


def redrive_of(stream: KinesisStream, consumer: Consumer, **options: Any) -> Redrive:  # noqa: F811
    settings: dict[str, Any] = {
        "streams_client": stream.client,
        "s3_client": stream.aws.client("s3"),
        "sqs_client": consumer.sqs,
        "function_name": FUNCTION,
        "mapping_uuid": MAPPING,
        "consumer_name": CONSUMER,
        "quarantine_queue_url": consumer.queue_url,
        "marker_ttl_seconds": MARKERS,
        "receive_wait_seconds": 0,
    }
    return Redrive(invoker=CallableInvoker(consumer), stream_arn=stream.arn, **(settings | options))


def messages(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    found = sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0
    ).get("Messages", [])
    return found


def test_a_quarantine_message_of_the_kinesis_route_is_read_with_its_items_identity(
    stream: KinesisStream,  # noqa: F811
) -> None:
    record = put_changes(stream, ["order-1"])[0]
    body = dumps(quarantine_message(CONSUMER, record, ValueError("bad")))

    parsed = parse_quarantine_message(
        body, expected_stream_arn=stream.arn, expected_consumer=CONSUMER
    )

    assert parsed.sequence_number == record["kinesis"]["sequenceNumber"]
    assert parsed.record["eventSourceARN"] == stream.arn
    assert item_key(parsed.record) == json.dumps({"pk": {"S": "order-1"}})
    assert change_of(parsed.record)[1] == int(record["kinesis"]["sequenceNumber"])


def test_a_poison_kinesis_record_quarantined_then_fixed_is_redriven_exactly_once(
    stream: KinesisStream,  # noqa: F811
    quarantine: tuple[Any, str],
) -> None:
    sqs, queue_url = quarantine
    records = put_changes(stream, ["order-1", "order-2"])
    poison = records[1]["kinesis"]["sequenceNumber"]
    consumer = Consumer(sqs, queue_url, poison={poison})
    consumer({"Records": records}, None)  # the mapping's delivery: the poison is quarantined
    assert len(messages(sqs, queue_url)) == 1
    consumer.fixed = True
    redrive = redrive_of(stream, consumer)

    first = redrive.run(queue_url, "quarantine")
    second = redrive.run(queue_url, "quarantine")

    assert first.ok, first.summary()
    assert (first.records_replayed, first.messages_deleted) == (1, 1)
    assert consumer.applied == sequences(records)
    assert messages(sqs, queue_url) == []
    assert (second.messages_received, second.records_replayed) == (0, 0)


def test_a_quarantined_change_waits_for_an_earlier_change_of_its_item_in_the_bucket(
    stream: KinesisStream,  # noqa: F811
    s3: Any,  # noqa: F811
    quarantine: tuple[Any, str],
) -> None:
    sqs, queue_url = quarantine
    earlier, later = put_changes(stream, ["order-1", "order-1"])
    key = put_batch(stream, [earlier], time.time())
    send_to_quarantine(sqs, queue_url, CONSUMER, later, ValueError("bad total"))
    consumer = Consumer(sqs, queue_url, fixed=True)
    redrive = redrive_of(stream, consumer, on_failure_bucket=BUCKET)

    held = redrive.run(queue_url, "quarantine")

    assert [h.cause for h in held.held] == [RedriveCause.EARLIER_CHANGE_IN_BUCKET]
    assert not held.ok and consumer.applied == []
    assert len(messages(sqs, queue_url)) == 1

    assert redrive.run_bucket(BUCKET).ok  # the earlier change first, then the later one
    assert redrive.run(queue_url, "quarantine").ok
    assert consumer.applied == sequences([earlier, later])
    assert keys(s3) == [] and key
    assert messages(sqs, queue_url) == []


def test_a_bucket_batch_waits_for_an_earlier_change_of_its_item_in_the_quarantine(
    stream: KinesisStream,  # noqa: F811
    s3: Any,  # noqa: F811
    quarantine: tuple[Any, str],
) -> None:
    sqs, queue_url = quarantine
    earlier, later = put_changes(stream, ["order-1", "order-1"])
    send_to_quarantine(sqs, queue_url, CONSUMER, earlier, ValueError("bad total"))
    key = put_batch(stream, [later], time.time())
    consumer = Consumer(sqs, queue_url, fixed=True)

    report = redrive_of(stream, consumer).run_bucket(BUCKET)

    assert [(h.message_id, h.cause) for h in report.held] == [
        (key, RedriveCause.EARLIER_CHANGE_IN_QUARANTINE)
    ]
    assert consumer.applied == [] and keys(s3) == [key]


def test_a_quarantine_message_older_than_the_markers_is_refused_and_kept(
    stream: KinesisStream,  # noqa: F811
    quarantine: tuple[Any, str],
) -> None:
    sqs, queue_url = quarantine
    record = put_changes(stream, ["order-1"])[0]
    long_ago = datetime.fromtimestamp(time.time() - 8 * 24 * HOUR, UTC)
    body = quarantine_message(CONSUMER, record, ValueError("bad"), now=long_ago)
    sqs.send_message(QueueUrl=queue_url, MessageBody=dumps(body))
    consumer = Consumer(sqs, queue_url, fixed=True)

    report = redrive_of(stream, consumer, marker_ttl_seconds=7 * 24 * HOUR).run(
        queue_url, "quarantine"
    )

    assert [r.cause for r in report.refused] == [RedriveCause.OLDER_THAN_MARKERS]
    assert not report.ok and consumer.applied == []
    assert len(messages(sqs, queue_url)) == 1


def test_another_streams_quarantine_message_is_kept(
    stream: KinesisStream,  # noqa: F811
    quarantine: tuple[Any, str],
) -> None:
    sqs, queue_url = quarantine
    record = dict(put_changes(stream, ["order-1"])[0])
    record["eventSourceARN"] = stream.arn.replace("orders-changes", "other")
    send_to_quarantine(sqs, queue_url, CONSUMER, record, ValueError("bad"))
    consumer = Consumer(sqs, queue_url, fixed=True)

    report = redrive_of(stream, consumer).run(queue_url, "quarantine")

    assert [k.cause for k in report.kept] == [RedriveCause.FOREIGN]
    assert consumer.applied == [] and len(messages(sqs, queue_url)) == 1


def test_a_record_still_poison_is_reported_requarantined(
    stream: KinesisStream,  # noqa: F811
    quarantine: tuple[Any, str],
) -> None:
    sqs, queue_url = quarantine
    record = put_changes(stream, ["order-1"])[0]
    poison = record["kinesis"]["sequenceNumber"]
    consumer = Consumer(sqs, queue_url, poison={poison})
    consumer({"Records": [record]}, None)
    time.sleep(0.01)  # the run starts after the first send

    report = redrive_of(stream, consumer).run(queue_url, "quarantine")

    assert [r.sequence_number for r in report.requarantined] == [poison]
    assert not report.ok
    assert len(messages(sqs, queue_url)) == 1  # the new message; the replayed one deleted


def test_a_kinesis_quarantine_run_needs_the_consumers_name(
    stream: KinesisStream,  # noqa: F811
    quarantine: tuple[Any, str],
) -> None:
    sqs, queue_url = quarantine
    redrive = redrive_of(stream, Consumer(sqs, queue_url), consumer_name=None)
    with pytest.raises(RedriveSetupError, match="consumer's name"):
        redrive.run(queue_url, "quarantine")


def test_the_redrive_function_drains_the_kinesis_quarantine(
    stream: KinesisStream,  # noqa: F811
    s3: Any,  # noqa: F811
    quarantine: tuple[Any, str],
) -> None:
    sqs, queue_url = quarantine
    record = put_changes(stream, ["order-1"])[0]
    send_to_quarantine(sqs, queue_url, CONSUMER, record, ValueError("bad total"))
    consumer = Consumer(sqs, queue_url, fixed=True)
    environ = {
        CONSUMER_FUNCTION_NAME_ENV: FUNCTION,
        CONSUMER_NAME_ENV: CONSUMER,
        STREAM_ARN_ENV: stream.arn,
        ON_FAILURE_BUCKET_ENV: BUCKET,
        MAPPING_UUID_ENV: MAPPING,
        MARKER_TTL_ENV: str(MARKERS),
        QUARANTINE_QUEUE_ENV: queue_url,
    }
    made = redrive_handler._redrive(environ)
    assert isinstance(made, Redrive) and made.route is KINESIS
    assert (made.quarantine_queue_url, made.consumer_name) == (queue_url, CONSUMER)

    result = redrive_handler.handler(
        {"source": "quarantine"},
        None,
        redrive=redrive_of(stream, consumer, on_failure_bucket=BUCKET),
        environ=environ,
    )

    assert result["ok"], result
    assert [r["source"] for r in result["reports"]] == ["quarantine"]
    assert result["reports"][0]["records_replayed"] == 1
    assert consumer.applied == sequences([record])
    assert messages(sqs, queue_url) == []


def test_the_command_line_drains_the_kinesis_quarantine(
    stream: KinesisStream,  # noqa: F811
    quarantine: tuple[Any, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sqs, queue_url = quarantine
    record = put_changes(stream, ["order-1"])[0]
    send_to_quarantine(sqs, queue_url, CONSUMER, record, ValueError("bad total"))
    (tmp_path / "cli_kinesis_quarantined.py").write_text(
        "applied = []\n\n\n"
        "def handler(event, context):\n"
        '    applied.extend(r["kinesis"]["sequenceNumber"] for r in event["Records"])\n'
        '    return {"batchItemFailures": []}\n'
    )
    argv = [
        "--quarantine",
        "--queue-url",
        queue_url,
        "--stream-arn",
        stream.arn,
        "--consumer-name",
        CONSUMER,
        "--handler",
        "cli_kinesis_quarantined:handler",
        "--path",
        str(tmp_path),
        "--json",
    ]

    assert main(argv, session=session_for(stream.aws)) == 0, capsys.readouterr().err

    assert json.loads(capsys.readouterr().out)["messages_deleted"] == 1
    assert sys.modules["cli_kinesis_quarantined"].applied == sequences([record])
    assert messages(sqs, queue_url) == []


def test_a_kinesis_record_too_big_for_a_message_is_kept_in_the_bucket_and_redriven_whole(
    stream: KinesisStream,  # noqa: F811
    s3: Any,  # noqa: F811
) -> None:
    """The pointer keeps the Kinesis sequence number and the change's keys and times (not the
    data): it is read, ordered and held like any message, and replayed from the object."""
    sqs = stream.aws.client("sqs")
    queue_url = sqs.create_queue(
        QueueName="orders-quarantine-aws-sized",
        Attributes={"MaximumMessageSize": str(MAX_QUEUE_MESSAGE_BYTES)},
    )["QueueUrl"]
    big = put_changes(stream, ["order-1"], padding=300_000)[0]
    later = put_changes(stream, ["order-1"])[0]
    send_to_quarantine(
        sqs, queue_url, CONSUMER, big, ValueError("bad"), s3_client=s3, bucket=BUCKET
    )
    (pointer,) = [json.loads(m["Body"]) for m in messages(sqs, queue_url)]
    assert "data" not in pointer["record"]["kinesis"]
    assert pointer["record"]["dynamodb"]["Keys"] == {"pk": {"S": "order-1"}}
    put_batch(stream, [later], time.time())
    (key,) = [k for k in keys(s3) if k.startswith("aws/lambda/")]  # the other: the big record
    consumer = Consumer(sqs, queue_url, fixed=True)
    redrive = redrive_of(stream, consumer, on_failure_bucket=BUCKET)

    held = redrive.run_bucket(BUCKET)  # the later change waits for the quarantined one
    assert [(h.message_id, h.cause) for h in held.held] == [
        (key, RedriveCause.EARLIER_CHANGE_IN_QUARANTINE)
    ]
    report = redrive.run(queue_url, "quarantine")

    assert report.ok, report.summary()
    assert consumer.applied == sequences([big])
    assert messages(sqs, queue_url) == []
    assert keys(s3) == [key]  # the record's object deleted; the later batch still waits
    assert redrive.run_bucket(BUCKET).ok
    assert consumer.applied == sequences([big, later])


def test_one_invocation_of_the_redrive_function_replays_both_sources_in_item_order(
    stream: KinesisStream,  # noqa: F811
    s3: Any,  # noqa: F811
    quarantine: tuple[Any, str],
) -> None:
    """``{"source": "all"}``: the bucket batch waits for the quarantine's earlier change of its
    item, the quarantine is replayed, and the second round replays the batch."""
    sqs, queue_url = quarantine
    earlier, later = put_changes(stream, ["order-1", "order-1"])
    send_to_quarantine(sqs, queue_url, CONSUMER, earlier, ValueError("bad total"))
    put_batch(stream, [later], time.time())
    consumer = Consumer(sqs, queue_url, fixed=True)
    environ = {
        CONSUMER_FUNCTION_NAME_ENV: FUNCTION,
        CONSUMER_NAME_ENV: CONSUMER,
        STREAM_ARN_ENV: stream.arn,
        ON_FAILURE_BUCKET_ENV: BUCKET,
        QUARANTINE_QUEUE_ENV: queue_url,
    }
    redrive = redrive_of(stream, consumer, on_failure_bucket=BUCKET)

    result = redrive_handler.handler({}, None, redrive=redrive, environ=environ)

    assert result["ok"], result
    assert [r["source"] for r in result["reports"]] == ["on-failure", "quarantine", "on-failure"]
    assert consumer.applied == sequences([earlier, later])
    assert keys(s3) == [] and messages(sqs, queue_url) == []
