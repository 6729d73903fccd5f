"""The outbox against moto's server: both items commit together, or neither does."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cdc_consumer.sinks.outbox import (
    Outbox,
    OutboxCancelledError,
    OutboxConflictError,
    OutboxInputError,
)
from cdc_consumer.sinks.outbox_shapes import OUTBOX_KEY_PREFIX
from cdc_consumer.ttl import validate_ttl

from cdc_local.endpoint import LocalEndpoint
from tests.cdc_consumer.fixtures import create_table

TABLE = "orders"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _create_table(ddb: Any, *, sort_key: str | None = None) -> None:
    create_table(ddb, TABLE, sort_key=sort_key)


@pytest.fixture
def ddb(aws: LocalEndpoint) -> Any:
    client = aws.client("dynamodb")
    _create_table(client)
    return client


@pytest.fixture
def outbox(ddb: Any) -> Outbox:
    return Outbox(TABLE, ttl_attribute="expireAt", client=ddb, clock=lambda: NOW)


def _items(ddb: Any) -> dict[str, dict[str, Any]]:
    items = ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"]
    return {item["pk"]["S"]: item for item in items}


def _put_order(order_id: str, status: str, *, only_if_new: bool = False) -> dict[str, Any]:
    put: dict[str, Any] = {
        "TableName": TABLE,
        "Item": {"pk": {"S": f"ORDER#{order_id}"}, "status": {"S": status}},
    }
    if only_if_new:
        put["ConditionExpression"] = "attribute_not_exists(pk)"
    return {"Put": put}


def test_application_item_and_outbox_item_commit_together(ddb: Any, outbox: Outbox) -> None:
    event = outbox.write(
        _put_order("1", "pending", only_if_new=True),
        event_type="OrderPlaced",
        payload={"orderId": "1", "amount": "25.00"},
    )

    items = _items(ddb)
    assert set(items) == {"ORDER#1", f"{OUTBOX_KEY_PREFIX}{event.event_id}"}
    record = items[f"OUTBOX#{event.event_id}"]
    assert record["eventId"] == {"S": event.event_id}
    assert record["eventType"] == {"S": "OrderPlaced"}
    assert json.loads(record["payload"]["S"]) == {"orderId": "1", "amount": "25.00"}
    assert record["occurredAt"] == {"S": "2026-03-01T12:00:00.000+00:00"}
    assert event.key == {"pk": f"OUTBOX#{event.event_id}"}


def test_outbox_ttl_is_epoch_seconds_a_week_ahead(ddb: Any, outbox: Outbox) -> None:
    event = outbox.write(_put_order("1", "pending"), event_type="OrderPlaced", payload={})

    stored = _items(ddb)[f"OUTBOX#{event.event_id}"]["expireAt"]
    assert list(stored) == ["N"]  # a Number, as DynamoDB's TTL requires
    expected = int((NOW + timedelta(days=7)).timestamp())
    assert int(stored["N"]) == event.expires_at == expected
    assert validate_ttl(int(stored["N"]), now=NOW) == expected  # seconds, not milliseconds


def test_a_failed_application_condition_leaves_neither_item(ddb: Any, outbox: Outbox) -> None:
    ddb.put_item(TableName=TABLE, Item={"pk": {"S": "ORDER#1"}, "status": {"S": "pending"}})

    with pytest.raises(OutboxConflictError, match="condition of action 0 failed") as raised:
        outbox.write(
            _put_order("1", "cancelled", only_if_new=True),
            event_type="OrderPlaced",
            payload={"orderId": "1"},
        )

    assert raised.value.failed_actions == [0]
    assert "nothing was written" in str(raised.value)
    assert _items(ddb) == {"ORDER#1": {"pk": {"S": "ORDER#1"}, "status": {"S": "pending"}}}


def test_conditional_update_commits_with_its_event_or_not_at_all(ddb: Any, outbox: Outbox) -> None:
    ddb.put_item(TableName=TABLE, Item={"pk": {"S": "ORDER#1"}, "status": {"S": "pending"}})
    pay = {
        "Update": {
            "TableName": TABLE,
            "Key": {"pk": {"S": "ORDER#1"}},
            "UpdateExpression": "SET #s = :paid",
            "ConditionExpression": "#s = :pending",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {":paid": {"S": "paid"}, ":pending": {"S": "pending"}},
        }
    }

    first = outbox.write(pay, event_type="OrderPaid", payload={"orderId": "1"})
    with pytest.raises(OutboxConflictError):
        outbox.write(pay, event_type="OrderPaid", payload={"orderId": "1"})  # already paid

    items = _items(ddb)
    assert items["ORDER#1"]["status"] == {"S": "paid"}
    assert sorted(pk for pk in items if pk.startswith("OUTBOX#")) == [f"OUTBOX#{first.event_id}"]


def test_a_reused_event_id_is_a_conflict_and_leaves_the_application_item_unwritten(
    ddb: Any, outbox: Outbox
) -> None:
    outbox.write(_put_order("1", "pending"), event_type="OrderPlaced", payload={}, event_id="e-1")

    with pytest.raises(
        OutboxConflictError, match=r"the outbox item failed.*already exists"
    ) as raised:
        outbox.write(
            _put_order("2", "pending"), event_type="OrderPlaced", payload={}, event_id="e-1"
        )

    assert raised.value.failed_actions == [1]
    assert set(_items(ddb)) == {"ORDER#1", "OUTBOX#e-1"}


def test_several_application_actions_and_a_sort_key(aws: LocalEndpoint) -> None:
    ddb = aws.client("dynamodb")
    _create_table(ddb, sort_key="sk")
    outbox = Outbox(TABLE, ttl_attribute="ttl", sort_key="sk", key_prefix="EVT#", client=ddb)
    rows = [
        {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "A"}, "sk": {"S": "1"}}}},
        {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "B"}, "sk": {"S": "1"}}}},
    ]

    event = outbox.write(rows, event_type="Pair", payload='{"n": 2}')

    items = ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"]
    keys = sorted((item["pk"]["S"], item["sk"]["S"]) for item in items)
    expected_key = f"EVT#{event.event_id}"
    assert keys == sorted([("A", "1"), ("B", "1"), (expected_key, expected_key)])


@pytest.mark.parametrize(
    ("actions", "kwargs", "expected"),
    [
        ({"Insert": {}}, {}, r"action 0 has keys \['Insert'\]; each action needs exactly one of"),
        ({"Put": {"Item": {}}}, {}, r"action 0 \(Put\) has no TableName"),
        ([], {}, "give one TransactWriteItems action"),
        ([{"Put": {"TableName": TABLE}}] * 100, {}, "100 actions given.*at most 99"),
        (None, {"event_type": "x" * 129}, "129 characters.*at most 128"),
        (None, {"event_type": " "}, "event_type=' ': give a non-empty string"),
        (None, {"payload": {"amount": 1.5j}}, "not JSON-serializable.*convert Decimal"),
        (None, {"payload": "{not json"}, "payload is a string but not JSON text"),
        (None, {"payload": json.dumps("x" * 300_000)}, "keep it under 245760 bytes"),
    ],
)
def test_bad_arguments_are_rejected_before_anything_is_written(
    ddb: Any, outbox: Outbox, actions: Any, kwargs: dict[str, Any], expected: str
) -> None:
    arguments = {"event_type": "OrderPlaced", "payload": {}} | kwargs
    with pytest.raises(OutboxInputError, match=expected):
        outbox.write(_put_order("1", "x") if actions is None else actions, **arguments)
    assert _items(ddb) == {}


def test_settings_are_checked_and_every_problem_is_listed() -> None:
    with pytest.raises(OutboxInputError) as raised:
        Outbox("", ttl_attribute="payload", partition_key="", client=object())
    message = str(raised.value)
    assert "table_name=''" in message
    assert "partition_key=''" in message
    assert "clash" in message and "payload" in message


class _CancellingClient:
    """A client whose transaction is cancelled by a concurrent transaction (moto never does)."""

    def transact_write_items(self, **request: Any) -> None:
        from botocore.exceptions import ClientError

        count = len(request["TransactItems"])
        reasons = [{"Code": "TransactionConflict", "Message": "conflict"}] + [{"Code": "None"}] * (
            count - 1
        )
        raise ClientError(
            {
                "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
                "CancellationReasons": reasons,
            },
            "TransactWriteItems",
        )


def test_a_transaction_conflict_is_reported_as_retryable_not_as_a_condition_conflict() -> None:
    outbox = Outbox(TABLE, ttl_attribute="expireAt", client=_CancellingClient())
    with pytest.raises(OutboxCancelledError, match=r"action 0: TransactionConflict.*Retrying"):
        outbox.write(_put_order("1", "x"), event_type="OrderPlaced", payload={})


def test_other_dynamodb_errors_propagate_unchanged(aws: LocalEndpoint) -> None:
    from botocore.exceptions import ClientError

    outbox = Outbox("missing", ttl_attribute="expireAt", client=aws.client("dynamodb"))
    with pytest.raises(ClientError) as raised:
        outbox.write(
            {"Put": {"TableName": "missing", "Item": {"pk": {"S": "1"}}}},
            event_type="OrderPlaced",
            payload={},
        )
    assert not isinstance(raised.value, OutboxConflictError)
