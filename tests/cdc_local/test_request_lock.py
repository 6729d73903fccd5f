"""The local endpoint serves one DynamoDB request at a time (cdc_local.request_lock), as
DynamoDB's isolation would have it: concurrent writes of one item all land, and a cancelled
transaction's rollback never undoes a write another client made while it ran. (moto's threaded
server alone lost both: the backfill benchmark's segments, running at once, left views short.)"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from cdc_local import moto_patches, request_lock
from cdc_local.endpoint import LocalEndpoint
from tests.cdc_consumer.fixtures import create_table


def _table(aws: LocalEndpoint) -> str:
    name = f"lock-{uuid.uuid4().hex[:8]}"
    create_table(aws.client("dynamodb"), name, stream=True)
    return name


def test_the_endpoint_serializes_dynamodb_requests(aws: LocalEndpoint) -> None:
    assert request_lock.is_applied()


def test_concurrent_adds_of_one_item_all_land(aws: LocalEndpoint) -> None:
    table = _table(aws)

    def add(times: int) -> None:
        client = aws.client("dynamodb")
        for _ in range(times):
            client.update_item(
                TableName=table,
                Key={"pk": {"S": "total"}},
                UpdateExpression="ADD n :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )

    threads = [threading.Thread(target=add, args=(100,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    item = aws.client("dynamodb").get_item(TableName=table, Key={"pk": {"S": "total"}})["Item"]
    assert item["n"] == {"N": "400"}


def test_a_cancelled_transaction_keeps_a_write_made_while_it_ran(
    aws: LocalEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(aws)
    ddb = aws.client("dynamodb")
    ddb.put_item(TableName=table, Item={"pk": {"S": "a"}, "v": {"N": "1"}})
    taken = threading.Event()
    take = moto_patches._Snapshot.take

    def slow_take(cls: Any, backend: Any, actions: Any) -> Any:
        snapshot = take(backend, actions)  # the items as they were, put back on failure
        taken.set()
        time.sleep(0.5)  # room for another client's write, were it let in
        return snapshot

    monkeypatch.setattr(moto_patches._Snapshot, "take", classmethod(slow_take))
    errors: list[str] = []

    def cancelled() -> None:
        try:
            aws.client("dynamodb").transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": table,
                            "Key": {"pk": {"S": "a"}},
                            "UpdateExpression": "SET v = :two",
                            "ExpressionAttributeValues": {":two": {"N": "2"}},
                        }
                    },
                    {
                        "ConditionCheck": {
                            "TableName": table,
                            "Key": {"pk": {"S": "missing"}},
                            "ConditionExpression": "attribute_exists(pk)",
                        }
                    },
                ]
            )
        except ClientError as error:
            errors.append(error.response["Error"]["Code"])

    thread = threading.Thread(target=cancelled)
    thread.start()
    assert taken.wait(10)
    ddb.update_item(
        TableName=table,
        Key={"pk": {"S": "a"}},
        UpdateExpression="SET w = :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    thread.join()

    assert errors == ["TransactionCanceledException"]
    item = ddb.get_item(TableName=table, Key={"pk": {"S": "a"}})["Item"]
    assert item == {"pk": {"S": "a"}, "v": {"N": "1"}, "w": {"N": "1"}}
