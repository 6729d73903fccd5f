"""Stream retention on a clock the test controls (cdc_local.retention)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from cdc_local.endpoint import LocalEndpoint
from cdc_local.retention import StreamRetention
from tests.cdc_consumer.fixtures import create_table


def iterator(streams: Any, arn: str, shard: str, kind: str, sequence: str | None = None) -> str:
    extra = {"SequenceNumber": sequence} if sequence else {}
    return streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard, ShardIteratorType=kind, **extra
    )["ShardIterator"]


def test_records_older_than_the_retention_are_trimmed_as_dynamodb_trims_them(
    aws: LocalEndpoint,
) -> None:
    ddb, streams = aws.client("dynamodb"), aws.client("dynamodbstreams")
    create_table(ddb, "t", stream=True)
    arn = ddb.describe_table(TableName="t")["Table"]["LatestStreamArn"]
    (shard,) = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    shard_id = shard["ShardId"]
    for number in range(3):
        ddb.put_item(TableName="t", Item={"pk": {"S": f"old-{number}"}})
    old = streams.get_records(ShardIterator=iterator(streams, arn, shard_id, "TRIM_HORIZON"))
    old_numbers = [r["dynamodb"]["SequenceNumber"] for r in old["Records"]]
    created = old["Records"][-1]["dynamodb"]["ApproximateCreationDateTime"].timestamp()
    now = [created + 10]
    retention = StreamRetention(retention_seconds=3600, clock=lambda: now[0])
    stale_iterator = iterator(streams, arn, shard_id, "AT_SEQUENCE_NUMBER", old_numbers[1])

    assert retention.trim() == 0  # 10 s old: kept
    now[0] = created + 3601
    assert retention.trim() == 3
    ddb.put_item(TableName="t", Item={"pk": {"S": "new"}})

    for kind in ("AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER"):
        with pytest.raises(ClientError) as error:
            iterator(streams, arn, shard_id, kind, old_numbers[0])
        assert error.value.response["Error"]["Code"] == "TrimmedDataAccessException"
    with pytest.raises(ClientError, match="TrimmedDataAccessException"):
        streams.get_records(ShardIterator=stale_iterator)
    fresh = streams.get_records(ShardIterator=iterator(streams, arn, shard_id, "TRIM_HORIZON"))
    assert [r["dynamodb"]["Keys"]["pk"]["S"] for r in fresh["Records"]] == ["new"]
    assert int(fresh["Records"][0]["dynamodb"]["SequenceNumber"]) == int(old_numbers[-1]) + 1


def test_records_are_stamped_on_the_pipeline_s_clock(
    pipeline_for: Any,
) -> None:
    """A change made eight days later on the pipeline's clock is a new record, not an
    eight-day-old one: a mapping whose maximum record age is 60 s delivers it (moto stamps
    records with the wall clock; found by tests/cdc_local/test_model.py)."""
    import time

    from tests.cdc_local.helpers import put

    offset = [0.0]
    pipeline = pipeline_for("AgeToS3", clock=lambda: time.time() + offset[0])
    offset[0] = 8 * 24 * 3600.0
    pipeline.trim_streams()
    put(pipeline, "late")
    pipeline.drain()
    assert pipeline.counters.records_expired == 0
    assert pipeline.counters.records_succeeded == 1
