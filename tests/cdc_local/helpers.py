"""Small helpers shared by the local pipeline's tests."""

from __future__ import annotations

import json
from typing import Any

from cdc_local.runner import LocalPipeline
from tests.cdc_local import recorder


def put(
    pipeline: LocalPipeline, pk: str, sk: str = "0", table: str = "Items", **attributes: Any
) -> None:
    """Put an item with string attributes (numbers for int values) into the stack's table."""
    item: dict[str, Any] = {"pk": {"S": pk}, "sk": {"S": sk}}
    for name, value in attributes.items():
        item[name] = {"N": str(value)} if isinstance(value, int | float) else {"S": str(value)}
    pipeline.client("dynamodb").put_item(TableName=pipeline.table_name(table), Item=item)


def delete(pipeline: LocalPipeline, pk: str, sk: str = "0", table: str = "Items") -> None:
    pipeline.client("dynamodb").delete_item(
        TableName=pipeline.table_name(table), Key={"pk": {"S": pk}, "sk": {"S": sk}}
    )


def batches(probe: str = "probe") -> list[list[str]]:
    """The sequence numbers of each invocation of the probe, in invocation order."""
    return [i.sequence_numbers for i in recorder.INVOCATIONS if i.probe == probe]


def keys_of(invocation: recorder.Invocation) -> list[str]:
    return [r["dynamodb"]["Keys"]["pk"]["S"] for r in invocation.event["Records"]]


def stream_sequence_numbers(pipeline: LocalPipeline, table: str = "Items") -> list[str]:
    """Every sequence number on the table's stream, in stream order."""
    streams = pipeline.client("dynamodbstreams")
    arn = pipeline.client("dynamodb").describe_table(TableName=pipeline.table_name(table))["Table"][
        "LatestStreamArn"
    ]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    numbers: list[str] = []
    while True:
        response = streams.get_records(ShardIterator=iterator)
        if not response["Records"]:
            return numbers
        numbers += [r["dynamodb"]["SequenceNumber"] for r in response["Records"]]
        iterator = response["NextShardIterator"]


def queue_messages(pipeline: LocalPipeline, queue: str) -> list[dict[str, Any]]:
    sqs = pipeline.client("sqs")
    url = pipeline.queue_url(queue)
    messages: list[dict[str, Any]] = []
    while True:
        received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not received:
            return messages
        messages += [json.loads(m["Body"]) for m in received]
