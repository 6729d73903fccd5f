"""The ledger (cdc_consumer.ledger): one entry per transaction, looked up once per batch, on the
local endpoint. Each tricky case has a test that a naive ledger fails (see the docstrings)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError
from cdc_consumer.ledger import (
    HEAD_SORT_KEY,
    MAX_LISTING_BYTES,
    LaneState,
    LedgerStore,
    Listing,
    lane_key,
    pack,
    sort_key,
    unpack,
)
from hypothesis import given
from hypothesis import strategies as st

from tests.cdc_consumer.fixtures import Resources, create_table

STREAM = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-01-01T00:00:00.000"
SHARD = "shardId-00000001700000000000-0a1b2c3d"
LANE = (STREAM, SHARD)
OTHER_STREAM = STREAM.replace("orders", "invoices")
NOW = 1_800_000_000
TTL = 86_400
#: A DynamoDB Streams sequence number as AWS writes them (21 to 40 digits).
BASE = 4_421_584_500_000_000_017_450_439_091


def ledger_table(resources: Resources) -> str:
    name = f"ledger-{uuid.uuid4().hex[:8]}"
    create_table(resources.dynamodb, name, key="id", sort_key="seq")
    return name


@pytest.fixture
def store(resources: Resources) -> LedgerStore:
    return LedgerStore(resources.dynamodb, ledger_table(resources), "orders-view", TTL, lambda: NOW)


def effect(resources: Resources, pk: str) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": resources.view_table,
            "Key": {"pk": {"S": pk}},
            "UpdateExpression": "ADD #n :one",
            "ExpressionAttributeNames": {"#n": "n"},
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
    }


def commit(resources: Resources, store: LedgerStore, state: LaneState, numbers: list[int]) -> None:
    """One transaction: each record's effect on its own view item, the entry and the head."""
    actions = [effect(resources, str(n)) for n in numbers] + store.actions(state, numbers)
    resources.dynamodb.transact_write_items(TransactItems=actions)
    store.committed(state, numbers)


def reasons(error: ClientError) -> list[str]:
    return [reason.get("Code", "None") for reason in error.response["CancellationReasons"]]


# --- encoding ----------------------------------------------------------------------------


@given(st.lists(st.integers(min_value=0, max_value=10**129 - 1), min_size=2, max_size=20))
def test_sort_keys_sort_as_the_numbers_do(numbers: list[int]) -> None:
    assert sorted(numbers, key=sort_key) == sorted(numbers)
    assert [sort_key(n) for n in sorted(numbers)] == sorted(sort_key(n) for n in numbers)


def test_sort_keys_of_numbers_sort_before_the_head() -> None:
    assert sort_key(10**128) < HEAD_SORT_KEY


def test_a_negative_number_is_refused_with_the_value() -> None:
    with pytest.raises(ValueError, match="-1"):
        sort_key(-1)


@given(st.sets(st.integers(min_value=0, max_value=10**60)))
def test_pack_unpack_round_trip(numbers: set[int]) -> None:
    assert unpack(pack(numbers)) == sorted(numbers)


def test_a_full_transactions_records_fit_a_one_kilobyte_entry() -> None:
    """98 records (a transaction's 100 actions less the entry and the head), sparse, with
    40-digit sequence numbers a few thousand apart: the entry stays one write unit's size."""
    numbers = [10**39 + 7_919 * i * i for i in range(98)]
    assert len(pack(numbers)) + 200 < 1024


# --- lookup ------------------------------------------------------------------------------


def test_a_redelivery_after_the_commit_finds_every_record_applied(
    resources: Resources, store: LedgerStore
) -> None:
    numbers = [BASE + i for i in range(10)]
    state = store.read(LANE, numbers)
    assert state.applied == set()
    commit(resources, store, state, numbers[:6])
    commit(resources, store, state, numbers[6:])
    again = store.read(LANE, numbers)
    assert again.applied == set(numbers)
    assert again.version == 2


def test_numbers_inside_an_entrys_range_that_it_does_not_list_are_not_applied(
    resources: Resources, store: LedgerStore
) -> None:
    """Records the mapping discarded (maximum record age) or a filter dropped sit between the
    ones a transaction applied: a ledger inferring "applied" from first..last would skip them
    when the redrive brings them back."""
    applied = [BASE, BASE + 1, BASE + 5, BASE + 6]
    state = store.read(LANE, applied)
    commit(resources, store, state, applied)
    discarded = [BASE + 2, BASE + 3, BASE + 4]
    assert store.read(LANE, discarded).applied == set()
    assert store.read(LANE, [BASE + 3, BASE + 5]).applied == {BASE + 5}


def test_an_entry_wider_than_the_batch_is_found(resources: Resources, store: LedgerStore) -> None:
    """An entry starting long before the batch still lists its records: entries are keyed by
    their last number, so the lookup from the batch's lowest number reaches it."""
    state = store.read(LANE, [BASE])
    commit(resources, store, state, [BASE, BASE + 10**12])
    commit(resources, store, state, [BASE + 10**12 + 1])
    found = store.read(LANE, [BASE + 10**12, BASE + 10**12 + 1, BASE + 10**12 + 2])
    assert found.applied == {BASE + 10**12, BASE + 10**12 + 1}


def test_a_lookup_reads_nothing_written_below_the_batch(
    resources: Resources, store: LedgerStore, count_requests: Any
) -> None:
    """One wide entry (a redrive of records from far apart) once made every later lookup read
    most of the lane, through a span that only widened: now a lookup reads the entries at or
    above its lowest number only, whatever came before."""
    state = store.read(LANE, [BASE])
    commit(resources, store, state, [BASE, BASE + 10**15])  # one wide entry
    for start in range(1, 200, 20):
        commit(resources, store, state, [BASE + 10**15 + start + i for i in range(20)])
    queried: list[int] = []
    original = resources.dynamodb.query

    def query(**request: Any) -> Any:
        page = original(**request)
        queried.append(page["ScannedCount"])
        return page

    resources.dynamodb.query = query
    try:
        found = store.read(LANE, [BASE + 10**15 + 190 + i for i in range(15)])
    finally:
        resources.dynamodb.query = original
    assert found.applied == {BASE + 10**15 + 190 + i for i in range(11)}
    assert queried == [1]  # the last entry only


def test_the_head_outlives_every_entry_whatever_the_writers_clocks(
    resources: Resources, store: LedgerStore
) -> None:
    """A writer whose clock runs 30 s behind the one before it must not shorten the head's
    life below the newest entry's."""
    ahead = LedgerStore(store.client, store.table, store.consumer, TTL, lambda: NOW + 30)
    behind = LedgerStore(store.client, store.table, store.consumer, TTL, lambda: NOW - 30)
    commit(resources, ahead, ahead.read(LANE, [BASE]), [BASE])
    commit(resources, behind, behind.read(LANE, [BASE + 1]), [BASE + 1])
    items = {item["seq"]: int(item["expiration"]) for item in resources.scan(store.table)}
    assert items[HEAD_SORT_KEY] == max(items.values()) == NOW + 30 + TTL


def test_a_listing_stays_within_its_bound_whatever_the_records() -> None:
    """A merged hot-aggregate transaction of a 10,000-record batch once listed 7,175 records in
    one 118 KB entry: a transaction now lists only what fits the bound."""
    listing, numbers = Listing(), []
    for number in (BASE + 3 * i for i in range(10_000)):
        if not listing.fits(number):
            break
        listing.add(number)
        numbers.append(number)
    assert len(pack(numbers)) == listing.size <= MAX_LISTING_BYTES
    assert 200 < len(numbers) < 10_000
    far = Listing()
    far.add(BASE)
    assert far.fits(BASE + 10**39) and not Listing(BASE, MAX_LISTING_BYTES).fits(BASE + 1)


def test_one_lookup_is_one_get_and_one_query(
    resources: Resources, store: LedgerStore, count_requests: Any
) -> None:
    state = store.read(LANE, [BASE])
    for start in range(0, 100, 10):  # ten earlier transactions
        commit(resources, store, state, [BASE + start + i for i in range(10)])
    counter = count_requests(resources.dynamodb)
    found = store.read(LANE, [BASE + i for i in range(50, 150)])
    assert found.applied == {BASE + i for i in range(50, 100)}
    assert dict(counter.by_operation) == {"GetItem": 1, "Query": 1}


def test_a_lane_without_a_head_is_not_queried(
    resources: Resources, store: LedgerStore, count_requests: Any
) -> None:
    counter = count_requests(resources.dynamodb)
    assert store.read(LANE, [BASE]).applied == set()
    assert dict(counter.by_operation) == {"GetItem": 1}


def test_consumers_and_streams_keep_their_own_entries(
    resources: Resources, store: LedgerStore
) -> None:
    """A consumer group's members (each its own name), one consumer's two streams and one
    stream's two shards: an entry of one never makes a record of another a duplicate."""
    state = store.read(LANE, [BASE])
    commit(resources, store, state, [BASE])
    member = LedgerStore(resources.dynamodb, store.table, "orders-audit", TTL, lambda: NOW)
    assert member.read(LANE, [BASE]).applied == set()
    assert store.read((OTHER_STREAM, SHARD), [BASE]).applied == set()
    assert store.read((STREAM, "shardId-2"), [BASE]).applied == set()
    assert lane_key("orders-view", STREAM, SHARD) != lane_key("orders-audit", STREAM, SHARD)


def test_entries_and_the_head_expire_with_the_marker_lifetime(
    resources: Resources, store: LedgerStore
) -> None:
    state = store.read(LANE, [BASE])
    commit(resources, store, state, [BASE, BASE + 3])
    items = resources.scan(store.table)
    assert {item["seq"] for item in items} == {sort_key(BASE + 3), HEAD_SORT_KEY}
    assert {int(item["expiration"]) for item in items} == {NOW + TTL}
    entry = next(item for item in items if item["seq"] != HEAD_SORT_KEY)
    assert (int(entry["count"]), int(entry["first"]), entry["stream"]) == (2, BASE, STREAM)
    assert entry["shard"] == SHARD


# --- concurrency -------------------------------------------------------------------------


def test_two_deliveries_cut_differently_cannot_both_commit(
    resources: Resources, store: LedgerStore
) -> None:
    """Two redrives of one batch (or a redrive and the live consumer) read before either
    commits, then cut the records into different transactions. Their entries have different
    keys, so only the head (both update it under the version they read) stops the second: a
    ledger without it applies records 3..5 twice."""
    numbers = [BASE + i for i in range(1, 9)]
    first, second = store.read(LANE, numbers), store.read(LANE, numbers)
    commit(resources, store, first, numbers[:5])
    with pytest.raises(ClientError) as cancelled:
        commit(resources, store, second, numbers[2:])
    assert reasons(cancelled.value)[-1] == "ConditionalCheckFailed"  # the head
    again = store.read(LANE, numbers)
    assert again.applied == set(numbers[:5])
    commit(resources, store, again, [n for n in numbers if not again.is_applied(n)])
    view = resources.view()
    assert {pk: item["n"] for pk, item in view.items()} == {str(n): 1 for n in numbers}


def test_the_first_writer_of_a_lane_is_guarded_too(
    resources: Resources, store: LedgerStore
) -> None:
    """No head yet: both writers expect none (attribute_not_exists), one wins."""
    first, second = store.read(LANE, [BASE]), store.read(LANE, [BASE + 1])
    commit(resources, store, first, [BASE])
    with pytest.raises(ClientError) as cancelled:
        commit(resources, store, second, [BASE, BASE + 1])
    assert "ConditionalCheckFailed" in reasons(cancelled.value)


def test_a_writer_that_committed_goes_on_without_reading_again(
    resources: Resources, store: LedgerStore, count_requests: Any
) -> None:
    state = store.read(LANE, [BASE + i for i in range(30)])
    counter = count_requests(resources.dynamodb)
    for start in range(0, 30, 10):
        commit(resources, store, state, [BASE + start + i for i in range(10)])
    assert dict(counter.by_operation) == {"TransactWriteItems": 3}
