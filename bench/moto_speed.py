"""Make moto's TransactWriteItems back each table up once per transaction, not once per action.

A fallback for checkouts without cdc_local.moto_patches (see :func:`copy_each_table_once`).

moto 5.2.5's ``DynamoDBBackend.transact_write_items`` deep-copies the target table for *every
action* before applying any (so that it can roll back), which makes a transaction of 100 actions
cost 100 copies of the table: on the idempotency table of a 2,000-record run, seconds per
transaction, and `make bench` would take many minutes. All copies are taken before the first
write, so one copy per table is the same backup; this patch memoizes the table copies for the
duration of one call. Nothing else changes (items, conditions, cancellation reasons, rollback),
and it is applied to the benchmark's in-process moto server only, never to the tests.

Even so, moto copies each touched table once per transaction, which DynamoDB does not do: the
RESULTS.md notes say so next to the wall times.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

_lock = threading.Lock()
_patched = False


class _OneCopyPerTable:
    """Stands in for the ``copy`` module inside moto.dynamodb.models during one transaction."""

    def __init__(self, table_class: type) -> None:
        self._table_class = table_class
        self._copies: dict[int, Any] = {}

    def deepcopy(self, value: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(value, self._table_class):
            if id(value) not in self._copies:
                self._copies[id(value)] = copy.deepcopy(value)
            return self._copies[id(value)]
        return copy.deepcopy(value, *args, **kwargs)


def copy_each_table_once() -> None:
    """Install the patch (idempotent), unless the local pipeline's own patch is there.

    cdc_local.moto_patches (applied by LocalEndpoint.start) does better: it snapshots only the
    items a transaction names, so a transaction's cost no longer grows with the table. When it
    exists this function does nothing, since wrapping it would bring the table copies back.
    """
    global _patched
    if _patched:
        return
    try:
        from cdc_local import moto_patches  # noqa: F401
    except ImportError:
        pass
    else:
        return
    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    original = models.DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: Any) -> Any:
        with _lock:
            models.copy = _OneCopyPerTable(Table)  # type: ignore[assignment]
            try:
                return original(self, transact_items)
            finally:
                models.copy = copy  # type: ignore[assignment]

    transact_write_items._bench_patched = True  # type: ignore[attr-defined]
    models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    _patched = True


def describe() -> str:
    """Which patch moto's TransactWriteItems runs with in this process (for the report)."""
    from moto.dynamodb import models

    method = models.DynamoDBBackend.transact_write_items
    if getattr(method, "_cdc_local_patched", False):
        return "cdc_local.moto_patches"
    if getattr(method, "_bench_patched", False):
        return "bench.moto_speed"
    return "none"
