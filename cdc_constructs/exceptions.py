"""Errors raised by the constructs, before anything is added to the construct tree."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One invalid prop: which prop, the value given, and what would be allowed."""

    prop: str
    value: Any
    allowed: str

    def __str__(self) -> str:
        return f"{self.prop}={self.value!r}: {self.allowed}"


class CdcError(Exception):
    """Base class of every error raised by cdc_constructs."""


class CdcConfigurationError(CdcError, ValueError):
    """Props that would build an unsafe or invalid pipeline; lists every problem at once."""

    def __init__(self, construct: str, problems: Sequence[Problem]) -> None:
        self.construct = construct
        self.problems = tuple(problems)
        count = len(self.problems)
        lines = [f"{construct}: {count} invalid prop{'s' if count != 1 else ''}:"]
        lines += [f"  - {problem}" for problem in self.problems]
        super().__init__("\n".join(lines))


class FanOutConfigurationError(CdcConfigurationError):
    """StreamFanOut props that cannot make a safe pipe; ``problems`` lists each one."""


class RedriveConfigurationError(CdcConfigurationError):
    """StreamRedrive props that cannot make a working redrive; ``problems`` lists each one."""


class CdcAssetError(CdcError, FileNotFoundError):
    """The Lambda code shipped with the library (lambda_src) cannot be found."""
