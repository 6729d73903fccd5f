"""Filter patterns for DynamoDB stream event source mappings (and EventBridge Pipes).

Each helper returns a plain dict: the filter pattern, in the syntax Lambda and Pipes share
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html). A consumer
given several patterns receives a record when it matches ANY of them; to require several
conditions at once, merge them into one pattern with :meth:`StreamFilters.all_of`.

Patterns match the record as DynamoDB delivers it, so image attributes are typed:
``{"dynamodb": {"NewImage": {"status": {"S": ["PAID"]}}}}``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

from cdc_constructs.exceptions import CdcConfigurationError, Problem

Pattern = dict[str, Any]

EVENT_NAMES = ("INSERT", "MODIFY", "REMOVE")
NUMERIC_OPERATORS = ("=", "<", "<=", ">", ">=")

# What a TTL deletion looks like in the stream (DynamoDB developer guide, "Time to Live").
_TTL_IDENTITY = {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]}


class StreamFilters:
    """Builders of filter patterns. Every method returns a new dict; none has side effects."""

    @staticmethod
    def ttl_deletions_only() -> Pattern:
        """REMOVE records written by DynamoDB's TTL sweeper (``userIdentity`` is the service)."""
        return {"eventName": ["REMOVE"], "userIdentity": copy.deepcopy(_TTL_IDENTITY)}

    @staticmethod
    def exclude_ttl_deletions() -> Pattern:
        """Every record except TTL deletions.

        Only TTL deletions carry ``userIdentity``; the pattern matches records where
        ``userIdentity.type`` does not exist (``exists: false`` matches absent fields).

        The trap: the consumer then never sees an item expire. Right for a view of everything
        ever written (orders placed), wrong for a view of the items that exist now (a count or
        a sum of live items, ``Contributions``): it would keep every expired item for ever. The
        constructs cannot tell which view a handler keeps; the local pipeline warns when a
        mapping drops a TTL deletion it meets (``cdc-local`` prints it).
        """
        return {"userIdentity": {"type": [{"exists": False}]}}

    @staticmethod
    def event_names(*names: str) -> Pattern:
        """Records whose ``eventName`` is one of ``names`` (INSERT, MODIFY, REMOVE)."""
        unknown = [name for name in names if name not in EVENT_NAMES]
        if not names or unknown:
            raise CdcConfigurationError(
                "StreamFilters.event_names",
                [Problem("names", list(names), f"one or more of {', '.join(EVENT_NAMES)}")],
            )
        return {"eventName": list(dict.fromkeys(names))}

    @staticmethod
    def new_image_attribute_equals(attribute: str, value: str | int | float | bool) -> Pattern:
        """Records whose new image has ``attribute`` equal to ``value``.

        A ``str`` matches a String attribute, a ``bool`` a Boolean, an ``int``/``float`` a
        Number (compared numerically, so 20 matches "20" and "20.0").

        :param attribute: the new image's attribute name.
        :param value: the value it must equal; its Python type picks the DynamoDB type.
        """
        _require_attribute("StreamFilters.new_image_attribute_equals", attribute)
        condition: dict[str, list[Any]]
        if isinstance(value, bool):
            condition = {"BOOL": [value]}
        elif isinstance(value, int | float):
            condition = {"N": [{"numeric": ["=", value]}]}
        elif isinstance(value, str):
            condition = {"S": [value]}
        else:
            raise CdcConfigurationError(
                "StreamFilters.new_image_attribute_equals",
                [Problem("value", value, "a str, int, float or bool")],
            )
        return {"dynamodb": {"NewImage": {attribute: condition}}}

    @staticmethod
    def new_image_attribute_prefix(attribute: str, prefix: str) -> Pattern:
        """Records whose new image has a String ``attribute`` starting with ``prefix``.

        :param attribute: the new image's attribute name (a String attribute).
        :param prefix: the text its value starts with (not empty).
        """
        _require_attribute("StreamFilters.new_image_attribute_prefix", attribute)
        _require_prefix("StreamFilters.new_image_attribute_prefix", prefix)
        return {"dynamodb": {"NewImage": {attribute: {"S": [{"prefix": prefix}]}}}}

    @staticmethod
    def new_image_attribute_numeric(
        attribute: str, *conditions: tuple[str, int | float]
    ) -> Pattern:
        """Records whose new image has a Number ``attribute`` meeting every condition.

        ``new_image_attribute_numeric("amount", (">=", 100), ("<", 1000))``. Operators:
        ``=``, ``<``, ``<=``, ``>``, ``>=``.

        :param attribute: the new image's attribute name (a Number attribute).
        :param conditions: ``(operator, number)`` pairs, all of which must hold.
        """
        _require_attribute("StreamFilters.new_image_attribute_numeric", attribute)
        bad = [
            c
            for c in conditions
            if not (
                isinstance(c, tuple)
                and len(c) == 2
                and c[0] in NUMERIC_OPERATORS
                and isinstance(c[1], int | float)
                and not isinstance(c[1], bool)
                and math.isfinite(c[1])
            )
        ]
        if not conditions or bad:
            raise CdcConfigurationError(
                "StreamFilters.new_image_attribute_numeric",
                [
                    Problem(
                        "conditions",
                        list(conditions),
                        "one or more (operator, finite number) tuples, operator one of "
                        + ", ".join(NUMERIC_OPERATORS),
                    )
                ],
            )
        flat: list[Any] = [item for condition in conditions for item in condition]
        return {"dynamodb": {"NewImage": {attribute: {"N": [{"numeric": flat}]}}}}

    @staticmethod
    def key_prefix(attribute: str, prefix: str) -> Pattern:
        """Records whose String key ``attribute`` starts with ``prefix``.

        Keys are in every record whatever the stream view type, so this works on KEYS_ONLY
        streams too (the transactional outbox uses it).

        :param attribute: the key attribute's name (the partition or sort key, a String).
        :param prefix: the text the key starts with (not empty).
        """
        _require_attribute("StreamFilters.key_prefix", attribute)
        _require_prefix("StreamFilters.key_prefix", prefix)
        return {"dynamodb": {"Keys": {attribute: {"S": [{"prefix": prefix}]}}}}

    @staticmethod
    def all_of(*patterns: Mapping[str, Any]) -> Pattern:
        """One pattern matching records that match every one of ``patterns`` (logical AND).

        Nested objects are merged; the same field constrained by two patterns is an error
        (a filter pattern cannot say "this field matches X and also Y").
        """
        merged: Pattern = {}
        problems: list[Problem] = []
        for pattern in patterns:
            _merge_into(merged, pattern, "", problems)
        if not patterns or problems:
            problems = problems or [Problem("patterns", [], "at least one pattern")]
            raise CdcConfigurationError("StreamFilters.all_of", problems)
        return merged


def _merge_into(
    target: dict[str, Any], source: Mapping[str, Any], path: str, problems: list[Problem]
) -> None:
    for key, value in source.items():
        where = f"{path}.{key}" if path else key
        if key not in target:
            target[key] = copy.deepcopy(value)
        elif isinstance(target[key], dict) and isinstance(value, Mapping):
            _merge_into(target[key], value, where, problems)
        else:
            problems.append(
                Problem(where, value, f"one condition per field; already {target[key]!r}")
            )


def _require_attribute(where: str, attribute: str) -> None:
    if not isinstance(attribute, str) or not attribute:
        raise CdcConfigurationError(where, [Problem("attribute", attribute, "a non-empty str")])


def _require_prefix(where: str, prefix: str) -> None:
    if not isinstance(prefix, str) or not prefix:
        raise CdcConfigurationError(where, [Problem("prefix", prefix, "a non-empty str")])
