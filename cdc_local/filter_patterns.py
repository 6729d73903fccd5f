"""Lambda event filtering (``FilterCriteria``) for DynamoDB stream records.

Follows "Control which events Lambda sends to your function" (Lambda developer guide): a record is
sent to the function when it matches at least one of the mapping's patterns; a pattern matches
when every field it names matches (AND), and a field matches when any of its listed rules
matches (OR). Rules: exact values (string, number, ``null``, ``""`` for empty), ``prefix``,
``suffix``, ``equals-ignore-case``, ``anything-but`` (a value or a list, or prefix / suffix /
equals-ignore-case inside it), ``numeric`` (``=``, ``<``, ``<=``, ``>``, ``>=``, ranges), and
``exists`` (true / false; only on leaves, i.e. the ``S``/``N``/... level of an attribute), plus
``$or`` across fields. A field absent from the record matches only ``{"exists": false}``.
When the record's value is a list, the rule matches if any element matches.

DynamoDB carries numbers as strings (``{"N": "42"}``); a ``numeric`` rule placed on an ``N`` key
compares that string's number, which is how a filter on a Number attribute is written.

No library offers Lambda's matcher in Python (EventBridge's ``TestEventPattern`` is an API
call, and moto's is private), so it is written here.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc_local.exceptions import LocalPipelineError

_MISSING = object()

_NUMERIC_OPERATORS: dict[str, Callable[[Decimal, Decimal], bool]] = {
    "=": operator.eq,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_RULE_KEYS = {"prefix", "suffix", "equals-ignore-case", "anything-but", "numeric", "exists"}


class FilterPatternError(LocalPipelineError):
    """A filter pattern uses syntax Lambda would reject."""


class FilterPattern:
    """One compiled pattern (the JSON of one ``FilterCriteria.Filters[].Pattern``)."""

    def __init__(self, pattern: str | Mapping[str, Any]) -> None:
        self.source = pattern
        self.pattern = json.loads(pattern) if isinstance(pattern, str) else pattern
        if not isinstance(self.pattern, Mapping):
            raise FilterPatternError(f"a filter pattern must be a JSON object, got {pattern!r}")
        _validate(self.pattern, path="")

    def matches(self, record: Mapping[str, Any]) -> bool:
        return _match_object(self.pattern, record)


class FilterCriteria:
    """A mapping's filters: a record passes when any pattern matches; no patterns pass all."""

    def __init__(self, patterns: Sequence[str | Mapping[str, Any]] = ()) -> None:
        self.patterns = [FilterPattern(p) for p in patterns]

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> FilterCriteria:
        """From a mapping's ``FilterCriteria`` property (``{"Filters": [{"Pattern": str}]}``)."""
        filters = (properties.get("FilterCriteria") or {}).get("Filters") or []
        patterns = [f["Pattern"] for f in filters if f.get("Pattern")]
        if len(filters) != len(patterns):
            raise FilterPatternError(
                f"FilterCriteria has a filter without a Pattern ({filters!r}); aws-cdk-lib emits "
                "`Filters: [{}]` for a raw dict: build patterns with FilterCriteria.filter(...)"
            )
        return cls(patterns)

    def matches(self, record: Mapping[str, Any]) -> bool:
        return not self.patterns or any(p.matches(record) for p in self.patterns)


def _validate(pattern: Mapping[str, Any], path: str) -> None:
    for key, value in pattern.items():
        where = f"{path}.{key}" if path else key
        if key == "$or":
            if not isinstance(value, list) or len(value) < 2:
                raise FilterPatternError(f"{where}: $or needs a list of at least two patterns")
            for alternative in value:
                _validate(alternative, where)
        elif isinstance(value, Mapping):
            _validate(value, where)
        elif isinstance(value, list):
            for rule in value:
                _validate_rule(rule, where)
        else:
            raise FilterPatternError(
                f"{where}: a pattern's leaf must be a list of rules, got {value!r} "
                f"(write [{json.dumps(value)}])"
            )


def _validate_rule(rule: Any, where: str) -> None:
    if isinstance(rule, Mapping):
        if len(rule) != 1 or next(iter(rule)) not in _RULE_KEYS:
            raise FilterPatternError(
                f"{where}: unknown rule {json.dumps(rule)}; Lambda accepts {sorted(_RULE_KEYS)}"
            )
        ((name, argument),) = rule.items()
        if name == "numeric":
            if not isinstance(argument, list) or len(argument) not in (2, 4):
                raise FilterPatternError(
                    f"{where}: numeric needs [op, n] or [op, n, op, n], got {argument!r}"
                )
            for op in argument[0::2]:
                if op not in _NUMERIC_OPERATORS:
                    raise FilterPatternError(
                        f"{where}: numeric operator {op!r} is not one of {list(_NUMERIC_OPERATORS)}"
                    )
        if name == "exists" and not isinstance(argument, bool):
            raise FilterPatternError(f"{where}: exists takes true or false, got {argument!r}")


def _match_object(pattern: Mapping[str, Any], value: Any) -> bool:
    for key, expected in pattern.items():
        if key == "$or":
            if not any(_match_object(alternative, value) for alternative in expected):
                return False
            continue
        actual = value.get(key, _MISSING) if isinstance(value, Mapping) else _MISSING
        if isinstance(expected, Mapping):
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
        return rule == actual
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
