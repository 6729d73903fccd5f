"""Sinks: what projections write to, one module each, plugged into the engine by a protocol.

- :mod:`~cdc_consumer.sinks.protocol`: what the engine needs of a sink and of its actions;
- :mod:`~cdc_consumer.sinks.guarded`: version-guarded writes (idempotent by themselves: no
  marker, no transaction);
- :mod:`~cdc_consumer.sinks.latest_image`: :class:`LatestImage`, a replica kept by version;
- :mod:`~cdc_consumer.sinks.aggregates`: hot aggregates, merged across records;
- :mod:`~cdc_consumer.sinks.contributions`: :class:`Contributions`, a delta view a backfill can
  feed (swaps of each item's contribution);
- :mod:`~cdc_consumer.sinks.outbox`: the transactional outbox (the application's side).

A side effect (an external call) is any ``change -> None`` callable
(:data:`~cdc_consumer.sinks.protocol.SideEffect`): it needs no module here, since what makes it
run once, its claim, is the engine's bookkeeping (:mod:`cdc_consumer.claims`).

Adding a sink is one module here (or anywhere) and its tests: the engine names none of them.
Importing this package loads only the protocol.
"""

from __future__ import annotations

from cdc_consumer.sinks.protocol import (
    PLAIN,
    ActionKind,
    AlreadyApplied,
    OnConditionFailed,
    SideEffect,
    Sink,
    batch_hook,
    declared_reads,
    item_key,
    kind_of,
    merge_key,
    takes_snapshots,
)

__all__ = [
    "PLAIN",
    "ActionKind",
    "AlreadyApplied",
    "OnConditionFailed",
    "SideEffect",
    "Sink",
    "batch_hook",
    "declared_reads",
    "item_key",
    "kind_of",
    "merge_key",
    "takes_snapshots",
]
