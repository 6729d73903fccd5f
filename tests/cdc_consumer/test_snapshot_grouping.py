"""A backfill's page is grouped by view item before it is cut into transactions (issue 29,
"Backfill rides on it"): each row keeps its own contribution write, and a view item's deltas of
the page travel as about one ADD, whatever the order the scan returned the rows in. A grouped
run that stops reports the first row, in the page's own order, that it did not settle."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from cdc_consumer import Contributions
from cdc_consumer.intake import grouped
from cdc_consumer.testing import FakeContext, snapshot_event

from tests.cdc_consumer.fixtures import Resources

HORIZON = 1_000
#: Rows of 3 customers, interleaved as a scan returns them; 110 rows: more than one transaction.
ROWS = [{"pk": f"ORDER#{n:03d}", "customer": f"C{n % 3}", "amount": n} for n in range(110)]


def counts(view: str, resources: Resources | None = None) -> Contributions:
    def contribution(image: dict[str, Any] | None) -> list[Any]:
        if image is None:
            return []
        return [(view, {"pk": image["customer"]}, {"orders": 1, "amount": image["amount"]})]

    if resources is None:
        return Contributions("counts", contribution, table_name="unused")
    return Contributions(
        "counts",
        contribution,
        table_name=resources.idempotency_table,
        dynamodb_client=resources.dynamodb,
    )


def test_a_page_costs_one_contribution_per_row_and_about_one_add_per_view_item(
    resources: Resources,
) -> None:
    view = resources.new_table("counts")
    processor = resources.processor()
    processor.projection(counts(view, resources))
    sent: list[list[dict[str, Any]]] = []
    resources.dynamodb.meta.events.register(
        "provide-client-params.dynamodb.TransactWriteItems",
        lambda params, **_: sent.append(params["TransactItems"]),
    )

    answer = processor.handle(snapshot_event(ROWS, horizon=HORIZON), FakeContext())

    assert answer["batchItemFailures"] == []
    updates = sum("Update" in item for request in sent for item in request)
    puts = sum("Put" in item for request in sent for item in request)
    assert puts == len(ROWS)  # each row's contribution
    # 3 view items, 2 transactions: a cut splits at most one customer's rows (interleaved and
    # cut in page order, each transaction would carry an ADD of every customer: 6).
    assert updates <= 3 + len(sent) - 1
    totals = {item["pk"]: (item["orders"], item["amount"]) for item in resources.scan(view)}
    assert totals == {
        f"C{c}": (
            Decimal(sum(1 for r in ROWS if r["customer"] == f"C{c}")),
            Decimal(sum(r["amount"] for r in ROWS if r["customer"] == f"C{c}")),
        )
        for c in range(3)
    }


def test_the_order_groups_rows_by_view_item_and_keeps_undecodable_rows_last() -> None:
    records = snapshot_event(ROWS[:6], horizon=HORIZON)["Records"]
    records.insert(2, {"eventID": "broken"})  # not a row at all

    order = grouped(records, [counts("view").merge_key])

    assert order is not None and sorted(order) == list(range(7))
    customers = [records[i]["dynamodb"]["NewImage"]["customer"]["S"] for i in order[:-1]]
    assert customers == sorted(customers)
    assert order[-1] == 2


def test_a_grouped_run_that_stops_reports_the_first_unsettled_row_in_page_order(
    resources: Resources,
) -> None:
    """C0's second row fails; grouped, C0's rows go first, so the rows of C1 and C2 before it
    in the page were not taken: the answer is the first of those, and the resend (from there,
    as the segment resends) applies them; rows applied are no-ops."""
    view = resources.new_table("counts")
    processor = resources.processor()
    rows = ROWS[:9]  # C0, C1, C2, C0, ...
    failing = rows[3]["pk"]  # C0's second row: C0's rows are taken first

    def contribution(image: dict[str, Any] | None) -> list[Any]:
        if image is None:
            return []
        calls[image["pk"]] = calls.get(image["pk"], 0) + 1
        # Its first call groups the page; its second, the row's own, fails until healed.
        if image["pk"] == failing and calls[failing] > 1 and not state["healed"]:
            raise RuntimeError("transient: the function's dependency is down")
        return [(view, {"pk": image["customer"]}, {"orders": 1})]

    calls: dict[str, int] = {}
    state = {"healed": False}
    processor.projection(
        Contributions(
            "counts",
            contribution,
            table_name=resources.idempotency_table,
            dynamodb_client=resources.dynamodb,
        )
    )
    event = snapshot_event(rows, horizon=HORIZON)

    answer = processor.handle(event, FakeContext())

    (failure,) = answer["batchItemFailures"]
    assert failure["itemIdentifier"] == event["Records"][1]["dynamodb"]["SequenceNumber"]
    state["healed"] = True
    event["Records"] = event["Records"][1:]
    assert processor.handle(event, FakeContext())["batchItemFailures"] == []
    totals = {item["pk"]: item["orders"] for item in resources.scan(view)}
    assert totals == {"C0": 3, "C1": 3, "C2": 3}
