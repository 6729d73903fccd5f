"""Hot aggregates in the runtime: consecutive records' aggregates of one item merge into one
action of the transaction, each record keeping its marker; duplicates inside a merged group
neither drop nor double the others' contributions; what cannot merge is cut as before.

Against moto's server (tests/conftest.py), faults injected with botocore hooks.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from cdc_consumer.sinks.aggregates import increment, update_aggregate
from cdc_consumer.testing import FakeContext, stream_event, stream_record
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cdc_consumer.fixtures import Faults, RequestCounter, Resources, deliver, error_response

ITEMS = ["hot", "warm"]


def records(amounts: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """One INSERT per (item index, amount): the record ADDs ``amount`` to ``n`` of that item."""
    return [
        stream_record(
            "INSERT",
            {"pk": f"order-{i}"},
            new_image={"pk": f"order-{i}", "item": ITEMS[item], "amount": amount},
            sequence_number=1000 + i,
            event_id=f"event-{i}",
        )
        for i, (item, amount) in enumerate(amounts)
    ]


def counting_projection(view_table: str) -> Callable[[Any], list[dict[str, Any]]]:
    """ADD the order's amount to ``n`` and 1 to ``orders`` of its item; every 7th order also
    SETs ``last`` (a newer value) on the same item."""

    def project(change: Any) -> list[dict[str, Any]]:
        image = change.new_image
        put = {"last": image["pk"]} if int(image["pk"].split("-")[1]) % 7 == 0 else None
        return [
            update_aggregate(
                view_table,
                {"pk": image["item"]},
                add={"n": image["amount"], "orders": 1},
                put=put,
            )
        ]

    return project


def expected(
    amounts: list[tuple[int, int]], applied_before: set[int] | None = None
) -> dict[str, dict[str, Any]]:
    """The view after applying each record once: those ``applied_before`` first (in stream
    order), then the others (SET keeps the value of the last record applied)."""
    before = sorted(i for i in applied_before or set() if i < len(amounts))
    order = before + [i for i in range(len(amounts)) if i not in before]
    view: dict[str, dict[str, Any]] = {}
    for i in order:
        item, amount = amounts[i]
        entry = view.setdefault(ITEMS[item], {"n": Decimal(0), "orders": Decimal(0)})
        entry["n"] += amount
        entry["orders"] += 1
        if i % 7 == 0:
            entry["last"] = f"order-{i}"
    return {k: {a: v for a, v in e.items() if v != 0} for k, e in view.items()}


def test_a_hundred_records_on_one_item_take_two_transactions(
    resources: Resources, count_requests: Callable[[Any], RequestCounter]
) -> None:
    amounts = [(0, i % 5 + 1) for i in range(100)]
    processor = resources.processor()
    processor.projection(counting_projection(resources.view_table))
    counter = count_requests(resources.dynamodb)

    assert processor.handle(stream_event(records(amounts)), FakeContext()) == {
        "batchItemFailures": []
    }
    # 100 markers + 1 merged update exceed 100 actions: 99 records, then 1.
    assert counter.by_operation["TransactWriteItems"] == 2
    assert resources.view() == expected(amounts)
    assert len(resources.markers()) == 100


def test_updates_that_cannot_merge_cut_the_transaction(
    resources: Resources, count_requests: Callable[[Any], RequestCounter]
) -> None:
    processor = resources.processor()

    @processor.projection
    def alternate(change: Any) -> list[dict[str, Any]]:
        i = int(change.new_image["pk"].split("-")[1])
        if i % 2:
            return [update_aggregate(resources.view_table, {"pk": "hot"}, put={"n": i})]
        return [increment(resources.view_table, {"pk": "hot"}, {"n": 1})]

    counter = count_requests(resources.dynamodb)
    batch = records([(0, 1)] * 4)
    assert processor.handle(stream_event(batch), FakeContext()) == {"batchItemFailures": []}
    assert counter.by_operation["TransactWriteItems"] == 4  # ADD then SET of n: never merged
    assert resources.view() == {"hot": {"n": Decimal(3)}}  # +1, =1, +1 (=2), =3


def test_duplicates_inside_a_merged_group_neither_drop_nor_double(
    resources: Resources, count_requests: Callable[[Any], RequestCounter]
) -> None:
    amounts = [(i % 2, i + 1) for i in range(30)]
    batch = records(amounts)
    processor = resources.processor()
    processor.projection(counting_projection(resources.view_table))
    # Records 3, 4, 10 and 29 were applied before (by an earlier delivery).
    for index in (3, 4, 10, 29):
        processor.handle(stream_event([batch[index]]), FakeContext())
    counter = count_requests(resources.dynamodb)

    assert processor.handle(stream_event(batch), FakeContext()) == {"batchItemFailures": []}
    assert resources.view() == expected(amounts, {3, 4, 10, 29})
    # One cancelled transaction naming the duplicates, then the rest in one.
    assert counter.by_operation["TransactWriteItems"] == 2


def _transient_faults(faults: Faults, plan: list[str]) -> None:
    """Answer TransactWriteItems calls with a throttle or a conflict on the merged update, as
    ``plan`` says, call after call ("ok" lets it through)."""
    calls = iter(plan)

    def decide(body: dict[str, Any]) -> Any:
        step = next(calls, "ok")
        if step == "throttle":
            return error_response("ProvisionedThroughputExceededException", "injected")
        if step == "conflict":
            reasons = [{"Code": "None"} for _ in body["TransactItems"]]
            updates = [i for i, item in enumerate(body["TransactItems"]) if "Update" in item]
            reasons[updates[0] if updates else 0] = {"Code": "TransactionConflict"}
            return error_response(
                "TransactionCanceledException", "injected", CancellationReasons=reasons
            )
        return None

    faults.on("TransactWriteItems", decide)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    amounts=st.lists(st.tuples(st.integers(0, 1), st.integers(-3, 9)), min_size=1, max_size=40),
    applied_before=st.sets(st.integers(0, 39), max_size=12),
    batch_size=st.integers(1, 40),
    plan=st.lists(st.sampled_from(["ok", "throttle", "conflict"]), max_size=6),
)
def test_property_merged_groups_apply_every_record_exactly_once(
    resources: Resources,
    faults: Callable[[Any], Faults],
    amounts: list[tuple[int, int]],
    applied_before: set[int],
    batch_size: int,
    plan: list[str],
) -> None:
    """Whatever was applied before (duplicates anywhere in merged groups), however the stream
    is cut into batches, and whatever transient failures hit the merged transactions: every
    record's contribution is in the view exactly once."""
    for table in (resources.view_table, resources.idempotency_table):
        key = "pk" if table == resources.view_table else "id"
        for item in resources.dynamodb.scan(TableName=table)["Items"]:
            resources.dynamodb.delete_item(TableName=table, Key={key: item[key]})
    batch = records(amounts)
    processor = resources.processor()
    processor.projection(counting_projection(resources.view_table))
    for index in sorted(i for i in applied_before if i < len(batch)):
        processor.handle(stream_event([batch[index]]), FakeContext())
    injected = faults(resources.dynamodb)
    _transient_faults(injected, plan)
    try:
        for start in range(0, len(batch), batch_size):
            deliver(processor.handle, batch[start : start + batch_size], max_invocations=20)
    finally:
        injected.clear()
    assert resources.view() == expected(amounts, applied_before)
    assert Counter(m["id"].rsplit("#", 1)[-1] for m in resources.markers()) == Counter(
        r["eventID"] for r in batch
    )


# --- merged aggregates at the edges (issue 23 §6) --------------------------------------------


def tagging_projection(
    view_table: str, numeric: frozenset[int] = frozenset(), huge: frozenset[int] = frozenset()
) -> Callable[[Any], list[dict[str, Any]]]:
    """Counts orders on ``hot`` and ADDs each order's tag to its ``tags`` set: ``tag-<i>``, a
    number for the orders in ``numeric``, a 300 kB string for those in ``huge``."""

    def project(change: Any) -> list[dict[str, Any]]:
        i = int(change.new_image["pk"].split("-")[1])
        tag: Any = i if i in numeric else "x" * HUGE if i in huge else f"tag-{i}"
        return [
            update_aggregate(
                view_table, {"pk": "hot"}, add={"orders": 1}, add_to_set={"tags": [tag]}
            )
        ]

    return project


HUGE = 300_000


def _refuse_huge_items(faults: Faults) -> None:
    """DynamoDB's item size limit (400 KB), as it meets this test's updates: an Update carrying
    a huge tag is cancelled with a ValidationError on that action (the others let through)."""

    def decide(body: dict[str, Any]) -> Any:
        items = body["TransactItems"]
        bad = [i for i, item in enumerate(items) if len(json.dumps(item)) > HUGE]
        if not any("Update" in items[i] for i in bad):
            return None
        reasons: list[dict[str, Any]] = [{"Code": "None"} for _ in items]
        reasons[bad[0]] = {
            "Code": "ValidationError",
            "Message": "Item size to update has exceeded the maximum allowed size",
        }
        return error_response(
            "TransactionCanceledException", "Transaction cancelled", CancellationReasons=reasons
        )

    faults.on("TransactWriteItems", decide)


def test_a_merged_update_refused_for_one_record_quarantines_that_record_alone(
    resources: Resources, faults: Callable[[Any], Faults]
) -> None:
    """Six orders' updates of ``hot`` merge into one action; order 3's huge tag makes DynamoDB
    refuse it. The runtime falls back to fewer records until order 3 alone is refused: order 3
    is quarantined, the other five are applied (none blamed for order 3's action)."""
    processor = resources.processor()
    processor.projection(tagging_projection(resources.view_table, huge=frozenset({3})))
    _refuse_huge_items(faults(resources.dynamodb))
    batch = records([(0, 1)] * 6)
    assert processor.handle(stream_event(batch), FakeContext()) == {"batchItemFailures": []}
    (message,) = resources.quarantined()
    assert message["record"]["eventID"] == "event-3"
    assert resources.view() == {
        "hot": {"orders": Decimal(5), "tags": {f"tag-{i}" for i in (0, 1, 2, 4, 5)}}
    }
    assert len(resources.markers()) == 5  # a quarantined record without actions has none


def test_a_string_and_a_number_element_of_one_set_are_not_merged(
    resources: Resources, count_requests: Callable[[Any], RequestCounter]
) -> None:
    """Order 1 ADDs a string to ``tags``, order 2 a number: one set cannot hold both, so the
    two are not merged (no TypeError out of handle): each goes to DynamoDB on its own, which
    takes the first and decides the second against the item, as applying them one after the
    other would."""
    processor = resources.processor()
    processor.projection(tagging_projection(resources.view_table, numeric=frozenset({2})))
    counter = count_requests(resources.dynamodb)
    batch = records([(0, 1)] * 3)
    response = processor.handle(stream_event(batch), FakeContext())
    assert response["batchItemFailures"] in ([], [{"itemIdentifier": "1002"}])
    assert counter.by_operation["TransactWriteItems"] >= 2  # cut before order 2
    assert resources.view()["hot"]["tags"] >= {"tag-0", "tag-1"}


def test_merged_sums_keep_dynamodb_s_38_digits() -> None:
    big = 10**30
    merged = increment("view", {"pk": "hot"}, {"n": big}).then(
        increment("view", {"pk": "hot"}, {"n": 1})
    )
    assert merged is not None
    assert merged.adds["n"] == Decimal(big + 1)  # 31 digits: Python's default context keeps 28
    assert merged["Update"]["ExpressionAttributeValues"][":g0"] == {"N": str(big + 1)}


def test_a_sum_dynamodb_could_not_hold_exactly_is_not_merged() -> None:
    """38 nines plus 0.1 needs 39 digits: DynamoDB refuses it when the second record is applied
    after the first, so the two must reach it as two actions, not one rounded sum."""
    nines = Decimal("9" * 38)
    first = increment("view", {"pk": "hot"}, {"n": nines})
    assert first.then(increment("view", {"pk": "hot"}, {"n": Decimal("0.1")})) is None
    assert first.then(increment("view", {"pk": "hot"}, {"n": -nines})) is not None
