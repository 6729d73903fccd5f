"""bench/conflicts.py: which writes DynamoDB's TransactionConflict model cancels, and its answer."""

from __future__ import annotations

from bench.conflicts import InFlight, KeySchemas, cancelled, item_key, refused

SCHEMAS = KeySchemas({"view": ("pk",), "ledger": ("id", "seq")})


def _update(table: str, key: dict[str, dict[str, str]]) -> dict[str, object]:
    return {"Update": {"TableName": table, "Key": key, "UpdateExpression": "SET a = :a"}}


def test_items_are_found_in_puts_by_the_tables_key_and_in_the_other_actions_by_their_key() -> None:
    entry = {"id": {"S": "c#s"}, "seq": {"S": "0031"}, "records": {"B": b"\x01"}}
    params = {
        "TransactItems": [
            {"Put": {"TableName": "ledger", "Item": entry}},
            _update("view", {"pk": {"S": "CUSTOMER#1"}}),
        ]
    }
    assert SCHEMAS.written("TransactWriteItems", params) == [
        item_key("ledger", {"id": {"S": "c#s"}, "seq": {"S": "0031"}}),
        item_key("view", {"pk": {"S": "CUSTOMER#1"}}),
    ]
    single = {"TableName": "view", "Key": {"pk": {"S": "CUSTOMER#1"}}}
    assert SCHEMAS.written("UpdateItem", single) == [item_key("view", single["Key"])]
    assert SCHEMAS.written("Query", {"TableName": "view"}) == []


def test_an_item_is_held_by_another_shards_transaction_for_its_round_trip_only() -> None:
    head = item_key("ledger", {"id": {"S": "c#s"}, "seq": {"S": "~head"}})
    view = item_key("view", {"pk": {"S": "CUSTOMER#1"}})
    in_flight = InFlight()
    in_flight.hold([head], start=1.000, end=1.030, shard=0)

    assert in_flight.conflicting([view, head], at=1.000, shard=1) == [1]
    assert in_flight.conflicting([view, head], at=1.029, shard=1) == [1]
    assert in_flight.conflicting([head], at=1.010, shard=0) == []  # its own
    assert in_flight.conflicting([view, head], at=1.030, shard=1) == []  # the answer came


def test_the_answers_name_the_conflicting_actions_as_dynamodb_does() -> None:
    answer = cancelled(3, [2])
    assert answer["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in answer["CancellationReasons"]] == [
        "None",
        "None",
        "TransactionConflict",
    ]
    assert "[None, None, TransactionConflict]" in answer["Error"]["Message"]
    assert refused()["Error"]["Code"] == "TransactionConflictException"
