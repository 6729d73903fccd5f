"""Tumbling windows of a stream event source mapping (``TumblingWindowInSeconds``), emulated as
AWS's Lambda guide describes them ("Implementing stateful DynamoDB stream processing in
Lambda", and the same page for Kinesis; the evidence and its gaps: docs/design.md §12,
"Tumbling windows: the evidence"):

- A record belongs to the window its insertion time falls in (``ApproximateCreationDateTime``;
  Kinesis' ``approximateArrivalTimestamp``): windows are ``TumblingWindowInSeconds`` long and
  aligned to multiples of it (AWS's example event shows ``17:00:00Z``..``17:05:00Z``). A batch
  holds records of one window only: it is cut where the next window starts.
- Every invocation of a windowed mapping carries, beside ``Records``: ``window``
  (``{"start", "end"}``, ISO 8601 UTC), ``state`` (what the previous response of the same
  shard and window returned; ``{}`` when the window opens), ``shardId``, ``eventSourceARN``,
  ``isFinalInvokeForWindow`` and ``isWindowTerminatedEarly``.
- The response must carry ``state`` (a JSON object): one without is a failed invocation,
  retried as a function error is (bisect, ``MaximumRetryAttempts``, ``MaximumRecordAgeInSeconds``).
  A ``"state": null`` counts as none (AWS does not say; this is the stricter reading).
- When the window is over (its end passed on the mapping's clock, the shard's next record is
  of a later window, or the shard is closed and read to its end: "when the shard ends, Lambda
  considers the window closed, and the child shards start their own window in a fresh
  state"), and every record of it is settled, the function gets a final invocation of the
  window: ``isFinalInvokeForWindow: true``, the window's last state, and no records (AWS's
  guide does not say whether a final invocation can carry records; the runtime handles both).
  It is retried until it succeeds, and the shard waits: "if invocation is unsuccessful, your
  Lambda function suspends further processing until a successful invocation". The shard's
  children start after it.
- A window beside a ``ParallelizationFactor`` above 1 is refused, as CreateEventSourceMapping
  refuses it (``InvalidParameterValueException``), and so is a window outside 0..900 s.

Not emulated: the early end of a window whose state exceeds 1 MB (``isWindowTerminatedEarly``
is always false here; the consumer runtime answers ``"state": {}``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cdc_consumer.windows import (
    FINAL_INVOKE_KEY,
    SHARD_ID_KEY,
    WINDOW_KEY,
    WINDOW_STATE_KEY,
    WINDOW_TERMINATED_EARLY_KEY,
)

from cdc_local.exceptions import LocalPipelineError
from cdc_local.functions import InvocationResult

__all__ = [
    "MAX_TUMBLING_WINDOW_SECONDS",
    "WINDOW_WITH_PARALLELIZATION",
    "OpenWindow",
    "check_tumbling_window",
    "has_state",
    "in_one_window",
    "iso",
    "window_for",
    "window_of",
]

#: CreateEventSourceMapping's range of ``TumblingWindowInSeconds`` (0: no window).
MAX_TUMBLING_WINDOW_SECONDS = 900
#: What CreateEventSourceMapping answers a window beside a parallelization factor above 1.
WINDOW_WITH_PARALLELIZATION = (
    "Parallelization factor must be equal to 1 when tumbling window period is configured"
)


def check_tumbling_window(window_seconds: int, parallelization_factor: int) -> None:
    """Refuse what CreateEventSourceMapping refuses: a window outside 0..900 s, or a window
    beside a parallelization factor above 1."""
    if not 0 <= window_seconds <= MAX_TUMBLING_WINDOW_SECONDS:
        raise LocalPipelineError(
            f"ValidationException: Value '{window_seconds}' at 'tumblingWindowInSeconds' failed "
            f"to satisfy constraint: Member must be in 0..{MAX_TUMBLING_WINDOW_SECONDS} "
            "(seconds; 0 means no window)"
        )
    if window_seconds and parallelization_factor > 1:
        raise LocalPipelineError(
            f"InvalidParameterValueException: {WINDOW_WITH_PARALLELIZATION} "
            f"(TumblingWindowInSeconds {window_seconds}, ParallelizationFactor "
            f"{parallelization_factor}): set the factor to 1, or the window to 0"
        )


def window_of(created_at: float, length: int) -> tuple[float, float]:
    """The window (start, end) in epoch seconds that a record created at ``created_at`` falls
    in: ``length`` seconds long, aligned to multiples of ``length``."""
    start = math.floor(created_at / length) * length
    return float(start), float(start + length)


def in_one_window(
    batch: list[dict[str, Any]], length: int, created_at: Callable[[Mapping[str, Any]], float]
) -> list[dict[str, Any]]:
    """``batch`` up to the first record of a later window (all of it without a window, when
    ``length`` is 0); ``created_at``: when a record was inserted."""
    if not length:
        return batch
    start = window_of(created_at(batch[0]), length)[0]
    for index, record in enumerate(batch):
        if window_of(created_at(record), length)[0] != start:
            return batch[:index]
    return batch


def iso(epoch: float) -> str:
    """Epoch seconds as the event writes a window's bounds (``2020-07-30T17:00:00Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def has_state(response: Any) -> bool:
    """Whether a windowed invocation's response carries ``state`` (a JSON object)."""
    return isinstance(response, Mapping) and isinstance(response.get(WINDOW_STATE_KEY), Mapping)


@dataclass
class OpenWindow:
    """The window a shard's invocations are in, with the state the last response returned."""

    start: float
    end: float
    state: dict[str, Any] = field(default_factory=dict)
    #: Failed final invocations in a row (the shard waits for one to succeed).
    final_attempts: int = 0

    def event(
        self,
        records: Sequence[Mapping[str, Any]],
        shard_id: str,
        event_source_arn: str,
        *,
        final: bool = False,
    ) -> dict[str, Any]:
        """The invocation's event: ``records`` and the window's fields."""
        return {
            "Records": list(records),
            WINDOW_KEY: {"start": iso(self.start), "end": iso(self.end)},
            WINDOW_STATE_KEY: dict(self.state),
            SHARD_ID_KEY: shard_id,
            "eventSourceARN": event_source_arn,
            FINAL_INVOKE_KEY: final,
            WINDOW_TERMINATED_EARLY_KEY: False,
        }

    def answered(self, result: InvocationResult) -> InvocationResult:
        """``result`` of an invocation in the window: a response without ``state`` is a failed
        invocation; one with it passes its state to the window's next invocation."""
        if result.failed:
            return result
        if not has_state(result.response):
            return replace(
                result,
                error_type="MissingWindowState",
                error_message="a tumbling window's response must carry state; this one has none",
            )
        self.state = dict(result.response[WINDOW_STATE_KEY])
        return result


def window_for(current: OpenWindow | None, created_at: float, length: int) -> OpenWindow:
    """The window a batch whose first record was inserted at ``created_at`` is sent in: the
    ``current`` one, or else a new one (a window opens with its first batch, in a fresh state)."""
    start, end = window_of(created_at, length)
    return current if current is not None and current.start == start else OpenWindow(start, end)
