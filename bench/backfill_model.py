"""The backfill's cost model: write units per backfilled item from the page size and the view
items a page touches (docs/design.md §11, bench/RESULTS.md's Backfill section).

A backfilled row writes its contribution (a Put, 2 units in a transaction: the swap that
makes the row idempotent, so no ledger entry), and the consumer groups a page's rows by view
item before cutting the page into transactions, so each view item's deltas of the page merge
into one ADD (2 units), plus one more where a transaction's cut splits a view item's rows. A
page of P rows touching V view items, items of 1 KB or less, therefore writes at most
2 (P + V + T - 1) units, T = its transactions: about 2 + 2 V/P a row. V depends on the fan-in:
how many view items the segment's rows spread over, and whether the scan returns one view
item's rows together.
"""

from __future__ import annotations

from typing import Any

from cdc_consumer.backfill.defaults import PAGE_SIZE

TRANSACTION_ACTIONS = 100
"""DynamoDB's most actions in one TransactWriteItems."""
#: View items a segment's rows spread over, one row of the fan-in table each (with the
#: bench's own); None: every row its own view item (fan-in 1).
SPREAD = (1, 10, 50, 1_000, 10_000, None)
#: Rows per view item for rows a scan returns together (a view item's source items share a
#: partition key).
GROUPED_FAN_INS = (10, 100)


def view_items_per_page(page: int, view_items: float | None) -> float:
    """The view items a page of ``page`` rows touches, expected, when the segment's rows spread
    evenly over ``view_items`` and the scan returns them in an order unrelated to their view
    item (DynamoDB's scan order is the partition key's hash): each of the ``view_items`` is
    missed by every row with probability (1 - 1/N)^P. ``view_items`` None: one a row."""
    if view_items is None:
        return float(page)
    return view_items * (1 - (1 - 1 / view_items) ** page)


def wru_per_item(page: int, touched: float) -> float:
    """The backfill's write units per row, at most, for a page of ``page`` rows touching
    ``touched`` view items (items of 1 KB or less): each row's contribution Put and each view
    item's merged ADD, 2 units each in a transaction; the page is cut into transactions of
    :data:`TRANSACTION_ACTIONS`, and each cut may split one view item's rows (one more ADD).
    Snapshot rows need no ledger entry (the contribution's swap guards the row)."""
    actions = page + touched
    transactions = -(-(actions - 1) // (TRANSACTION_ACTIONS - 1))
    return 2 * (actions + transactions - 1) / page


def fan_in_table(
    bench_view_items: int, pages: tuple[int, ...] = (100, PAGE_SIZE)
) -> list[dict[str, Any]]:
    """:func:`wru_per_item` for view items a segment's rows spread over (``SPREAD`` and the
    bench's ``bench_view_items``), at each page size; and for rows that arrive grouped (a view
    item's source items share a partition key, so a scan returns them together: a page of P
    rows of fan-in f touches about P/f + 1)."""
    rows: list[dict[str, Any]] = []
    finite = sorted({*(n for n in SPREAD if n is not None), bench_view_items})
    for view_items in [*finite, None]:
        touched = {p: view_items_per_page(p, view_items) for p in pages}
        rows.append(
            {
                "view_items": view_items,
                "wru_per_item": {p: round(wru_per_item(p, touched[p]), 2) for p in pages},
                "touched": {p: round(touched[p], 1) for p in pages},
            }
        )
    for fan_in in GROUPED_FAN_INS:
        touched = {p: min(float(p), p / fan_in + 1) for p in pages}
        rows.append(
            {
                "grouped_fan_in": fan_in,
                "wru_per_item": {p: round(wru_per_item(p, touched[p]), 2) for p in pages},
                "touched": {p: round(touched[p], 1) for p in pages},
            }
        )
    return rows
