"""The reference handler: per-customer order counts by status and paid totals, exactly once."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from cdc_consumer.testing import FakeContext, stream_event

from tests.cdc_consumer.fixtures import Resources, deliver, error_response
from tests.reference_app.handlers.orders import (
    new_orders_stream,
    order_stats_environment,
    recompute,
)

OK: dict[str, Any] = {"batchItemFailures": []}


def failure(record: dict[str, Any]) -> dict[str, Any]:
    return {"batchItemFailures": [{"itemIdentifier": record["dynamodb"]["SequenceNumber"]}]}


def emf(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]


def order(number: int, customer: str, status: str, amount: Any, **extra: Any) -> dict[str, Any]:
    return {
        "pk": f"ORDER#{number}",
        "customerId": customer,
        "status": status,
        "amount": amount,
        **extra,
    }


def test_every_kind_of_change_moves_the_view_to_the_recomputed_one(
    resources: Resources, capsys
) -> None:
    stream = new_orders_stream()
    stream.put(order(1, "c1", "pending", 10, expireAt=1_900_000_000))  # INSERT
    stream.update(("ORDER#1",), status="paid")  # status change
    stream.update(("ORDER#1",), amount=15)  # amount change while paid
    stream.put(order(2, "c1", "paid", "5.25"))  # a String amount: quarantined
    stream.put(order(3, "c1", "paid", 7))
    stream.update(("ORDER#3",), customerId="c2")  # the order moves to another customer
    stream.put(order(4, "c2", "shipped", 3))
    stream.delete(("ORDER#4",))  # REMOVE
    stream.delete(("ORDER#1",), ttl_expiry=True)  # REMOVE by TTL
    stream.put({"pk": "OUTBOX#1", "payload": "not an order"})  # ignored

    with order_stats_environment(resources) as order_stats:
        assert order_stats.handler(stream_event(stream.records), FakeContext()) == OK

    valid = [item for pk, item in stream.items.items() if pk != ("ORDER#2",)]
    assert (
        resources.view() == recompute(valid) == {"CUSTOMER#c2": {"count_paid": 1, "paid_amount": 7}}
    )
    (metrics,) = emf(capsys.readouterr().out)
    assert metrics["RecordsQuarantined"] == 1
    assert metrics["TtlExpiries"] == 1
    assert metrics["RecordsProcessed"] == len(stream.records) - 1


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"pk": "ORDER#9", "status": "paid", "amount": 1}, "customerId must be a non-empty string"),
        (order(9, "c1", "", 1), "status must be a non-empty string"),
        (order(9, "c1", "paid", "12 EUR"), "amount must be a Number, got '12 EUR'"),
        (order(9, "c1", "paid", None), "amount must be a Number, got None"),
    ],
)
def test_an_order_it_cannot_read_is_quarantined_and_a_later_fix_counts_once(
    resources: Resources, bad: dict[str, Any], message: str
) -> None:
    stream = new_orders_stream()
    stream.put(order(1, "c1", "paid", 4))
    stream.put(bad)
    stream.put(order(9, "c1", "paid", 10))  # the fix: its OLD image is the unreadable one

    with order_stats_environment(resources) as order_stats:
        assert order_stats.handler(stream_event(stream.records), FakeContext()) == OK

    (quarantined,) = resources.quarantined()
    assert quarantined["record"] == stream.records[1]
    assert quarantined["error"]["type"] == "PermanentError"
    assert message in quarantined["error"]["message"]
    assert resources.view() == recompute(stream.items.values())


def test_ok_transient_ok_then_redelivery_equals_one_in_order_pass(
    resources: Resources, faults
) -> None:
    stream = new_orders_stream()
    first = stream.put(order(1, "c1", "pending", 10))
    second = stream.put(order(2, "c2", "paid", 20))
    third = stream.put(order(3, "c3", "paid", 30))
    records = [first, second, third]

    with order_stats_environment(resources) as order_stats:
        faults(order_stats.processor.dynamodb).cancel_on(Counter({second["eventID"]: 1}))
        responses = deliver(order_stats.handler, records)

    assert responses == [failure(second), OK]
    assert resources.view() == recompute(stream.items.values())


def test_two_modifies_first_failing_once_leave_the_newest_status(
    resources: Resources, faults
) -> None:
    stream = new_orders_stream()
    insert = stream.put(order(1, "c1", "pending", 10))
    paid = stream.update(("ORDER#1",), status="paid")
    shipped = stream.update(("ORDER#1",), status="shipped")

    with order_stats_environment(resources) as order_stats:
        assert order_stats.handler(stream_event([insert]), FakeContext()) == OK
        faults(order_stats.processor.dynamodb).cancel_on(Counter({paid["eventID"]: 1}))
        assert deliver(order_stats.handler, [paid, shipped]) == [failure(paid), OK]

    assert resources.view() == {"CUSTOMER#c1": {"count_shipped": 1}}


def test_the_same_batch_three_times_counts_each_order_once(resources: Resources, capsys) -> None:
    stream = new_orders_stream()
    for number in range(6):
        stream.put(order(number, f"c{number % 2}", "paid", number + 1))
    stream.update(("ORDER#0",), status="cancelled")

    with order_stats_environment(resources) as order_stats:
        for _ in range(3):
            assert order_stats.handler(stream_event(stream.records), FakeContext()) == OK

    assert resources.view() == recompute(stream.items.values())
    assert [m["DuplicatesSkipped"] for m in emf(capsys.readouterr().out)] == [0, 7, 7]


@pytest.mark.parametrize(
    ("records", "customers"),
    [pytest.param(1000, 1000, marks=pytest.mark.slow), (200, 10), (100, 1)],
)
def test_requests_per_record(
    resources: Resources, count_requests, records: int, customers: int
) -> None:
    stream = new_orders_stream()
    for number in range(records):
        stream.put(order(number, f"c{number % customers}", "paid", 1))

    with order_stats_environment(resources) as order_stats:
        requests = count_requests(order_stats.processor.dynamodb)
        for start in range(0, records, 100):  # the construct's default batch size
            batch = stream.records[start : start + 100]
            assert order_stats.handler(stream_event(batch), FakeContext()) == OK
        sent = requests.total

    print(
        f"order_stats: {records} records, {customers} customers: {sent / records} requests/record"
    )
    assert resources.view() == recompute(stream.items.values())
    # A record is a marker + one update of its customer; the updates of one customer in a
    # transaction merge into one action (hot aggregates), so a transaction holds records while
    # its markers plus its distinct customers fit in 100 actions.
    expected = 0
    for start in range(0, records, 100):
        group: list[int] = []
        for number in range(start, min(start + 100, records)):
            if len(group) + 1 + len({n % customers for n in [*group, number]}) > 100:
                expected, group = expected + 1, []
            group.append(number)
        expected += 1
    assert sent == expected
    if customers == records:
        assert sent / records <= 0.05


# --- an order that becomes unreadable ------------------------------------------------------


def without_customer(number: int, status: str, amount: Any) -> dict[str, Any]:
    return {"pk": f"ORDER#{number}", "status": status, "amount": amount}


@pytest.mark.parametrize("per_record", [False, True], ids=["one batch", "a batch per record"])
def test_valid_unreadable_valid_counts_the_order_once(
    resources: Resources, capsys, per_record: bool
) -> None:
    stream = new_orders_stream()
    stream.put(order(1, "c1", "paid", 10))
    unreadable = stream.put(without_customer(1, "paid", 10))  # MODIFY: customerId removed
    stream.put(order(1, "c1", "paid", 10))  # MODIFY: fixed; its OLD image is unreadable
    stream.put(order(2, "c1", "paid", 5))

    with order_stats_environment(resources) as order_stats:
        batches = [[record] for record in stream.records] if per_record else [stream.records]
        for batch in batches:
            assert order_stats.handler(stream_event(batch), FakeContext()) == OK

    assert (
        resources.view()
        == recompute(stream.items.values())
        == {"CUSTOMER#c1": {"count_paid": 2, "paid_amount": 15}}
    )
    (quarantined,) = resources.quarantined()
    assert quarantined["record"] == unreadable  # the full record, exactly as delivered
    assert quarantined["error"]["type"] == "PermanentError"
    assert "customerId must be a non-empty string" in quarantined["error"]["message"]
    metrics = emf(capsys.readouterr().out)
    assert sum(m["RecordsQuarantined"] for m in metrics) == 1
    assert sum(m["RecordsProcessed"] for m in metrics) == len(stream.records) - 1


def test_the_view_follows_the_table_while_the_order_is_unreadable(resources: Resources) -> None:
    stream = new_orders_stream()
    stream.put(order(1, "c1", "paid", 10))
    stream.put(order(1, "c1", "paid", "10 EUR"))  # amount not a number
    views = []

    with order_stats_environment(resources) as order_stats:
        for record in stream.records:
            assert order_stats.handler(stream_event([record]), FakeContext()) == OK
            views.append(resources.view())

    assert views == [{"CUSTOMER#c1": {"count_paid": 1, "paid_amount": 10}}, {}]
    assert resources.view() == recompute(stream.items.values()) == {}


@pytest.mark.parametrize("ttl_expiry", [False, True], ids=["REMOVE", "TTL expiry"])
def test_valid_unreadable_removed_leaves_nothing(resources: Resources, ttl_expiry: bool) -> None:
    stream = new_orders_stream()
    stream.put(order(1, "c1", "paid", 10))
    stream.put(order(2, "c1", "pending", 3))
    stream.put(without_customer(1, "paid", 10))
    stream.update(("ORDER#2",), status="")  # status emptied
    stream.delete(("ORDER#1",), ttl_expiry=ttl_expiry)
    stream.delete(("ORDER#2",))

    with order_stats_environment(resources) as order_stats:
        assert order_stats.handler(stream_event(stream.records), FakeContext()) == OK

    assert stream.items == {}
    assert resources.view() == {}
    assert len(resources.quarantined()) == 2


def test_a_batch_delivered_twice_takes_the_old_contribution_out_once(
    resources: Resources, capsys
) -> None:
    stream = new_orders_stream()
    stream.put(order(1, "c1", "paid", 10))
    stream.put(order(2, "c1", "paid", 7))
    unreadable = stream.put(without_customer(1, "paid", 10))

    with order_stats_environment(resources) as order_stats:
        for _ in range(2):
            assert order_stats.handler(stream_event(stream.records), FakeContext()) == OK

    assert (
        resources.view()
        == recompute(stream.items.values())
        == {"CUSTOMER#c1": {"count_paid": 1, "paid_amount": 7}}
    )
    # At least once: the second delivery reports the record again, and its compensation is a
    # duplicate (its marker exists), so it is not applied again.
    assert [m["record"] for m in resources.quarantined()] == [unreadable, unreadable]
    assert [
        (m["RecordsProcessed"], m["DuplicatesSkipped"], m["RecordsQuarantined"])
        for m in emf(capsys.readouterr().out)
    ] == [(2, 0, 1), (0, 2, 1)]


def test_a_failed_quarantine_send_commits_nothing_and_reports_the_record(
    resources: Resources, faults
) -> None:
    stream = new_orders_stream()
    stream.put(order(1, "c1", "paid", 10))
    unreadable = stream.put(without_customer(1, "paid", 10))
    after = stream.put(order(2, "c2", "paid", 4))

    with order_stats_environment(resources) as order_stats:
        failing = faults(order_stats.processor.sqs)
        failing.on("SendMessage", lambda body: error_response("ServiceUnavailable", "try later"))
        assert order_stats.handler(stream_event(stream.records), FakeContext()) == failure(
            unreadable
        )
        assert resources.view() == {"CUSTOMER#c1": {"count_paid": 1, "paid_amount": 10}}
        assert resources.quarantined() == []
        failing.clear()
        assert order_stats.handler(stream_event([unreadable, after]), FakeContext()) == OK

    assert resources.view() == recompute(stream.items.values())
    assert [m["record"] for m in resources.quarantined()] == [unreadable]


def test_importing_the_backfillable_handler_leaves_the_contract_to_the_first_batch() -> None:
    """The handler module's import is the cold start's share (docs/design.md §4): registering
    a Contributions projection must not load the contract's message shapes."""
    import subprocess
    import sys

    from tests.reference_app.handlers.orders import HANDLERS_DIR

    lambda_src = HANDLERS_DIR.parents[1] / "lambda_src"
    probe = (
        "import sys, order_stats\n"
        "assert order_stats.backfillable_order_stats.takes_snapshots\n"
        "shapes = ('cdc_consumer.backfill.shapes', 'cdc_consumer.quarantine_shapes',"
        " 'cdc_consumer.redrive_shapes', 'cdc_consumer.message_fields')\n"
        "print(sorted(set(shapes) & set(sys.modules)))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=HANDLERS_DIR,
        env={"PYTHONPATH": f"{lambda_src}:{HANDLERS_DIR}", "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]", loaded.stdout
