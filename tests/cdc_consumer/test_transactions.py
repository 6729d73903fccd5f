"""A record's writes, grouped into transactions and committed: request budget, DynamoDB's limits,
cancellations."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from cdc_consumer import Change, InvalidActionError
from cdc_consumer.plan import TransactionGroup
from cdc_consumer.record_writes import RecordWrites, marker_action
from cdc_consumer.testing import FakeContext, TableStream, stream_event

from tests.cdc_consumer.fixtures import Resources, deliver, error_response, mirror_projection

BATCH_SIZE = 100  # the StreamConsumer construct's default batch size


def write_all(stream: TableStream, count: int, key: Any) -> list[dict[str, Any]]:
    records = [stream.put({"pk": key(index), "n": index}) for index in range(count)]
    assert all(records)
    return records  # type: ignore[return-value]


def in_batches(handler: Any, records: list[dict[str, Any]]) -> None:
    for start in range(0, len(records), BATCH_SIZE):
        assert deliver(handler, records[start : start + BATCH_SIZE])[-1] == {
            "batchItemFailures": []
        }


def transact_calls(resources: Resources) -> list[list[dict[str, Any]]]:
    """Records the TransactItems of every TransactWriteItems call the client makes."""
    calls: list[list[dict[str, Any]]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        calls.append(json.loads(params["body"])["TransactItems"])

    resources.dynamodb.meta.events.register("before-call.dynamodb.TransactWriteItems", record)
    return calls


def item_identities(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    identities = []
    for item in items:
        ((_, body),) = item.items()
        key = body.get("Key") or {"id": body["Item"]["id"]}
        identities.append((body["TableName"], json.dumps(key, sort_keys=True)))
    return identities


@pytest.mark.slow
def test_thousand_records_on_distinct_keys_cost_at_most_five_hundredths_of_a_request_each(
    resources: Resources, count_requests
) -> None:
    processor = resources.processor()
    processor.projection(mirror_projection(resources.view_table))
    stream = TableStream()
    records = write_all(stream, 1000, key=lambda index: f"K{index}")
    requests = count_requests(resources.dynamodb)

    in_batches(processor.handle, records)

    per_record = requests.total / len(records)
    print(f"distinct keys: {requests.total} DynamoDB requests for 1000 records = {per_record}")
    assert per_record <= 0.05
    assert requests.by_operation.keys() == {"TransactWriteItems"}
    view = resources.view()
    assert len(view) == 1000
    assert all(entry["applied"] == 1 for entry in view.values())


def shared_counter(view_table: str, items: int) -> Any:
    """A projection adding to one of ``items`` shared view items, so records collide."""

    def project(change: Change) -> list[dict[str, Any]]:
        number = int(change.new_image["n"]) if change.new_image else 0
        return [
            {
                "Update": {
                    "TableName": view_table,
                    "Key": {"pk": {"S": f"TOTAL#{number % items}"}},
                    "UpdateExpression": "ADD #sum :n, #count :one",
                    "ExpressionAttributeNames": {"#sum": "sum", "#count": "count"},
                    "ExpressionAttributeValues": {":n": {"N": str(number)}, ":one": {"N": "1"}},
                }
            }
        ]

    return project


@pytest.mark.parametrize("view_items", [1, 3])
def test_records_on_the_same_view_item_go_to_successive_transactions_and_stay_exact(
    resources: Resources, count_requests, view_items: int
) -> None:
    processor = resources.processor()
    processor.projection(shared_counter(resources.view_table, view_items))
    records = write_all(TableStream(), 60, key=lambda index: f"K{index}")
    calls = transact_calls(resources)
    requests = count_requests(resources.dynamodb)

    in_batches(processor.handle, records)

    print(f"{view_items} shared view item(s): {requests.total} requests for 60 records")
    for items in calls:
        identities = item_identities(items)
        assert len(identities) == len(set(identities)), "an item twice in one transaction"
    # as few transactions as "no item twice" allows: a new one whenever an item repeats
    assert requests.total == 60 // view_items
    expected = {
        f"TOTAL#{r}": {
            "sum": sum(n for n in range(60) if n % view_items == r),
            "count": sum(1 for n in range(60) if n % view_items == r),
        }
        for r in range(view_items)
    }
    assert {pk: {k: int(v) for k, v in e.items()} for pk, e in resources.view().items()} == {
        pk: {k: v for k, v in e.items() if v} for pk, e in expected.items()
    }


def test_a_transaction_never_exceeds_one_hundred_actions(resources: Resources) -> None:
    processor = resources.processor()

    @processor.projection
    def three_items(change: Change) -> list[dict[str, Any]]:
        return [
            {
                "Update": {
                    "TableName": resources.view_table,
                    "Key": {"pk": {"S": f"{change.keys['pk']}#{part}"}},
                    "UpdateExpression": "ADD #c :one",
                    "ExpressionAttributeNames": {"#c": "c"},
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            }
            for part in range(3)
        ]

    records = write_all(TableStream(), 60, key=lambda index: f"K{index}")
    calls = transact_calls(resources)

    assert processor.handle(stream_event(records), FakeContext()) == {"batchItemFailures": []}

    assert [len(items) for items in calls] == [100, 100, 40]  # 4 items per record
    assert len(resources.view()) == 180


def test_puts_on_one_item_of_an_unknown_key_schema_are_split_after_dynamodb_refuses(
    resources: Resources, faults
) -> None:
    """A Put's key is unknown to the runtime; DynamoDB's refusal makes it commit one by one."""
    processor = resources.processor()

    @processor.projection
    def latest(change: Change) -> list[dict[str, Any]]:
        return [
            {
                "Put": {
                    "TableName": resources.view_table,
                    "Item": {"pk": {"S": "LATEST"}, "n": {"N": str(change.new_image["n"])}},
                }
            }
        ]

    def refuse_repeated_items(body: dict[str, Any]) -> Any:
        puts = [
            i["Put"]["Item"]["pk"]["S"] for i in body["TransactItems"] if "pk" in i["Put"]["Item"]
        ]
        if len(puts) != len(set(puts)):
            return error_response(
                "ValidationException",
                "Transaction request cannot include multiple operations on one item",
            )
        return None

    faults(resources.dynamodb).on("TransactWriteItems", refuse_repeated_items)
    records = write_all(TableStream(), 3, key=lambda index: f"K{index}")

    assert processor.handle(stream_event(records), FakeContext()) == {"batchItemFailures": []}
    assert resources.view() == {"LATEST": {"n": 2}}
    assert len(resources.markers()) == 3


def test_a_record_whose_actions_botocore_refuses_is_poison_and_the_others_commit(
    resources: Resources,
) -> None:
    """botocore refuses a resource-shaped value (``"S"`` tag missing) before sending: that is
    deterministic, so the record is quarantined, and the records beside it still commit."""
    processor = resources.processor()
    processor.projection(mirror_projection(resources.view_table))
    records = write_all(TableStream(), 3, key=lambda index: f"K{index}")
    bad = records[1]["eventID"]

    @processor.projection
    def resource_shaped(change: Change) -> list[dict[str, Any]]:
        if change.event_id != bad:
            return []
        item = {"pk": "RAW", "n": 1}  # boto3 resource shape, not client shape
        return [{"Put": {"TableName": resources.view_table, "Item": item}}]

    assert processor.handle(stream_event(records), FakeContext()) == {"batchItemFailures": []}

    assert sorted(resources.view()) == ["pk=K0", "pk=K2"]
    assert len(resources.markers()) == 2
    (message,) = resources.quarantined()
    assert message["record"]["eventID"] == bad
    assert message["error"]["type"] == "RejectedByDynamoDBError"


def test_cancellation_without_reasons_fails_the_first_record_of_the_transaction(
    resources: Resources, faults
) -> None:
    processor = resources.processor()
    processor.projection(mirror_projection(resources.view_table))
    records = write_all(TableStream(), 3, key=lambda index: f"K{index}")
    answered = Counter[str]()

    def cancel_once(body: dict[str, Any]) -> Any:
        if answered["cancel"]:
            return None
        answered["cancel"] += 1
        return error_response("TransactionCanceledException", "cancelled")  # no reasons

    faults(resources.dynamodb).on("TransactWriteItems", cancel_once)

    first = processor.handle(stream_event(records), FakeContext())
    assert first == {
        "batchItemFailures": [{"itemIdentifier": records[0]["dynamodb"]["SequenceNumber"]}]
    }
    assert resources.view() == {}


def test_a_duplicate_before_a_failing_record_commits_neither_the_failing_record_nor_after(
    resources: Resources, faults
) -> None:
    """One cancellation names record 0's marker as existing (a duplicate) and record 1 as
    conflicting: the batch reports record 1, and records 1 and 2 are applied by the retry."""
    processor = resources.processor()
    processor.projection(mirror_projection(resources.view_table))
    records = write_all(TableStream(), 3, key=lambda index: f"K{index}")
    processor.handle(stream_event(records[:1]), FakeContext())
    answered = Counter[str]()

    def cancel_once(body: dict[str, Any]) -> Any:
        if answered["cancel"] or len(body["TransactItems"]) < 6:
            return None
        answered["cancel"] += 1
        reasons: list[dict[str, Any]] = [{"Code": "None"} for _ in body["TransactItems"]]
        reasons[0] = {"Code": "ConditionalCheckFailed"}  # record 0's marker: applied before
        reasons[2] = {"Code": "TransactionConflict"}  # record 1's marker
        return error_response(
            "TransactionCanceledException", "cancelled", CancellationReasons=reasons
        )

    faults(resources.dynamodb).on("TransactWriteItems", cancel_once)
    first = processor.handle(stream_event(records), FakeContext())
    assert first == {
        "batchItemFailures": [{"itemIdentifier": records[1]["dynamodb"]["SequenceNumber"]}]
    }
    assert set(resources.view()) == {"pk=K0"}
    assert processor.handle(stream_event(records[1:]), FakeContext()) == {"batchItemFailures": []}
    assert set(resources.view()) == {"pk=K0", "pk=K1", "pk=K2"}


# --- validation of a projection's actions --------------------------------------------------

MARKER = marker_action("idempotency", "c#e", 1)


def update(pk: str) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": "view",
            "Key": {"pk": {"S": pk}},
            "UpdateExpression": "ADD #c :one",
            "ExpressionAttributeNames": {"#c": "c"},
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
    }


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        ("Put", "must return a list of TransactWriteItems actions, got str"),
        ([update(str(i)) for i in range(100)], "returned 100 actions for one record; at most 99"),
        ([update("a"), update("a")], "touches an item an earlier action of the same record"),
        ([{"Upsert": {}}], "action 0 is 'Upsert'"),
        ([{"Put": {"TableName": "view"}}], r"action 0 \(Put\) needs TableName \(str\) and Item"),
        (
            [{"Update": {"TableName": "v", "Key": {}}}],
            r"action 0 \(Update\) needs UpdateExpression",
        ),
        (
            [{"Put": {"TableName": "v", "Item": {"pk": {"S": "x" * 4_200_000}}}}],
            "take .* bytes; a transaction holds at most 4194304",
        ),
    ],
)
def test_invalid_actions_name_the_problem(actions: Any, message: str) -> None:
    with pytest.raises(InvalidActionError, match=message):
        RecordWrites.build(0, MARKER, actions, "idempotency")


def test_a_group_refuses_a_record_touching_an_item_it_holds() -> None:
    group = TransactionGroup()
    group.add(
        RecordWrites.build(0, marker_action("idempotency", "c#1", 1), [update("a")], "idempotency")
    )
    assert not group.fits(
        RecordWrites.build(1, marker_action("idempotency", "c#2", 1), [update("a")], "idempotency")
    )
    assert group.fits(
        RecordWrites.build(1, marker_action("idempotency", "c#2", 1), [update("b")], "idempotency")
    )
    # the same marker twice (one record delivered twice in a batch) is an item twice too
    assert not group.fits(
        RecordWrites.build(2, marker_action("idempotency", "c#1", 1), [update("c")], "idempotency")
    )


def test_a_record_without_actions_writes_nothing() -> None:
    writes = RecordWrites.build(0, MARKER, [], "idempotency")
    assert writes.items == [] and writes.size == 0
