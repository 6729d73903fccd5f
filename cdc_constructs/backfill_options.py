"""ViewBackfill's props: which consumer is backfilled, how the table is split and paced, how
long a backfill may run; each checked before anything is made."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration, Size, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns

from cdc_constructs import defaults
from cdc_constructs.backfill_sources import check_consumer
from cdc_constructs.exceptions import Problem
from cdc_constructs.validation import (
    check_duration,
    check_function_timeout,
    check_instance,
    check_range,
    check_whole_number,
)

__all__ = ["BackfillOptions", "default_total_segments"]

_STEP_FUNCTIONS_MAX_SECONDS = 365 * 24 * 3600
"""A standard state machine execution runs for at most a year."""

_MAX_SKEW_SECONDS = 3600
"""The largest clock-skew margin accepted: an hour, far past any clock's drift."""


@dataclass(frozen=True)
class BackfillOptions:
    """The props of :class:`~cdc_constructs.ViewBackfill` (its docstring documents each)."""

    consumer: Any
    member: str | None = None
    total_segments: Any = None
    table_size: Size | None = None
    max_concurrency: Any = defaults.BACKFILL_MAX_CONCURRENCY
    items_per_second: Any = defaults.BACKFILL_ITEMS_PER_SECOND
    page_size: Any = defaults.BACKFILL_PAGE_SIZE
    clock_skew_margin: Duration | None = None
    timeout: Duration | None = None
    segment_timeout: Duration | None = None
    memory_size: Any = defaults.BACKFILL_MEMORY_SIZE_MB
    alarm_topic: sns.ITopic | None = None
    dashboard: cloudwatch.Dashboard | None = None
    log_retention: logs.RetentionDays | None = None

    def problems(self) -> list[Problem]:
        found = check_consumer(self.consumer, self.member)
        found += self._segment_problems()
        found += self._rate_problems()
        found += check_duration(
            "timeout", self.execution_timeout, 60, _STEP_FUNCTIONS_MAX_SECONDS, "a year at most"
        )
        found += check_function_timeout("segment_timeout", self.function_timeout)
        found += check_whole_number(
            "memory_size", self.memory_size, *defaults.LAMBDA_MEMORY_RANGE_MB
        )
        if self.clock_skew_margin is not None:
            found += check_duration(
                "clock_skew_margin", self.clock_skew_margin, 0, _MAX_SKEW_SECONDS
            )
        found += check_instance("dashboard", self.dashboard, cloudwatch.Dashboard, "a Dashboard")
        found += check_instance(
            "log_retention", self.log_retention, logs.RetentionDays, "a logs.RetentionDays"
        )
        return found

    def _segment_problems(self) -> list[Problem]:
        found = check_whole_number(
            "max_concurrency", self.max_concurrency, *defaults.BACKFILL_MAX_CONCURRENCY_RANGE
        )
        if self.total_segments is not None:
            found += check_whole_number(
                "total_segments",
                self.total_segments,
                1,
                defaults.BACKFILL_MAX_SEGMENTS,
                "the segment list passes through the state machine's 256 KB payload",
            )
            if self.table_size is not None:
                found.append(
                    Problem(
                        "table_size",
                        _describe_size(self.table_size),
                        "omitted when total_segments is given (it only sets the default of "
                        "total_segments)",
                    )
                )
        elif self.table_size is not None and not _is_size(self.table_size):
            found.append(Problem("table_size", self.table_size, "an aws_cdk.Size"))
        return found

    def _rate_problems(self) -> list[Problem]:
        found = check_whole_number("page_size", self.page_size, *defaults.BACKFILL_PAGE_SIZE_RANGE)
        if self.items_per_second is not None:
            found += check_range(
                "items_per_second",
                self.items_per_second,
                1,
                math.inf,
                "items read per second over all segments, or None for no limit",
            )
        return found

    @property
    def execution_timeout(self) -> Duration:
        return self.timeout or Duration.seconds(defaults.BACKFILL_EXECUTION_TIMEOUT_SECONDS)

    @property
    def function_timeout(self) -> Duration:
        return self.segment_timeout or Duration.seconds(defaults.BACKFILL_TIMEOUT_SECONDS)

    @property
    def segments(self) -> int:
        """``total_segments``, or its default from ``table_size`` (checked first)."""
        if self.total_segments is not None:
            return int(self.total_segments)
        return default_total_segments(self.table_size, int(self.max_concurrency))

    @property
    def segment_items_per_second(self) -> float | None:
        """One segment invocation's share of ``items_per_second``: at most ``max_concurrency``
        invocations run at once, each paced to this rate."""
        if self.items_per_second is None:
            return None
        return float(self.items_per_second) / int(self.max_concurrency)


def default_total_segments(table_size: Size | None, max_concurrency: int) -> int:
    """One segment per 2 GB of ``table_size`` (defaults.BACKFILL_SEGMENT_BYTES), at least
    ``max_concurrency`` (fewer segments would leave concurrency unused), at most
    defaults.BACKFILL_MAX_SEGMENTS."""
    by_size = 1
    if table_size is not None:
        by_size = math.ceil(table_size.to_bytes() / defaults.BACKFILL_SEGMENT_BYTES)
    return min(max(by_size, max_concurrency, 1), defaults.BACKFILL_MAX_SEGMENTS)


def _is_size(value: Any) -> bool:
    return isinstance(value, Size) and not Token.is_unresolved(value)


def _describe_size(value: Any) -> Any:
    return f"{value.to_bytes()} bytes" if _is_size(value) else value
