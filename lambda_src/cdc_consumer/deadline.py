"""The invocation's deadline: its remaining time against the safety margin.

One :class:`Deadline` per batch, read by the batch loop between records (stop and report the
next record instead of timing out), by the write step's patience with other writers
(:mod:`cdc_consumer.contention`) and by the side effects' claims (:mod:`cdc_consumer.claims`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from cdc_consumer import defaults
from cdc_consumer.exceptions import DeadlineError


class LambdaContext(Protocol):
    """The part of Lambda's context object the processor uses."""

    def get_remaining_time_in_millis(self) -> int: ...


@dataclass
class Deadline:
    """The invocation's remaining time against the safety margin.

    Unless ``fixed_margin_ms`` is given, the margin follows the function's timeout
    (:func:`cdc_consumer.defaults.safety_margin_ms`), read as the time remaining at the first
    check, which comes first thing in ``handle``: Lambda does not tell a function its
    configured timeout, and at that point the remaining time is that timeout less the
    handler's own preamble (milliseconds).
    """

    context: LambdaContext | None
    fixed_margin_ms: int | None = None
    margin_ms: int | None = None
    #: The remaining time at the first check: the function's timeout, as far as we can tell
    #: (a consumer group's member is given the group's: see :class:`cdc_consumer.batch.GroupTurn`).
    timeout_ms: int | None = None
    #: Whether the invocation took records before this batch's first (a group member's turn
    #: after others): then a deadline at the first record is a partial stop, not an error.
    taken_before: bool = False

    def remaining(self) -> int | None:
        """The invocation's remaining milliseconds (None without a Lambda context)."""
        context = self.context
        return None if context is None else int(context.get_remaining_time_in_millis())

    def near(self) -> tuple[bool, int | None]:
        """Whether less than the margin is left, and the remaining milliseconds."""
        remaining = self.remaining()
        if remaining is None:
            return False, None
        if self.margin_ms is None:
            self.timeout_ms = remaining if self.timeout_ms is None else self.timeout_ms
            self.margin_ms = (
                defaults.safety_margin_ms(self.timeout_ms)
                if self.fixed_margin_ms is None
                else self.fixed_margin_ms
            )
        return remaining < self.margin_ms, remaining

    def time_left_ms(self) -> int | None:
        """The remaining time less the margin (None without a Lambda context)."""
        _, remaining = self.near()
        return None if remaining is None else remaining - (self.margin_ms or 0)

    def error(self, remaining: int | None) -> DeadlineError:
        return DeadlineError(
            f"the invocation had {remaining} ms left at its first record, less than the safety "
            f"margin of {self.margin_ms} ms, so it could take no record. The margin is a fifth "
            f"of the function's timeout, between {defaults.MIN_SAFETY_MARGIN_MS} and "
            f"{defaults.MAX_SAFETY_MARGIN_MS} ms, and {defaults.MIN_RECORD_TIME_MS} ms must "
            "remain for records after it: give the function a timeout of at least "
            f"{defaults.MIN_FUNCTION_TIMEOUT_SECONDS} s (Lambda's default is 3 s)"
        )
