"""Backfill: a new view over a table that already holds data (docs/backfill.md).

The segment function (:mod:`cdc_consumer.backfill.handler`, handler string
:data:`cdc_consumer.handler_paths.BACKFILL_HANDLER`) validates a backfill and scans one
parallel-scan
segment per invocation, handing each item to the consumer function as a *snapshot change*; the
consumer's projections reconcile snapshot rows with stream changes by a time horizon.
"""

from __future__ import annotations

__all__: list[str] = []
