"""Age is checked, not assumed: a redrive refuses a batch or record its consumer's markers may no
longer cover (docs/design.md, "Markers outlive every replay window").

A processed-marker (or side-effect claim) is written when its record is applied, never before
the record was written, and lives the consumer's marker lifetime (``CDC_MARKER_TTL_SECONDS``). A
failed batch can hold records earlier members of a consumer group applied; a quarantined record
can have been applied by other members. Once ``now`` passes a record's write time plus that
lifetime, its markers may be gone and a replay would apply it a second time. The time is the
failure's own: the records' write time (as their route says:
:func:`~cdc_consumer.routes.replay.written_at`) and the failure's timestamp (the invocation record's
``timestamp``, a quarantine message's ``quarantinedAt``), the earliest of them, never when the
object or message was last written: S3 keeps an object past its lifecycle day (it expires at the
next midnight UTC and removes it asynchronously), and a copy can be restored.

Such a batch or record is refused: reported with the reason (``refused``, cause
``OLDER_THAN_MARKERS``), neither replayed nor deleted, and the run is not ok. A person decides:
replay it knowing that records may apply twice, or reconcile it by hand.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cdc_consumer.routes.replay import written_at

__all__ = ["MarkerAge", "failure_time", "written_at"]


def failure_time(text: Any) -> float | None:
    """An ISO-8601 timestamp (``2024-01-01T00:05:00.000Z``) as epoch seconds; None when it is
    not one."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True)
class MarkerAge:
    """The consumer's marker lifetime (whole seconds) and the clock."""

    marker_ttl_seconds: int
    clock: Callable[[], float] = field(default=time.time)

    def __post_init__(self) -> None:
        if not isinstance(self.marker_ttl_seconds, int) or self.marker_ttl_seconds < 1:
            raise ValueError(
                f"marker_ttl_seconds is {self.marker_ttl_seconds!r}; expected the consumer's"
                " marker lifetime in whole seconds (1 or more), or None for no age check"
            )

    def refusal(
        self, records: Iterable[Mapping[str, Any]], failed_at: float | None = None
    ) -> str | None:
        """Why these records must not be replayed (their earliest time plus the marker lifetime
        is past), or None."""
        times = [t for t in (written_at(r) for r in records) if t is not None]
        if failed_at is not None:
            times.append(failed_at)
        if not times:
            return None
        earliest = min(times)
        age = self.clock() - earliest
        if age < self.marker_ttl_seconds:
            return None
        moment = datetime.fromtimestamp(earliest, tz=UTC).isoformat(timespec="seconds")
        return (
            f"its records date from {moment}, {age / 86400:.1f} days ago, and the consumer's"
            f" markers live {self.marker_ttl_seconds} s ({self.marker_ttl_seconds / 86400:g}"
            " days): they may have expired, so replaying it could apply records a second time;"
            " not replayed, not deleted (replay it by hand knowing that, or reconcile it)"
        )
