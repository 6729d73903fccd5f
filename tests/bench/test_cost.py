"""bench/cost.py: item sizes, request units and the dollar summary (no timing involved)."""

from __future__ import annotations

from typing import Any

import pytest
from cdc_consumer.defaults import ALONE_WRITE_THREADS
from cdc_consumer.plan import writes_alone
from cdc_consumer.record_writes import RecordWrites
from cdc_consumer.service_limits import MAX_TRANSACTION_ACTIONS
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import cost, esm


def test_item_size_follows_dynamodbs_rules() -> None:
    # name bytes + value bytes; numbers ~1 byte per 2 significant digits + 1
    assert cost.item_size({"pk": {"S": "CUSTOMER#1"}}) == 2 + 10
    assert cost.item_size({"n": {"N": "12345"}}) == 1 + 4
    assert cost.item_size({"f": {"BOOL": True}, "z": {"NULL": True}}) == 4
    assert cost.item_size({"m": {"M": {"a": {"S": "xy"}}}}) == 1 + 3 + 1 + 1 + 2
    assert cost.item_size({"l": {"L": [{"S": "ab"}]}}) == 1 + 3 + 1 + 2


@pytest.mark.parametrize(
    ("size", "transactional", "units"),
    [(10, False, 1), (1024, False, 1), (1025, False, 2), (10, True, 2), (3000, True, 6)],
)
def test_write_units(size: int, transactional: bool, units: int) -> None:
    assert cost.write_units(size, transactional) == units


def _put(table: str, marker: str) -> dict[str, Any]:
    return {"Put": {"TableName": table, "Item": {"id": {"S": marker}}}}


def _add(key: str) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": "view",
            "Key": {"pk": {"S": key}},
            "UpdateExpression": "ADD #a :v",
            "ExpressionAttributeNames": {"#a": "count_paid"},
            "ExpressionAttributeValues": {":v": {"N": "1"}},
        }
    }


def test_a_cancelled_transaction_is_charged_and_its_failed_markers_counted() -> None:
    meter = cost.CostMeter()
    items = [_put("idem", "c#1"), _add("a"), _put("idem", "c#2"), _add("b")]
    cancelled = {
        "Error": {"Code": "TransactionCanceledException"},
        "CancellationReasons": [
            {"Code": "ConditionalCheckFailed"},
            {"Code": "None"},
            {"Code": "None"},
            {"Code": "None"},
        ],
    }
    meter.record("dynamodb", "TransactWriteItems", {"TransactItems": items}, cancelled)
    meter.record("dynamodb", "TransactWriteItems", {"TransactItems": items[2:]}, {})
    assert meter.wru == 8 + 4
    assert meter.failed_condition_wru == 2
    assert meter.transactional_wru == meter.wru
    assert meter.requests["dynamodb.TransactWriteItems"] == 2


def test_standard_writes_reads_and_throttles() -> None:
    meter = cost.CostMeter()
    put = {"TableName": "t", "Item": {"id": {"S": "x"}}}
    meter.record("dynamodb", "PutItem", put, {})
    failed = {"Error": {"Code": "ConditionalCheckFailedException"}}
    meter.record("dynamodb", "PutItem", put, failed)
    throttled = {"Error": {"Code": "ProvisionedThroughputExceededException"}}
    meter.record("dynamodb", "UpdateItem", _add("a")["Update"], throttled)
    meter.record("dynamodb", "GetItem", {"TableName": "t"}, {"Item": {"id": {"S": "x"}}})
    meter.record("sqs", "SendMessage", {}, {})
    assert (meter.wru, meter.failed_condition_wru, meter.rru) == (2, 1, 0.5)
    assert meter.latency_ms == pytest.approx(4 * cost.SINGLE_ITEM_MS + cost.SQS_MS)


def test_a_batch_get_is_read_per_item_returned_and_timed_by_the_keys_it_names() -> None:
    meter = cost.CostMeter()
    params = {
        "RequestItems": {
            "ledger": {"Keys": [{"id": {"S": "a"}}, {"id": {"S": "b"}}], "ConsistentRead": True},
            "idem": {"Keys": [{"id": {"S": "c"}}, {"id": {"S": "d"}}, {"id": {"S": "e"}}]},
        }
    }
    found = {"Responses": {"ledger": [{"id": {"S": "a"}}], "idem": [{"id": {"S": "c"}}]}}
    meter.record("dynamodb", "BatchGetItem", params, found)
    assert cost.request_items("BatchGetItem", params) == 5
    assert meter.rru == 1 + 0.5  # one consistent read, one eventually consistent
    assert meter.latency_ms == pytest.approx(
        cost.modelled_latency_ms("dynamodb", "BatchGetItem", 5)
    )


def test_summary_in_dollars() -> None:
    meter = cost.CostMeter(wru=4_000_000, latency_ms=0.0)
    summary = cost.summarise(
        meter, records=1_000_000, invocations=10_000, cpu_seconds=0.0, largest_item_stored=100
    )
    assert summary["wru_per_record"] == 4
    assert summary["usd_per_million_changes_by_part"]["dynamodb_writes"] == pytest.approx(2.5)
    assert summary["usd_per_million_changes_by_part"]["lambda_invocations"] == pytest.approx(0.002)


def test_transaction_latency_model_matches_its_source() -> None:
    assert cost.modelled_latency_ms("dynamodb", "TransactWriteItems", 5) == 25.3
    assert cost.modelled_latency_ms("dynamodb", "TransactWriteItems", 25) == pytest.approx(32.1)
    assert cost.modelled_latency_ms("dynamodb", "PutItem", 1) == 7.55


def test_function_memory_and_architecture_are_the_stream_consumers_defaults() -> None:
    from cdc_constructs import defaults

    assert defaults.MEMORY_SIZE_MB == cost.MEMORY_MB
    assert str(defaults.ARCHITECTURE.name) == cost.ARCHITECTURE
    assert defaults.TUMBLING_WINDOW_SECONDS == esm.WINDOW_SECONDS


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=400_000), min_size=1, max_size=99),
    sharing=st.integers(min_value=1, max_value=MAX_TRANSACTION_ACTIONS),
)
def test_the_plan_writes_alone_where_the_cost_model_says_it_is_cheaper(
    sizes: list[int], sharing: int
) -> None:
    """The write plan (cdc_consumer.plan) writes a self-guarding record alone without pricing
    it. Priced as it once was, write units first, then requests, then Lambda time: ``sizes``
    the record's items in bytes, ``sharing`` the items of the transaction it would share.
    Alone, an item costs 1 write unit per KB against 2 in a transaction, so the first field
    always decides for writing alone, whatever the requests and time after it."""
    items = [
        {"Put": {"TableName": "view", "Item": {"pk": {"S": str(n)}}}} for n in range(len(sizes))
    ]
    writes = RecordWrites(0, items, [None] * len(items), frozenset(), sum(sizes), alone=True)
    share = len(sizes) / sharing if sharing >= len(sizes) else 1.0
    alone = (
        sum(cost.write_units(size, transactional=False) for size in sizes),
        len(sizes),
        cost.SINGLE_ITEM_MS * len(sizes) / ALONE_WRITE_THREADS,
    )
    in_transaction = (
        sum(cost.write_units(size, transactional=True) for size in sizes),
        share,
        cost.modelled_latency_ms("dynamodb", "TransactWriteItems", max(sharing, len(sizes)))
        * share,
    )
    assert writes_alone(writes) == (alone < in_transaction)
    assert writes_alone(writes)
