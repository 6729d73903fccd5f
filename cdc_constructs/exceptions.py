"""Errors raised by the constructs, before anything is added to the construct tree."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One invalid prop: which prop, the value given, and what would be allowed.

    :param prop: the prop's name, as the construct takes it.
    :param value: the value given.
    :param allowed: what would be allowed, in words.
    """

    prop: str
    value: Any
    allowed: str

    def __str__(self) -> str:
        return f"{self.prop}={self.value!r}: {self.allowed}"


class CdcError(Exception):
    """Base class of every error raised by cdc_constructs."""


class CdcConfigurationError(CdcError, ValueError):
    """Props that would build an unsafe or invalid pipeline; lists every problem at once.

    :param construct: the construct refused (its class and id), which starts the message.
    :param problems: every invalid prop, one :class:`Problem` each, one line each.
    """

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
