"""The redrive replays a failure with the shard it came from, so the consumer looks its records up
in the ledger lane they would be committed in (issue 38): an on-failure message's
``DDBStreamBatchInfo.shardId``, and the shard a quarantine message kept. A record without one (a
message written before shards were kept) is replayed without it, as it was delivered."""

from __future__ import annotations

import json
from typing import Any

from cdc_consumer import PermanentError
from cdc_consumer.redrive import Source, to_lambda_record
from cdc_consumer.testing import DEFAULT_SHARD_ID, FakeContext, TableStream, stream_event

from tests.cdc_consumer.fixtures import Resources
from tests.cdc_consumer.redrive_world import (
    Consumer,
    Stream,
    make_redrive,
    quarantine_message,
    send_failed_batch,
)


class Recording(Consumer):
    """A consumer that keeps each event's ``shardId`` (absent: None)."""

    def __init__(self) -> None:
        super().__init__()
        self.shards: list[str | None] = []

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.shards.append(event.get("shardId"))
        return super().__call__(event, context)


def test_an_on_failure_batch_is_replayed_with_its_shard(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    send_failed_batch(sqs, queue_url, stream, 3)
    consumer = Recording()
    assert make_redrive(stream, consumer).run(queue_url, Source.ON_FAILURE).ok
    assert consumer.shards == [stream.shard_id]


def test_a_quarantined_record_is_replayed_with_the_shard_its_message_kept(
    stream: Stream, sqs: Any
) -> None:
    stream.write(2)
    quarantine_url = sqs.create_queue(QueueName="orders-quarantine")["QueueUrl"]
    records = [to_lambda_record(r, stream.arn) for r in stream.records()]
    kept = json.loads(quarantine_message(records[0])) | {"shardId": "shardId-kept"}
    sqs.send_message(QueueUrl=quarantine_url, MessageBody=json.dumps(kept))
    sqs.send_message(QueueUrl=quarantine_url, MessageBody=quarantine_message(records[1]))
    consumer = Recording()
    assert make_redrive(stream, consumer).run(quarantine_url, Source.QUARANTINE).ok
    assert consumer.shards == ["shardId-kept", None]  # the older message: as it was delivered


def test_the_runtime_keeps_the_shard_in_the_quarantine_message(resources: Resources) -> None:
    processor = resources.processor()

    @processor.projection
    def refuse(change: Any) -> list[Any]:
        raise PermanentError("never valid")

    record = TableStream().put({"pk": "a"})
    event = stream_event([record], shard_id=DEFAULT_SHARD_ID)
    assert processor.handle(event, FakeContext()) == {"batchItemFailures": [], "state": {}}
    [message] = resources.quarantined()
    assert message["shardId"] == DEFAULT_SHARD_ID
