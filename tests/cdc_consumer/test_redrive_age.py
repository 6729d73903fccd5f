"""Age is checked, not assumed (issue 30): a redrive refuses, with the reason and nothing
deleted, an object or message older than the consumer's markers cover, measured from the
failure's own times (its records' write times, the invocation record's timestamp, the quarantine
message's), not from when the object or message was last written."""

from __future__ import annotations

import json
import time
from typing import Any

from cdc_consumer import redrive_handler
from cdc_consumer.redrive import Source
from cdc_consumer.redrive_shapes import RedriveCause

from tests.cdc_consumer.redrive_world import (
    Consumer,
    Stream,
    make_redrive,
    quarantine_message,
    queue_bodies,
    send_failed_batch,
)
from tests.cdc_consumer.test_redrive_s3 import (
    BUCKET,
    DAY,
    Clock,
    keys,
    lambda_records,
    put_batch,
    s3,
)

__all__ = ["s3"]  # the fixture, used by name

MARKER_TTL = 29 * DAY + 3600


def later(days: float) -> Clock:
    clock = Clock()
    clock.now = time.time() + days * DAY
    return clock


def test_an_object_older_than_the_markers_is_refused_and_kept(stream: Stream, s3: Any) -> None:
    stream.write(2)
    key = put_batch(stream, lambda_records(stream), at=time.time())
    consumer = Consumer()
    redrive = make_redrive(
        stream, consumer, s3_client=s3, marker_ttl_seconds=MARKER_TTL, clock=later(30)
    )

    report = redrive.run_bucket(BUCKET)

    (refused,) = report.refused
    assert refused.message_id == key and refused.cause is RedriveCause.OLDER_THAN_MARKERS
    assert "markers live" in refused.reason and not report.ok
    assert consumer.calls == 0 and keys(s3) == [key]
    assert "REFUSED" in report.summary()


def test_the_age_is_the_failures_own_timestamp_not_the_objects(stream: Stream, s3: Any) -> None:
    """The object was (re)written just now, but the invocation record says the batch failed 40
    days ago: refused."""
    stream.write(1)
    key = put_batch(stream, lambda_records(stream), at=time.time() - 40 * DAY)
    consumer = Consumer()

    report = make_redrive(stream, consumer, s3_client=s3, marker_ttl_seconds=MARKER_TTL).run_bucket(
        BUCKET
    )

    assert [r.message_id for r in report.refused] == [key] and consumer.calls == 0
    assert keys(s3) == [key]


def test_an_object_the_markers_still_cover_is_replayed(stream: Stream, s3: Any) -> None:
    stream.write(2)
    put_batch(stream, lambda_records(stream), at=time.time())
    consumer = Consumer()
    redrive = make_redrive(
        stream, consumer, s3_client=s3, marker_ttl_seconds=MARKER_TTL, clock=later(28)
    )

    report = redrive.run_bucket(BUCKET)

    assert report.ok and len(consumer.applied) == 2 and keys(s3) == []


def test_a_queue_message_older_than_the_markers_is_refused_and_kept(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    send_failed_batch(sqs, queue_url, stream, 2)
    consumer = Consumer()
    redrive = make_redrive(stream, consumer, marker_ttl_seconds=MARKER_TTL, clock=later(30))

    report = redrive.run(queue_url)

    assert [r.cause for r in report.refused] == [RedriveCause.OLDER_THAN_MARKERS]
    assert consumer.calls == 0 and len(queue_bodies(sqs, queue_url)) == 1 and not report.ok


def test_a_quarantined_record_older_than_the_markers_is_refused_and_kept(
    stream: Stream, sqs: Any
) -> None:
    url = sqs.create_queue(QueueName="orders-quarantine")["QueueUrl"]
    stream.write(1)
    (record,) = lambda_records(stream)
    sqs.send_message(QueueUrl=url, MessageBody=quarantine_message(record))
    consumer = Consumer()
    redrive = make_redrive(stream, consumer, marker_ttl_seconds=MARKER_TTL, clock=later(30))

    report = redrive.run(url, Source.QUARANTINE)

    assert len(report.refused) == 1 and consumer.calls == 0
    assert queue_bodies(sqs, url) and not report.ok


def test_the_redrive_function_reads_the_marker_lifetime_from_its_environment(
    stream: Stream, s3: Any
) -> None:
    stream.write(1)
    key = put_batch(stream, lambda_records(stream), at=time.time() - 40 * DAY)
    consumer = Consumer()
    environ = {
        "ON_FAILURE_BUCKET_NAME": BUCKET,
        "CDC_CONSUMER_NAME": "orders",
        "CONSUMER_FUNCTION_NAME": "orders-consumer",
        "STREAM_ARN": stream.arn,
        "CDC_MARKER_TTL_SECONDS": str(MARKER_TTL),
    }
    redrive = redrive_handler._redrive(environ)
    assert redrive.marker_ttl_seconds == MARKER_TTL

    result = redrive_handler.handler(
        {},
        None,
        redrive=make_redrive(stream, consumer, s3_client=s3, marker_ttl_seconds=MARKER_TTL),
        environ=environ,
    )

    assert not result["ok"] and result["refusedMessages"] == 1
    assert consumer.calls == 0 and keys(s3) == [key]
    assert json.loads(json.dumps(result))["reports"][0]["refused"][0]["cause"] == (
        "older-than-markers"
    )
