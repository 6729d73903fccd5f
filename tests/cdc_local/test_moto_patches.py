"""moto's TransactWriteItems with the local pipeline's snapshot patch keeps DynamoDB's
all-or-nothing semantics: a cancelled transaction leaves no item and no stream record behind."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from cdc_local.endpoint import LocalEndpoint
from tests.cdc_consumer.fixtures import create_table


def make_table(ddb, name: str, range_key: bool = False) -> None:
    create_table(ddb, name, sort_key="sk" if range_key else None, stream=True)


def stream_events(aws: LocalEndpoint, table: str) -> list[str]:
    ddb, streams = aws.client("dynamodb"), aws.client("dynamodbstreams")
    arn = ddb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    return [r["eventName"] for r in streams.get_records(ShardIterator=iterator)["Records"]]


def items(ddb, table: str) -> dict[str, dict]:
    return {i["pk"]["S"]: i for i in ddb.scan(TableName=table)["Items"]}


def test_a_cancelled_transaction_leaves_items_and_stream_untouched(aws: LocalEndpoint) -> None:
    ddb = aws.client("dynamodb")
    make_table(ddb, "t")
    ddb.put_item(TableName="t", Item={"pk": {"S": "a"}, "v": {"N": "1"}})
    with pytest.raises(ClientError, match="TransactionCanceled"):
        ddb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": "t",
                        "Key": {"pk": {"S": "a"}},
                        "UpdateExpression": "SET v = :two",
                        "ExpressionAttributeValues": {":two": {"N": "2"}},
                    }
                },
                {"Put": {"TableName": "t", "Item": {"pk": {"S": "b"}}}},
                {"Delete": {"TableName": "t", "Key": {"pk": {"S": "a2"}}}},
                {
                    "ConditionCheck": {
                        "TableName": "t",
                        "Key": {"pk": {"S": "c"}},
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
            ]
        )
    assert items(ddb, "t") == {"a": {"pk": {"S": "a"}, "v": {"N": "1"}}}
    assert stream_events(aws, "t") == ["INSERT"]


def test_a_successful_transaction_applies_every_write_and_streams_it(aws: LocalEndpoint) -> None:
    ddb = aws.client("dynamodb")
    make_table(ddb, "t")
    ddb.put_item(TableName="t", Item={"pk": {"S": "a"}, "v": {"N": "1"}})
    ddb.transact_write_items(
        TransactItems=[
            {
                "Update": {
                    "TableName": "t",
                    "Key": {"pk": {"S": "a"}},
                    "UpdateExpression": "ADD v :one",
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            },
            {
                "Put": {
                    "TableName": "t",
                    "Item": {"pk": {"S": "b"}},
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
        ]
    )
    assert items(ddb, "t")["a"]["v"] == {"N": "2"} and "b" in items(ddb, "t")
    assert stream_events(aws, "t") == ["INSERT", "MODIFY", "INSERT"]


def test_a_rejected_transaction_on_a_range_key_table_writes_nothing(aws: LocalEndpoint) -> None:
    ddb = aws.client("dynamodb")
    make_table(ddb, "r", range_key=True)
    key = {"pk": {"S": "a"}, "sk": {"S": "1"}}
    with pytest.raises(ClientError):
        ddb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "r", "Item": key}},
                {"Put": {"TableName": "r", "Item": key}},  # the same item twice: rejected
            ]
        )
    assert ddb.scan(TableName="r")["Items"] == []
    assert stream_events(aws, "r") == []


def test_the_local_endpoint_applies_the_patch_once(aws: LocalEndpoint) -> None:
    from moto.dynamodb import models

    from cdc_local import moto_patches

    assert moto_patches.is_applied()
    patched = models.DynamoDBBackend.transact_write_items
    moto_patches.apply()
    assert models.DynamoDBBackend.transact_write_items is patched
