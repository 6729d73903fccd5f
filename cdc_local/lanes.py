"""A lane of an event source mapping: the records of one shard (or, with a
``ParallelizationFactor`` above 1, of one hash range of partition keys in it) waiting to be
delivered in order, and where its head batch stands (planned sizes after a bisection or a
partial failure, retries, the last failed invocation, the open tumbling window).

The mapping (:mod:`cdc_local.event_source_mapping`) decides; a lane keeps the books.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_local.destinations import FailedInvocation
from cdc_local.tumbling_windows import OpenWindow

__all__ = ["MAX_PAYLOAD_BYTES", "Lane", "lane_index"]

#: Lambda's invocation payload limit for synchronous invokes: a batch is cut before it exceeds it.
MAX_PAYLOAD_BYTES = 6 * 1024 * 1024


def lane_index(partition_value: str, factor: int) -> int:
    """The lane (0..factor-1) of a record whose partition key is ``partition_value``: a hash,
    so one item's records stay in one lane, in order."""
    if factor <= 1:
        return 0
    return int.from_bytes(hashlib.md5(partition_value.encode()).digest()[:8], "big") % factor


@dataclass
class Lane:
    shard_id: str
    pending: deque[dict[str, Any]] = field(default_factory=deque)
    read_at: deque[float] = field(default_factory=deque)
    #: Sizes of the next batches to send, set by bisection and partial failures.
    planned: deque[int] = field(default_factory=deque)
    attempts: int = 0
    invokes_at_head: int = 0
    last_failure: FailedInvocation | None = None
    #: With a tumbling window: the window the lane's invocations are in, until its final one.
    window: OpenWindow | None = None

    def add(self, record: dict[str, Any], now: float) -> None:
        self.pending.append(record)
        self.read_at.append(now)

    def next_size(self, batch_size: int) -> int:
        """The size of the next batch: the planned one, else the mapping's ``BatchSize``."""
        return self.planned[0] if self.planned else batch_size

    def take(self, size: int) -> list[dict[str, Any]]:
        """Up to ``size`` records from the head, cut before the payload would exceed Lambda's
        limit (left pending)."""
        batch: list[dict[str, Any]] = []
        payload = len('{"Records": []}')
        for record in self.pending:
            if len(batch) >= size:
                break
            payload += len(json.dumps(record)) + 2
            if batch and payload > MAX_PAYLOAD_BYTES:
                break
            batch.append(record)
        return batch

    def done(self, count: int) -> None:
        """The head's ``count`` records succeeded: drop them and start the next batch afresh."""
        self._drop(count)
        if self.planned:
            self.planned[0] -= count
            if self.planned[0] <= 0:
                self.planned.popleft()
        self._reset()

    def bisect(self, size: int) -> None:
        """Split the failed head batch of ``size`` in two, each half retried on its own (the
        first half first); splitting does not consume retries."""
        if self.planned:
            self.planned.popleft()
        half = size // 2
        self.planned.extendleft([size - half, half])  # sends `half` first

    def retry(self, size: int) -> None:
        """The head batch of ``size`` failed: count an attempt and send the same batch again."""
        self.attempts += 1
        if self.planned:
            self.planned[0] = size
        else:
            self.planned.append(size)

    def give_up(self, count: int) -> tuple[list[dict[str, Any]], FailedInvocation]:
        """Drop the head's ``count`` records unsent: they and the last failure that gave them up
        (a failure without an invocation when none was made)."""
        records = [self.pending[i] for i in range(count)]
        self._drop(count)
        if self.planned:
            self.planned.popleft()
        failure = self.last_failure or FailedInvocation(None, None, None, self.invokes_at_head)
        self._reset()
        return records, failure

    def expired(
        self, now: float, max_age: int, created_at: Callable[[Mapping[str, Any]], float]
    ) -> int:
        """How many records at the head are older than ``max_age`` seconds (``created_at``:
        a record's age counts from it)."""
        count = 0
        for record in self.pending:
            if now - created_at(record) <= max_age:
                break
            count += 1
        return count

    def holds(self) -> bool:
        """Whether anything of the lane is unsettled: a record pending or a window open."""
        return bool(self.pending or self.window)

    def _drop(self, count: int) -> None:
        for _ in range(count):
            self.pending.popleft()
            self.read_at.popleft()

    def _reset(self) -> None:
        self.attempts = 0
        self.invokes_at_head = 0
        self.last_failure = None
