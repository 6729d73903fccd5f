"""The horizon's rules: which horizons the stream can cover (docs/backfill.md).

The reconciliation needs every change created at or after the horizon H to reach the consumer,
and every change committed after the scan started to be stamped at or after H. So a horizon is
refused, each with the reason, when:

* it is not a positive whole number of epoch seconds (text, a fraction, zero, negative);
* it is later than the start time less the skew margin (a change made after the scan started
  could be stamped before it), or the skew margin is below :data:`defaults.MIN_SKEW_SECONDS`;
* it is older than the stream's retention less a margin (:data:`defaults.STREAM_RETENTION_SECONDS`,
  :data:`defaults.RETENTION_MARGIN_SECONDS`): changes after it may have been trimmed before the
  consumer read them;
* it is before the consumer's first recorded change, or after what it has applied: the consumer
  has not read the stream there.

Without a horizon given, the start step takes the earlier of the start time less the margin and
the consumer's progress (a quiet table still backfills).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc_consumer.backfill import defaults
from cdc_consumer.backfill.shapes import BackfillRefusal, ConsumerProgress
from cdc_consumer.exceptions import BackfillRefusedError
from cdc_consumer.versions import MICROSECONDS_PER_SECOND

__all__ = ["HorizonRules", "check_horizon_value", "check_skew"]


def check_horizon_value(value: Any) -> int:
    """``value`` as a horizon: a positive whole number of epoch seconds, else refused."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise BackfillRefusedError(
            f"horizon is {value!r}; give a positive whole number of epoch seconds (or none: the "
            "start step decides)"
        )
    return value


def check_skew(skew_seconds: float) -> None:
    if skew_seconds < defaults.MIN_SKEW_SECONDS:
        raise BackfillRefusedError(
            f"the skew margin is {skew_seconds} s, below the minimum of "
            f"{defaults.MIN_SKEW_SECONDS} s: DynamoDB stamps a change rounded down to the second "
            "on its own clock; set clock_skew_margin (CDC_BACKFILL_SKEW_SECONDS) to at least "
            f"{defaults.MIN_SKEW_SECONDS} s"
        )


@dataclass(frozen=True)
class HorizonRules:
    """The horizons a backfill of ``consumer`` may take at ``now`` (epoch seconds)."""

    consumer: str
    now: int
    skew_seconds: int
    progress: ConsumerProgress | None
    retention_seconds: int = defaults.STREAM_RETENTION_SECONDS

    @property
    def latest(self) -> int:
        return self.now - self.skew_seconds

    @property
    def oldest(self) -> int:
        return self.now - self.retention_seconds + defaults.RETENTION_MARGIN_SECONDS

    def decide(self, given: int | None) -> int:
        """``given``, checked; else the default (see the module docstring)."""
        check_skew(self.skew_seconds)
        progress = self._progress()
        applied = progress.applied_until_us // MICROSECONDS_PER_SECOND
        if given is None:
            return self._within_retention(min(self.latest, applied), "the default horizon")
        horizon = check_horizon_value(given)
        if horizon > self.latest:
            raise BackfillRefusedError(
                f"horizon {horizon} is later than the start time less the skew margin "
                f"({self.latest}): it is in the future, or a change made after the scan started "
                f"could be stamped before it and lose to an older row; give a horizon <= "
                f"{self.latest}, or none"
            )
        self._within_retention(horizon, "horizon")
        self._check_read(horizon, progress, applied)
        return horizon

    def _within_retention(self, horizon: int, what: str) -> int:
        if horizon >= self.oldest:
            return horizon
        default = what != "horizon"
        raise BackfillRefusedError(
            f"{what} {horizon} is older than the stream's retention "
            f"({self.retention_seconds // 3600} h) less a margin "
            f"({defaults.RETENTION_MARGIN_SECONDS // 3600} h): changes after it may have been "
            "trimmed before the consumer read them, and the view would stay stale; "
            + (
                f"consumer {self.consumer} has applied nothing newer (a quiet table, or a "
                "consumer behind): let it apply a change, then start again"
                if default
                else f"give a horizon >= {self.oldest}, or none"
            )
        )

    def _progress(self) -> ConsumerProgress:
        if self.progress is None:
            raise BackfillRefusedError(
                f"consumer {self.consumer} has recorded no progress: set CDC_RECORD_PROGRESS=1 "
                "on its function (ViewBackfill does) and let it apply a change, so the backfill "
                "knows it reads the stream",
                BackfillRefusal.NO_PROGRESS,
            )
        return self.progress

    def _check_read(self, horizon: int, progress: ConsumerProgress, applied: int) -> None:
        if horizon > applied:
            raise BackfillRefusedError(
                f"horizon {horizon} is after what consumer {self.consumer} has applied "
                f"({applied}): it has not passed the horizon yet; wait for it, or give a "
                f"horizon <= {applied}"
            )
        if progress.first_applied_us is None:
            return
        first = -(-progress.first_applied_us // MICROSECONDS_PER_SECOND)  # its second, up
        if horizon < first:
            raise BackfillRefusedError(
                f"horizon {horizon} is before consumer {self.consumer}'s first recorded change "
                f"({first}): changes before that never reached it; give a horizon >= {first}, "
                "or none"
            )
