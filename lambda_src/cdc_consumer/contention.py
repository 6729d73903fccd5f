"""Contention: what a batch does when another writer is on its items at the same moment.

Two ways a transaction meets another writer, neither a failure of any record:

- a **meeting** in a ledger lane: the head's version condition (or the entry's) failed, because
  another delivery of the same shard committed in the lane since the lookup. The lane is read
  again at once and the batch goes on with what is still new;
- a **conflict**: DynamoDB cancelled the transaction with ``TransactionConflict`` because another
  transaction (or write) was in flight on one of its items — a lane's head, or a view item that
  other shards update too (a hot aggregate). Nothing was written; the transaction is tried again
  after a backoff with full jitter (a random wait up to a bound that doubles, as AWS's SDKs back
  off), the lanes read again first.

Either way the batch keeps trying within :data:`~cdc_consumer.defaults.CONTENTION_BUDGET_SECONDS`
and the invocation's own deadline; past that it stops at the record and reports it, counted as a
contention failure (``ContentionFailures``, alarmed), so a shard is never failed for contention
in ordinary load, and never spins without a signal.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from cdc_consumer.deadline import Deadline
from cdc_consumer.defaults import (
    CONTENTION_BUDGET_SECONDS,
    CONTENTION_FIRST_BACKOFF_SECONDS,
    CONTENTION_MAX_BACKOFF_SECONDS,
)


@dataclass
class Contention:
    """One batch's patience with contention (see the module docstring).

    ``deadline``: the invocation's (None: unknown, as outside Lambda): the batch stops trying
    before its safety margin. ``jitter``: a number in [0, 1) per wait (tests fix it)."""

    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    deadline: Deadline | None = None
    budget: float = CONTENTION_BUDGET_SECONDS
    jitter: Callable[[], float] = random.random
    started: float | None = None
    waits: int = 0

    def _left(self) -> float:
        now = self.clock()
        if self.started is None:
            self.started = now
        left = self.budget - (now - self.started)
        milliseconds = None if self.deadline is None else self.deadline.time_left_ms()
        return left if milliseconds is None else min(left, milliseconds / 1000)

    def may_retry(self) -> bool:
        """Whether the batch may try again at once (after a meeting)."""
        return self._left() > 0

    def back_off(self) -> bool:
        """Wait before trying again (after a conflict); False when the wait would outlast the
        budget or the deadline: then the batch stops instead."""
        bound = min(
            CONTENTION_MAX_BACKOFF_SECONDS, CONTENTION_FIRST_BACKOFF_SECONDS * 2**self.waits
        )
        delay = self.jitter() * bound
        if delay >= self._left():
            return False
        self.waits += 1
        self.sleep(delay)
        return True
