"""Reading the fields of a message shape: what each ``from_dict`` here refuses, and how.

Every message shape the packages share (the quarantine message, AWS's on-failure record, the
outbox item, the backfill's inputs and outputs, a consumer group's members) reads a document with
these, and raises :class:`ContractError` naming the field, the value and what was expected.
Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "ContractError",
    "as_object",
    "integer_field",
    "optional_text_field",
    "require_field",
    "text_field",
]


class ContractError(ValueError):
    """A message that does not have the contract's shape (``from_dict`` of any shape here)."""


def as_object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ContractError(f"{what} is {type(value).__name__}, not an object")
    return value


def require_field(document: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in document:
        raise ContractError(f"{what} lacks {key!r} (keys: {sorted(document)})")
    return document[key]


def integer_field(document: Mapping[str, Any], key: str, what: str, default: Any = ...) -> Any:
    value = document.get(key, default) if default is not ... else require_field(document, key, what)
    if value is None and default is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ContractError(f"{what}: {key} must be an integer, got {value!r}")
    return value


def text_field(document: Mapping[str, Any], key: str, what: str) -> str:
    value = require_field(document, key, what)
    if not isinstance(value, str) or not value:
        raise ContractError(f"{what}: {key} must be a non-empty string, got {value!r}")
    return value


def optional_text_field(document: Mapping[str, Any], key: str, what: str) -> str | None:
    value = document.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ContractError(f"{what}: {key} must be a non-empty string or null, got {value!r}")
    return value
