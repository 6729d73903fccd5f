"""Lambda event filtering (``FilterCriteria``) for DynamoDB stream records.

Follows "Control which events Lambda sends to your function" (Lambda developer guide): a record is
sent to the function when it matches at least one of the mapping's patterns; a pattern matches
when every field it names matches (AND), and a field matches when any of its listed rules
matches (OR). Rules: exact values (string, number, ``null``, ``""`` for empty), ``prefix``,
``suffix``, ``equals-ignore-case``, ``anything-but`` (a value or a list, or prefix / suffix /
equals-ignore-case inside it), ``numeric`` (``=``, ``<``, ``<=``, ``>``, ``>=``, ranges), and
``exists`` (true / false; only on leaves, i.e. the ``S``/``N``/... level of an attribute), plus
``$or`` across fields. A field absent from the record matches only ``{"exists": false}``.
When the record's value is a list, the rule matches if any element matches. Any other rule is
refused when the pattern is built, so a pattern is never silently matched wrong.

DynamoDB carries numbers as strings (``{"N": "42"}``); a ``numeric`` rule placed on an ``N`` key
compares that string's number, which is how a filter on a Number attribute is written.

Used by redrive (an on-failure range covers every record between two sequence numbers, but the
event source mapping delivered only those its filters match; redrive must deliver the same) and
by the local pipeline's event source mapping. It lives in the runtime because redrive runs in
Lambda, where boto3 is the only library: no library offers Lambda's matcher in Python
(EventBridge's ``TestEventPattern`` is an API call, and moto's is private), so it is written here.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc_consumer.exceptions import FilterPatternError

__all__ = [
    "FilterCriteria",
    "FilterPattern",
    "check_filter_pattern",
    "matches_filter_pattern",
]

_MISSING = object()

_NUMERIC_OPERATORS: dict[str, Callable[[Decimal, Decimal], bool]] = {
    "=": operator.eq,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_RULE_KEYS = frozenset(
    {"prefix", "suffix", "equals-ignore-case", "anything-but", "numeric", "exists"}
)


class FilterPattern:
    """One validated pattern (the JSON of one ``FilterCriteria.Filters[].Pattern``, or its dict).

    ``where`` names the pattern in error messages (default ``"pattern"``). Raises
    :class:`~cdc_consumer.exceptions.FilterPatternError` (a ``ValueError``) naming the first part
    Lambda would reject.
    """

    def __init__(self, pattern: str | Mapping[str, Any], where: str = "pattern") -> None:
        self.source = pattern
        if isinstance(pattern, str):
            try:
                pattern = json.loads(pattern)
            except ValueError as error:
                raise FilterPatternError(
                    f"filter {where} is not JSON ({error}): {pattern!r}; expected a JSON object"
                ) from None
        if not isinstance(pattern, Mapping):
            raise FilterPatternError(
                f"filter {where} is {pattern!r}; a filter pattern must be a JSON object of fields"
            )
        _validate(pattern, where)
        self.pattern: Mapping[str, Any] = pattern

    def matches(self, record: Mapping[str, Any]) -> bool:
        """Whether ``record`` (in Lambda's event shape) matches this pattern."""
        return _match_object(self.pattern, record)


class FilterCriteria:
    """A mapping's filters: a record passes when any pattern matches; no patterns pass all.

    ``where`` names the list in error messages (default ``"filters"``: ``filters[0].eventName``).
    """

    def __init__(
        self, patterns: Sequence[str | Mapping[str, Any]] = (), where: str = "filters"
    ) -> None:
        self.patterns = [FilterPattern(p, f"{where}[{i}]") for i, p in enumerate(patterns)]

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> FilterCriteria:
        """From an event source mapping's ``FilterCriteria`` property
        (``{"Filters": [{"Pattern": str}]}``, as CloudFormation and the Lambda API carry it)."""
        filters = (properties.get("FilterCriteria") or {}).get("Filters") or []
        patterns = [f["Pattern"] for f in filters if f.get("Pattern")]
        if len(filters) != len(patterns):
            raise FilterPatternError(
                f"FilterCriteria has a filter without a Pattern ({filters!r}); aws-cdk-lib emits "
                "`Filters: [{}]` for a raw dict: build patterns with FilterCriteria.filter(...)"
            )
        return cls(patterns)

    def matches(self, record: Mapping[str, Any]) -> bool:
        """Whether ``record`` passes: no patterns, or at least one matches (Lambda ORs them)."""
        return not self.patterns or any(p.matches(record) for p in self.patterns)


def check_filter_pattern(pattern: Any, where: str = "pattern") -> None:
    """Raise :class:`~cdc_consumer.exceptions.FilterPatternError` (a ``ValueError``) naming the
    first part of ``pattern`` that Lambda would reject."""
    FilterPattern(pattern, where)


def matches_filter_pattern(pattern: str | Mapping[str, Any], record: Mapping[str, Any]) -> bool:
    """Whether ``record`` (in Lambda's event shape) matches the Lambda filter ``pattern``."""
    return FilterPattern(pattern).matches(record)


def _validate(pattern: Mapping[str, Any], where: str) -> None:
    for key, value in pattern.items():
        if key == "$or":
            if not isinstance(value, list) or len(value) < 2:
                raise FilterPatternError(
                    f"filter {where}.$or is {value!r}; $or needs a list of at least two patterns"
                )
            for index, alternative in enumerate(value):
                inner = f"{where}.$or[{index}]"
                if not isinstance(alternative, Mapping):
                    raise FilterPatternError(
                        f"filter {inner} is {alternative!r}; expected an object of fields"
                    )
                _validate(alternative, inner)
        elif isinstance(value, Mapping):
            _validate(value, f"{where}.{key}")
        elif isinstance(value, list):
            for rule in value:
                _validate_rule(rule, f"{where}.{key}")
        else:
            raise FilterPatternError(
                f"filter {where}.{key} is {value!r}; a pattern's leaf must be a list of rules "
                f"(write [{json.dumps(value)}])"
            )


def _validate_rule(rule: Any, where: str) -> None:
    if not isinstance(rule, Mapping):
        return  # an exact value
    if len(rule) != 1 or next(iter(rule)) not in _RULE_KEYS:
        raise FilterPatternError(
            f"filter {where} has matcher {rule!r}: unknown rule; Lambda accepts"
            f" {sorted(_RULE_KEYS)}"
        )
    ((name, argument),) = rule.items()
    if name == "numeric":
        if not isinstance(argument, list) or len(argument) not in (2, 4):
            raise FilterPatternError(
                f"filter {where}: numeric needs [op, n] or [op, n, op, n], got {argument!r}"
            )
        for op in argument[0::2]:
            if op not in _NUMERIC_OPERATORS:
                raise FilterPatternError(
                    f"filter {where}: numeric operator {op!r} is not one of"
                    f" {list(_NUMERIC_OPERATORS)}"
                )
    if name == "exists" and not isinstance(argument, bool):
        raise FilterPatternError(f"filter {where}: exists takes true or false, got {argument!r}")


def _match_object(pattern: Mapping[str, Any], value: Any) -> bool:
    for key, expected in pattern.items():
        if key == "$or":
            if not any(_match_object(alternative, value) for alternative in expected):
                return False
            continue
        actual = value.get(key, _MISSING) if isinstance(value, Mapping) else _MISSING
        if isinstance(expected, Mapping):
            # A missing object matches only patterns of fields that must not exist.
            if not _match_object(expected, actual if isinstance(actual, Mapping) else {}):
                return False
        elif not any(_match_rule(rule, actual, key) for rule in expected):
            return False
    return True


def _match_rule(rule: Any, actual: Any, key: str) -> bool:
    if isinstance(rule, Mapping) and "exists" in rule:
        present = actual is not _MISSING and not isinstance(actual, Mapping)
        return present is rule["exists"]
    if actual is _MISSING:
        return False
    if isinstance(actual, list):
        return any(_match_value(rule, element, key) for element in actual)
    return _match_value(rule, actual, key)


def _match_value(rule: Any, actual: Any, key: str) -> bool:
    if not isinstance(rule, Mapping):
        if isinstance(rule, bool) or isinstance(actual, bool) or rule is None or actual is None:
            return rule is actual or (rule == actual and type(rule) is type(actual))
        if isinstance(rule, int | float):
            number = _number(actual, key)
            return number is not None and number == Decimal(str(rule))
        return bool(rule == actual)
    ((name, argument),) = rule.items()
    if name == "prefix":
        return _text_test(argument, actual, str.startswith)
    if name == "suffix":
        return _text_test(argument, actual, str.endswith)
    if name == "equals-ignore-case":
        return isinstance(actual, str) and actual.lower() == str(argument).lower()
    if name == "anything-but":
        if isinstance(argument, Mapping):
            return not _match_value(argument, actual, key) and isinstance(actual, str)
        excluded = argument if isinstance(argument, list) else [argument]
        return not any(_match_value(x, actual, key) for x in excluded)
    if name == "numeric":
        number = _number(actual, key)
        if number is None:
            return False
        pairs = zip(argument[0::2], argument[1::2], strict=True)
        return all(_NUMERIC_OPERATORS[op](number, Decimal(str(bound))) for op, bound in pairs)
    return False


def _text_test(argument: Any, actual: Any, test: Callable[[str, str], bool]) -> bool:
    if not isinstance(actual, str):
        return False
    if isinstance(argument, Mapping) and "equals-ignore-case" in argument:
        return test(actual.lower(), str(argument["equals-ignore-case"]).lower())
    return test(actual, str(argument))


def _number(actual: Any, key: str) -> Decimal | None:
    if isinstance(actual, int | float) and not isinstance(actual, bool):
        return Decimal(str(actual))
    if key == "N" and isinstance(actual, str):
        try:
            return Decimal(actual)
        except InvalidOperation:
            return None
    return None
