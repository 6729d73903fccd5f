"""ViewBackfill's props: which consumer is backfilled, how the table is split and paced, how
long a backfill may run; each checked before anything is made."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration
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

__all__ = ["BackfillOptions"]

_STEP_FUNCTIONS_MAX_SECONDS = 365 * 24 * 3600
"""A standard state machine execution runs for at most a year."""

_MAX_SKEW_SECONDS = 3600
"""The largest clock-skew margin accepted: an hour, far past any clock's drift."""

_MIN_SKEW_SECONDS = 1
"""The smallest clock-skew margin accepted (the runtime's minimum, which its start step
enforces too): DynamoDB stamps a change rounded down to the second on its own clock."""


@dataclass(frozen=True)
class BackfillOptions:
    """The props of :class:`~cdc_constructs.ViewBackfill` (its docstring documents each)."""

    consumer: Any
    member: str | None = None
    total_segments: Any = None
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
                "clock_skew_margin", self.clock_skew_margin, _MIN_SKEW_SECONDS, _MAX_SKEW_SECONDS
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
    def segments(self) -> int | None:
        """``total_segments``; None: the start step decides from the table's size when the
        backfill starts (DescribeTable)."""
        return None if self.total_segments is None else int(self.total_segments)

    @property
    def segment_items_per_second(self) -> float | None:
        """One segment invocation's share of ``items_per_second``: at most ``max_concurrency``
        invocations run at once, each paced to this rate."""
        if self.items_per_second is None:
            return None
        return float(self.items_per_second) / int(self.max_concurrency)
