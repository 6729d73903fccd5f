"""Structured logs: one JSON object per line on stdout, which CloudWatch Logs indexes as JSON.

The runtime writes one line per batch (``batch processed``) and one per failure
(``record quarantined``, ``record failed``, ``batch rejected``).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Literal, TextIO

from cdc_consumer.quarantine_shapes import ErrorDescription

Level = Literal["INFO", "WARNING", "ERROR"]


def log(level: Level, message: str, stream: TextIO | None = None, **fields: Any) -> None:
    """Write ``{"level", "message", "timestamp", **fields}`` as one JSON line."""
    line = {"level": level, "message": message, "timestamp": round(time.time(), 3), **fields}
    print(json.dumps(line, default=str), file=stream or sys.stdout, flush=True)


def describe_error(error: BaseException) -> dict[str, str]:
    """``{"type", "message"}`` of an exception, as the logs and the quarantine message carry it."""
    return ErrorDescription.of(error).to_dict()
