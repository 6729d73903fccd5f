"""Make moto's TransactWriteItems snapshot only what a transaction touches.

moto (5.2) rolls a cancelled transaction back by deep-copying, before it starts, every table the
transaction writes to - once per action. With an idempotency table of thousands of markers each
transaction then costs O(actions x table size): the reference consumer's 5,000-change run would
spend minutes copying tables. This patch keeps moto's implementation (every check, every error,
the same rollback) and changes only the snapshot: before the call it deep-copies the items the
transaction names and notes each stream's length; moto's table copies are replaced by the live
tables; if the transaction fails, the named items are put back and the stream records written
meanwhile are dropped, which leaves the tables exactly as moto's full-copy rollback would.

No library offers this; moto has no option for it. :func:`apply` is idempotent and is called
by :meth:`cdc_local.endpoint.LocalEndpoint.start` (the server runs in this process).
"""

from __future__ import annotations

import copy
import functools
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_active = threading.local()
#: Set on the patched method, so a second apply() (or is_applied()) recognises it.
_MARKER = "_cdc_local_patched"


class _CopyModule:
    """Stands in for ``copy`` inside ``moto.dynamodb.models`` while a patched transaction runs
    on this thread: a deep copy of a Table is the live table (see the module docstring)."""

    def __init__(self, table_type: type) -> None:
        self._table_type = table_type

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    def deepcopy(self, value: Any, memo: dict[int, Any] | None = None) -> Any:
        if getattr(_active, "transaction", False) and isinstance(value, self._table_type):
            return value
        return copy.deepcopy(value, memo)


@dataclass
class _Snapshot:
    """The items a transaction names, as they were, and each stream's length."""

    items: list[tuple[Any, Any, Any, bool, Any]] = field(default_factory=list)
    streams: dict[int, tuple[Any, int]] = field(default_factory=dict)

    @classmethod
    def take(cls, backend: Any, actions: Sequence[Mapping[str, Any]]) -> _Snapshot:
        from moto.dynamodb.models.dynamo_type import DynamoType

        snapshot = cls()
        for action in actions:
            if len(action) != 1:
                continue  # moto rejects it before writing anything
            op_type, op = next(iter(action.items()))
            table = backend.tables.get(op.get("TableName")) if isinstance(op, Mapping) else None
            if table is None:
                continue
            source = op.get("Item") if op_type == "Put" else op.get("Key")
            names = [n for n in (table.hash_key_attr, table.range_key_attr) if n is not None]
            if not isinstance(source, Mapping) or any(n not in source for n in names):
                continue  # moto rejects it before writing anything
            hash_value = DynamoType(source[table.hash_key_attr])
            range_value = DynamoType(source[table.range_key_attr]) if table.range_key_attr else None
            try:
                before = table.get_item(hash_value, range_value)
            except Exception:
                continue
            hash_existed = hash_value in table.items
            snapshot.items.append(
                (table, hash_value, range_value, hash_existed, copy.deepcopy(before))
            )
            if table.stream_shard is not None:
                snapshot.streams.setdefault(
                    id(table), (table.stream_shard, len(table.stream_shard.items))
                )
        return snapshot

    def restore(self) -> None:
        for table, hash_value, range_value, hash_existed, before in reversed(self.items):
            if range_value is None:
                if before is None:
                    table.items.pop(hash_value, None)
                else:
                    table.items[hash_value] = before
                continue
            bucket = table.items[hash_value]
            if before is None:
                bucket.pop(range_value, None)
            else:
                bucket[range_value] = before
            if not bucket and not hash_existed:
                del table.items[hash_value]
        for shard, length in self.streams.values():
            del shard.items[length:]


def is_applied() -> bool:
    """Whether :func:`apply` has patched moto's TransactWriteItems in this process."""
    try:
        import moto.dynamodb.models as models
    except ImportError:
        return False
    return bool(getattr(models.DynamoDBBackend.transact_write_items, _MARKER, False))


def apply() -> None:
    """Patch moto's DynamoDB backend (once per process). If this moto's internals are not the
    ones the patch knows, it warns and leaves moto as it is: slower, equally correct."""
    try:
        import moto.dynamodb.models as models
        from moto.dynamodb.models.table import Table

        original: Callable[..., Any] = models.DynamoDBBackend.transact_write_items
        if not hasattr(models, "copy"):  # the module moto's rollback copies tables with
            raise AttributeError("moto.dynamodb.models has no `copy`")
    except (ImportError, AttributeError) as error:
        warnings.warn(
            f"cdc_local: moto's TransactWriteItems is not the one moto_patches knows ({error}); "
            "transactions stay correct but copy whole tables",
            stacklevel=2,
        )
        return
    if getattr(original, _MARKER, False):
        return

    @functools.wraps(original)
    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        snapshot = _Snapshot.take(self, transact_items)
        _active.transaction = True
        try:
            return original(self, transact_items)
        except BaseException:
            snapshot.restore()
            raise
        finally:
            _active.transaction = False

    setattr(transact_write_items, _MARKER, True)
    models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    models.copy = _CopyModule(Table)  # type: ignore[assignment]
