"""What the deployed functions wrote to their CloudWatch Logs groups: the runtime's structured
JSON lines and its embedded-metric-format lines (docs/interfaces.md §3), counted; a metric of
those lines summed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LogCounts:
    group: str
    json_lines: int
    """JSON log lines with a ``message`` (one per batch and per failure)."""
    emf_lines: int
    """Embedded-metric-format lines (a ``_aws`` object): the runtime's metrics."""


def count_log_lines(logs: Any, group: str) -> LogCounts:
    """Count the runtime's lines among every event of log group ``group`` (none if absent)."""
    json_lines = emf_lines = 0
    for line in _json_lines(logs, group):
        if "_aws" in line:
            emf_lines += 1
        elif "message" in line:
            json_lines += 1
    return LogCounts(group, json_lines, emf_lines)


def sum_metric(logs: Any, group: str, metric: str) -> int:
    """The sum of ``metric`` over the embedded-metric-format lines of log group ``group``."""
    return sum(
        line[metric]
        for line in _json_lines(logs, group)
        if "_aws" in line and isinstance(line.get(metric), int)
    )


def _json_lines(logs: Any, group: str) -> Iterator[dict[str, Any]]:
    """Every event of ``group`` that is a JSON object (none if the group is absent)."""
    try:
        pages = list(logs.get_paginator("filter_log_events").paginate(logGroupName=group))
    except logs.exceptions.ResourceNotFoundException:
        pages = []
    for page in pages:
        for event in page.get("events", []):
            try:
                line = json.loads(event.get("message", ""))
            except json.JSONDecodeError:
                continue
            if isinstance(line, dict):
                yield line
