"""Property: whatever the writes, failures and redeliveries, the view ends equal to the view
recomputed from the final orders table.

Writes: inserts, modifies (status, amount, customer) and removes (some by TTL) on a few orders;
some images are unreadable (no customerId, or an amount that is not a number): their records are
quarantined, and the view counts only the orders whose current image is readable.
Faults, injected with botocore hooks on the handler's own client: throttled transactions,
transactions cancelled by a conflict on one of their items, and transactions that commit but
whose response is lost (a read timeout). Delivery is AWS's: batches of varying size, resumed from
the lowest failed sequence number, and sometimes delivered again after success (as after a
crash once the commit was done).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from itertools import cycle
from typing import Any

from cdc_consumer import Change
from cdc_consumer.testing import FakeContext, redelivery, stream_event
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_local.endpoint import patched_environ
from tests.cdc_consumer.fixtures import Resources, TransactionHooks, error_response
from tests.reference_app.handlers.orders import (
    handler_module,
    new_orders_stream,
    readable,
    recompute,
)

ORDERS = ["ORDER#1", "ORDER#2", "ORDER#3"]
CUSTOMERS = ["c1", "c2"]
STATUSES = ["pending", "paid", "cancelled", "shipped"]

writes = st.lists(
    st.one_of(
        st.tuples(
            st.just("put"),
            st.sampled_from(ORDERS),
            st.sampled_from([*CUSTOMERS, None]),  # None: no customerId (unreadable)
            st.sampled_from(STATUSES),
            st.one_of(st.integers(0, 50), st.just("12 EUR")),  # a String amount (unreadable)
        ),
        st.tuples(st.just("delete"), st.sampled_from(ORDERS), st.booleans()),
    ),
    min_size=1,
    max_size=20,
)
faults = st.lists(
    st.one_of(
        st.just(("ok",)),
        st.just(("throttle",)),
        st.just(("lost response",)),
        st.tuples(st.just("conflict"), st.integers(0, 99)),
    ),
    max_size=25,
)


class InjectedFaults(TransactionHooks):
    """Answers the n-th TransactWriteItems call as the n-th drawn fault says."""

    def __init__(self, client: Any, plan: list[tuple[Any, ...]]) -> None:
        super().__init__(client)
        self.plan: Iterator[tuple[Any, ...]] = iter(plan)

    def before(self, params: dict[str, Any], **_: Any) -> Any:
        fault = next(self.plan, ("ok",))
        if fault[0] == "throttle":
            return error_response("ThrottlingException", "Rate of requests exceeds the allowed")
        if fault[0] == "conflict":
            items = json.loads(params["body"])["TransactItems"]
            reasons = [{"Code": "None"} for _ in items]
            reasons[fault[1] % len(items)] = {
                "Code": "TransactionConflict",
                "Message": "Transaction is ongoing for the item",
            }
            return error_response(
                "TransactionCanceledException", "cancelled", CancellationReasons=reasons
            )
        self.lose_response = fault[0] == "lost response"
        return None


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    writes=writes,
    plan=faults,
    batch_sizes=st.lists(st.integers(1, 6), min_size=1, max_size=8),
    deliver_twice=st.lists(st.booleans(), min_size=1, max_size=8),
)
def test_view_equals_recomputation_from_the_final_table(
    resources: Resources,
    writes: list[tuple[Any, ...]],
    plan: list[tuple[Any, ...]],
    batch_sizes: list[int],
    deliver_twice: list[bool],
) -> None:
    order_stats = handler_module("order_stats")

    stream = new_orders_stream()
    for write in writes:
        if write[0] == "put":
            _, pk, customer, status, amount = write
            image = {"pk": pk, "status": status, "amount": amount}
            if customer is not None:
                image["customerId"] = customer
            stream.put(image)
        else:
            stream.delete((write[1],), ttl_expiry=write[2])
    view_table = resources.new_table("view")
    environment = {
        "CDC_CONSUMER_NAME": f"order-stats-{uuid.uuid4().hex[:8]}",
        "IDEMPOTENCY_TABLE_NAME": resources.idempotency_table,
        "QUARANTINE_QUEUE_URL": resources.queue_url,
        "VIEW_TABLE_NAME": view_table,
    }
    sizes, twice = cycle(batch_sizes), cycle(deliver_twice)
    with patched_environ(environment), InjectedFaults(order_stats.processor.dynamodb, plan):
        position, invocations = 0, 0
        records = stream.records
        while position < len(records):
            batch = records[position : position + next(sizes)]
            response = order_stats.handler(stream_event(batch), FakeContext())
            invocations += 1
            assert invocations < 200, "no progress"
            remaining = redelivery(batch, response)
            if remaining:
                position = records.index(remaining[0])
                continue
            again = batch if next(twice) else []
            while again:  # delivered again, as after a crash once the commit was done
                response = order_stats.handler(stream_event(again), FakeContext())
                invocations += 1
                assert invocations < 200, "no progress"
                again = redelivery(again, response)
            position += len(batch)

    resources.view_table = view_table
    assert resources.view() == recompute(stream.items.values())
    # Every record whose NEW image is unreadable is quarantined whole (at least once), and no
    # other record is.
    unreadable = {
        record["eventID"]: record
        for record in stream.records
        if Change.from_record(record).new_image is not None
        and not readable(Change.from_record(record).new_image)
    }
    messages = resources.quarantined()
    assert {message["record"]["eventID"] for message in messages} == set(unreadable)
    for message in messages:
        assert message["record"] == unreadable[message["record"]["eventID"]]
