"""One DynamoDB request at a time on the local endpoint, as DynamoDB's own isolation would have it.

DynamoDB applies each write to an item atomically and serializes transactions with every other
write to their items (a conflicting one is cancelled, ``TransactionConflict``, and retried).
moto's threaded server runs requests side by side in threads with no lock around a table's
items: two ``UpdateItem`` ``ADD`` of one item at once can lose one, and a cancelled
transaction's rollback (moto's, or :mod:`cdc_local.moto_patches`') puts back the items it named
as they were before it, over a write another thread made meanwhile. The backfill's segments run
at once against one view (the local pipeline and the benchmark run them in threads, as a
Distributed Map runs them in parallel) and met both: a view short of a few orders.

:func:`apply` makes moto's DynamoDB and DynamoDB Streams request handlers take one lock for
the whole request (once per process; the server runs in this process), so each request sees
every other one whole. moto serves every request from one Python process anyway, so little
parallelism is lost. No library offers this; moto has no option for it.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

__all__ = ["apply", "is_applied"]

#: Taken by every DynamoDB and DynamoDB Streams request (re-entrant: a handler never calls
#: another over HTTP, but a nested call in-process must not deadlock).
LOCK = threading.RLock()
#: Set on the patched method, so a second apply() (or is_applied()) recognises it.
_MARKER = "_cdc_local_one_at_a_time"


def _handlers() -> list[Any]:
    from moto.dynamodb.responses import DynamoHandler
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

    return [DynamoHandler, DynamoDBStreamsHandler]


def is_applied() -> bool:
    """Whether :func:`apply` has serialized moto's DynamoDB requests in this process."""
    return all(getattr(h.call_action, _MARKER, False) for h in _handlers())


def apply() -> None:
    """Serialize moto's DynamoDB and DynamoDB Streams requests (idempotent)."""
    for handler in _handlers():
        original = handler.call_action
        if getattr(original, _MARKER, False):
            continue
        handler.call_action = _one_at_a_time(original)


def _one_at_a_time(original: Any) -> Any:
    @functools.wraps(original)
    def call_action(self: Any) -> Any:
        with LOCK:
            return original(self)

    setattr(call_action, _MARKER, True)
    return call_action
