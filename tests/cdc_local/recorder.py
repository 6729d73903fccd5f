"""Where the test handlers report what they received: a process-wide list the tests read.

The handlers run in-process, each with its own copy of its modules, but this module lives
outside their asset directories, so every handler shares the process's one copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Invocation:
    probe: str
    sequence_numbers: list[str]
    event: dict[str, Any]
    remaining_ms: int
    environment: dict[str, str]
    function_name: str
    extra: dict[str, Any] = field(default_factory=dict)


INVOCATIONS: list[Invocation] = []
#: Sequence numbers the probe handler has seen (for its fail-once / report-once modes).
SEEN: set[str] = set()
#: Switches a test sets for the probe handler (see its docstring).
OPTIONS: dict[str, int] = {}


def record(probe: str, event: dict[str, Any], context: Any, environment: dict[str, str]) -> None:
    INVOCATIONS.append(
        Invocation(
            probe=probe,
            sequence_numbers=[r["dynamodb"]["SequenceNumber"] for r in event["Records"]],
            event=event,
            remaining_ms=context.get_remaining_time_in_millis(),
            environment=environment,
            function_name=context.function_name,
        )
    )


def clear() -> None:
    INVOCATIONS.clear()
    SEEN.clear()
    OPTIONS.clear()
