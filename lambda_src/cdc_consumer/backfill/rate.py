"""The segment's rate limit: a token bucket, so a backfill cannot starve the application.

Tokens (items) refill at ``items_per_second`` up to ``burst`` (one page); a page waits until the
bucket holds a page's worth, then takes as many tokens as it has items. So the rate holds over any
stretch of time, not only on average since the first page: after a stall (a slow consumer, a
throttled Scan) at most ``burst`` items go out at once, then pages are paced again. The burst
is one page by default (:class:`~cdc_consumer.backfill.segment.SegmentRun` gives the page size):
a page is read in one Scan, so no bucket can pace finer than that.

Shared across the segments of one execution by division: ViewBackfill gives each segment
invocation ``items_per_second / max_concurrency`` (the Map runs at most ``max_concurrency``
segments at once, so together they never exceed the backfill's rate). A bucket shared through
DynamoDB would let fewer running segments use the whole rate, at the price of a write per page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["RateLimit"]


@dataclass
class RateLimit:
    """A token bucket of ``burst`` items (a page) refilled at ``items_per_second`` (None: no
    limit). :meth:`wait` before a page sleeps until the bucket holds a page's worth; :meth:`took`
    takes the page's items."""

    items_per_second: float | None
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    burst: float = 1.0
    tokens: float = field(default=0.0, init=False)
    at: float | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.tokens = float(self.burst)  # a full bucket: the first page goes at once

    def _refill(self) -> None:
        now = self.clock()
        if self.at is not None and self.items_per_second:
            refilled = self.tokens + (now - self.at) * self.items_per_second
            self.tokens = min(float(self.burst), refilled)
        self.at = now

    def wait(self) -> float:
        """Sleep until the bucket holds a page's worth (``burst``); return the seconds slept."""
        self._refill()
        if not self.items_per_second or self.tokens >= self.burst:
            return 0.0
        pause = (self.burst - self.tokens) / self.items_per_second
        self.sleep(pause)
        self._refill()
        return pause

    def took(self, items: int) -> None:
        self._refill()
        self.tokens -= items
