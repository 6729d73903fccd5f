"""The one error of ``make deploy-local``: a step failed, and its log says why."""

from __future__ import annotations

from pathlib import Path


class DeployLocalError(Exception):
    """Base class of this package's errors."""


class StepFailed(DeployLocalError):
    """Step ``step`` failed for ``reason``; ``log`` holds its output (None: nothing logged)."""

    def __init__(self, step: str, reason: str, log: Path | None = None) -> None:
        self.step = step
        self.reason = reason
        self.log = log
        super().__init__(self.line())

    def line(self) -> str:
        """The one line a person reads: the step, the reason and the log file."""
        where = f"; log: {self.log}" if self.log is not None else ""
        return f"deploy-local: step '{self.step}' failed: {self.reason}{where}"
