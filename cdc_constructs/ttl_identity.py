"""How a filter pattern treats the TTL service identity (``userIdentity``), whatever way it is
written: by :class:`~cdc_constructs.StreamFilters`, by hand, inside ``$or``, or under ``data`` (a
Kinesis record's change).

A DynamoDB change carries ``userIdentity {type: Service, principalId: dynamodb.amazonaws.com}``
only when it is a TTL deletion in the region whose TTL process deleted the item; every other
record, a TTL deletion replicated from another region among them, has none (DynamoDB developer
guide, "Time to Live"). So a pattern's condition on ``userIdentity`` either needs the identity
(:attr:`IdentityUse.REQUIRES`: it drops replicated expiries), rules it out
(:attr:`IdentityUse.EXCLUDES`: it lets them through), accepts both, or neither. Which one is
read with the runtime's own matcher (``cdc_consumer.filter_patterns``), against the identity and
against its absence, so ``{"principalId": ["dynamodb.amazonaws.com"]}`` alone, a ``prefix`` or an
``anything-but`` are classified as the mapping would match them.

CdcChecks' CDC-ESM13 and the constructs' widening (:mod:`cdc_constructs.replication`) share it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from enum import Enum
from typing import Any

from cdc_consumer.exceptions import FilterPatternError
from cdc_consumer.expiry import TTL_PRINCIPAL
from cdc_consumer.filter_patterns import FilterPattern

__all__ = ["IdentityUse", "alternatives", "identity_uses", "names_identity", "requires_identity"]

_IDENTITY = "userIdentity"
_WRAPPED_CHANGE = "data"
"""Where a record that wraps the DynamoDB change (a Kinesis record's) holds it."""


class IdentityUse(Enum):
    """What one alternative of a pattern asks of ``userIdentity``."""

    ANY = "any"
    """It names no identity, or accepts a record with it and one without."""
    REQUIRES = "requires"
    """Only a record with the TTL identity: a replicated expiry never matches."""
    EXCLUDES = "excludes"
    """Only a record without it: a replicated expiry matches, as any delete."""
    NEVER = "never"
    """Neither: no DynamoDB change has another identity, so the alternative matches nothing."""


def alternatives(pattern: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], ...]]:
    """The pattern as the alternatives its ``$or`` spells, each the parts (mappings of fields
    without ``$or``) a record must all match; a record matches the pattern if and only if it
    matches every part of one alternative."""
    fields = {key: value for key, value in pattern.items() if key != "$or"}
    choices = pattern.get("$or")
    if not isinstance(choices, list):
        yield (fields,)
        return
    for choice in choices:
        for parts in alternatives(choice) if isinstance(choice, Mapping) else ():
            yield (fields, *parts)


def identity_uses(pattern: Any) -> list[IdentityUse]:
    """What each alternative of ``pattern`` (a dict; a Kinesis record's with the change under
    ``data``) asks of the TTL identity; ``[]`` for anything that is not a pattern."""
    change, wrapped = _change(pattern)
    return [_use(_conditions(parts), wrapped) for parts in alternatives(change)]


def requires_identity(pattern: Any) -> bool:
    """Whether an alternative of ``pattern`` matches a TTL deletion only with the identity (so
    never a replicated one)."""
    return IdentityUse.REQUIRES in identity_uses(pattern)


def names_identity(pattern: Any) -> bool:
    """Whether ``pattern`` puts any condition on the identity, in any alternative."""
    change, _ = _change(pattern)
    return any(_conditions(parts) for parts in alternatives(change))


def _change(pattern: Any) -> tuple[Mapping[str, Any], bool]:
    """The part of ``pattern`` that matches the DynamoDB change (``data`` for a Kinesis
    record's), and whether the record wraps the change; ``{}`` for what is not a pattern."""
    if not isinstance(pattern, Mapping):
        return {}, False
    data = pattern.get(_WRAPPED_CHANGE)
    return (data, True) if isinstance(data, Mapping) else (pattern, False)


def _conditions(parts: tuple[Mapping[str, Any], ...]) -> list[Any]:
    """The conditions an alternative's ``parts`` put on ``userIdentity``."""
    return [part[_IDENTITY] for part in parts if _IDENTITY in part]


def _use(conditions: list[Any], wrapped: bool) -> IdentityUse:
    if not conditions:
        return IdentityUse.ANY
    with_identity = all(_matches(c, dict(TTL_PRINCIPAL), wrapped) for c in conditions)
    without = all(_matches(c, None, wrapped) for c in conditions)
    uses = {
        (True, True): IdentityUse.ANY,
        (True, False): IdentityUse.REQUIRES,
        (False, True): IdentityUse.EXCLUDES,
        (False, False): IdentityUse.NEVER,
    }
    return uses[(with_identity, without)]


def _matches(condition: Any, identity: dict[str, str] | None, wrapped: bool) -> bool:
    """Whether the condition on ``userIdentity`` matches a change with ``identity`` (None: a
    change without it: the field absent from a stream record, ``null`` in a Kinesis record)."""
    record: dict[str, Any] = {}
    if identity is not None or wrapped:
        record[_IDENTITY] = identity
    try:
        return FilterPattern({_IDENTITY: condition}).matches(record)
    except FilterPatternError:
        return False  # refused by the filter checks, with the matcher's words
