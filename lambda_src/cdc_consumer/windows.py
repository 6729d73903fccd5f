"""Tumbling-window events: the shard a batch comes from, and the ``state`` every answer carries.

When its event source mapping has a tumbling window (``TumblingWindowInSeconds``), Lambda names
the batch's shard in the event (``shardId``) beside the window (``window``, ``state``,
``isFinalInvokeForWindow``), and counts an answer without ``state`` as a failed invocation. The
runtime keeps no state across a window (it keeps its own, in DynamoDB, exactly once), so it
answers an empty ``state`` to every windowed event, the final one of a window included (which
may carry no records: nothing to do). The shard keys the batch's ledger lanes
(:mod:`cdc_consumer.ledger`); a redrive names it too when it replays a failed batch or a
quarantined record whose shard is known.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "FINAL_INVOKE_KEY",
    "SHARD_ID_KEY",
    "WINDOW_KEY",
    "WINDOW_STATE_KEY",
    "WINDOW_TERMINATED_EARLY_KEY",
    "answer",
    "is_windowed",
    "shard_of",
]

SHARD_ID_KEY: Final = "shardId"
"""The shard of every record of a stream event, in an event of a mapping with a tumbling window
(``TumblingWindowInSeconds``), and in a redrive's replay of a failed batch or a quarantined record
whose shard is known. The runtime keys its ledger lanes by it (``cdc_consumer.ledger``)."""

WINDOW_KEY: Final = "window"
"""``{"start": ISO-8601, "end": ISO-8601}``: the tumbling window of the event's records; present
in every invocation of a mapping with a window."""

WINDOW_STATE_KEY: Final = "state"
"""The window's state: passed in every windowed event, and required in every answer to one
(Lambda counts an answer without it as a failed invocation)."""

FINAL_INVOKE_KEY: Final = "isFinalInvokeForWindow"
"""True in the last invocation of a window (which may carry no records)."""

WINDOW_TERMINATED_EARLY_KEY: Final = "isWindowTerminatedEarly"
"""True when Lambda ended the window early (its state grew past 1 MB)."""


def shard_of(event: Any) -> str | None:
    """The shard the event's records come from (None: the event does not say)."""
    shard = event.get(SHARD_ID_KEY) if isinstance(event, Mapping) else None
    return shard if isinstance(shard, str) and shard else None


def is_windowed(event: Any) -> bool:
    """Whether ``event`` is an invocation of a mapping with a tumbling window."""
    return isinstance(event, Mapping) and WINDOW_KEY in event


def answer(event: Any, response: Any) -> Any:
    """``response`` with the window's ``state`` when ``event`` is windowed and it has none
    (empty: the runtime keeps none), so Lambda does not count the invocation as failed. A
    handler's None (every record settled) becomes ``{"batchItemFailures": []}`` then; any other
    answer that is not an object is left as it is (Lambda reads it as a failure anyway)."""
    if not is_windowed(event):
        return response
    if response is None:
        response = {"batchItemFailures": []}
    if isinstance(response, dict) and WINDOW_STATE_KEY not in response:
        response[WINDOW_STATE_KEY] = {}
    return response
