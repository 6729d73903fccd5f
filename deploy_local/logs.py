"""What the deployed consumer wrote to its CloudWatch Logs group: the runtime's structured JSON
lines and its embedded-metric-format lines (docs/interfaces.md §3), counted."""

from __future__ import annotations

import json
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
            if isinstance(line, dict) and "_aws" in line:
                emf_lines += 1
            elif isinstance(line, dict) and "message" in line:
                json_lines += 1
    return LogCounts(group, json_lines, emf_lines)
