"""The segment's rate limit: items per second, so a backfill cannot starve the application."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class RateLimit:
    """Paces pages so that, from the first page on, at most ``items_per_second`` items pass
    (None: no limit). :meth:`wait` before a page sleeps until the items so far are within it."""

    items_per_second: float | None
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    passed: int = 0
    started: float | None = field(default=None)

    def wait(self) -> float:
        """Sleep as long as the rate asks; return the seconds slept."""
        now = self.clock()
        if self.started is None:
            self.started = now
        if not self.items_per_second:
            return 0.0
        due = self.started + self.passed / self.items_per_second
        if due <= now:
            return 0.0
        self.sleep(due - now)
        return due - now

    def took(self, items: int) -> None:
        self.passed += items
