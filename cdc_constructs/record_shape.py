"""The shape of the records a filter pattern is matched against, and the parts of a pattern
that shape can never match.

Lambda (and EventBridge Pipes) drop every record a consumer's filters do not match, without an
error: a misspelled field anywhere in a pattern (``{"dynamodb": {"NewImgae": ...}}``) or a
misspelled type (``{"s": ["PAID"]}``) makes a consumer that receives nothing. Wherever the
record's shape is known, this module names such a part, with its path and the field meant:

- a DynamoDB stream record (Lambda event source mapping, Pipes): its top-level fields, the
  fields of ``dynamodb`` and of ``userIdentity``; below ``Keys``/``NewImage``/``OldImage`` the
  attribute names are the table's own (free), and each attribute's value is one of DynamoDB's
  types (``S``, ``N``, ``B``, ``BOOL``, ``NULL``, ``M``, ``L``, ``SS``, ``NS``, ``BS``), ``M``
  holding attributes again;
- a record of another route (a Kinesis record of a table's changes:
  :mod:`cdc_constructs.routes.kinesis.record_shape`), built from the same parts.

Where the service defines a field's values (``eventName``: INSERT, MODIFY or REMOVE; the TTL
identity's ``userIdentity.type`` ``Service`` and ``principalId`` ``dynamodb.amazonaws.com``;
``eventSource``, ``StreamViewType``) or its type (``dynamodb.ApproximateCreationDateTime`` and
``SizeBytes`` are numbers, ``SequenceNumber`` a string of digits), a rule no such value can meet
is named too, with the value meant (``["REMOVED"]``: did you mean ``REMOVE``?).

Rules (``["PAID"]``, ``[{"exists": false}]``) apply to values only (Lambda: "exists matching only
works on leaf nodes"): rules on an object - an attribute without its type, an image - are named
too, since they never match (or, with ``exists: false``, always do).

Sources: AWS Lambda developer guide, "Using event filtering with a DynamoDB event source" and
"... with a Kinesis event source"; DynamoDB developer guide, "Change data capture for Kinesis Data
Streams" (the record format); DynamoDB API reference, ``StreamRecord`` and ``AttributeValue``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "ATTRIBUTES",
    "ATTRIBUTE_TYPES",
    "DYNAMODB_STREAM_RECORD",
    "EVENT_NAME",
    "EVENT_SOURCE",
    "NUMBER",
    "TEXT",
    "UNCHECKED",
    "USER_IDENTITY",
    "VALUE",
    "Fields",
    "Names",
    "ShapeProblem",
    "shape_problems",
]


class _Value:
    """A value (string, number, bool, list of them): what rules match."""

    name = "a value"


class _Unchecked:
    """A part whose shape is not known (a list's elements): not checked."""

    name = "anything"


class _Number(_Value):
    """A value the service always writes as a number: a string rule never matches it."""

    name = "a number"


class _Text(_Value):
    """A value the service always writes as a string: a number or numeric rule never matches."""

    name = "a string"


@dataclass(frozen=True)
class OneOf(_Text):
    """A string value the service writes as one of ``values`` only."""

    field_name: str
    values: tuple[str, ...]


VALUE: Final = _Value()
NUMBER: Final = _Number()
TEXT: Final = _Text()
UNCHECKED: Final = _Unchecked()

EVENT_NAMES: Final = ("INSERT", "MODIFY", "REMOVE")
"""A DynamoDB stream record's ``eventName`` values."""


@dataclass(frozen=True)
class Fields:
    """An object of known fields: any other field is never in the record."""

    name: str
    """How messages call it, e.g. ``a DynamoDB stream record``."""
    fields: dict[str, Shape] = field(compare=False)
    hint: str = ""
    """Said after an unknown field, when there is more to say."""


@dataclass(frozen=True)
class Names:
    """An object whose keys are the user's own (attribute names), each of shape ``of``."""

    name: str
    of: Shape = field(compare=False)


Shape = Fields | Names | _Value | _Unchecked

ATTRIBUTE_TYPES: Final = ("S", "N", "B", "BOOL", "NULL", "M", "L", "SS", "NS", "BS")
"""DynamoDB's attribute-value types, the keys of an attribute's value in a record."""

_attribute_types: dict[str, Shape] = dict.fromkeys(ATTRIBUTE_TYPES, VALUE)
ATTRIBUTE_VALUE = Fields(
    "an attribute value",
    _attribute_types,
    hint='an attribute\'s value is keyed by its DynamoDB type, e.g. {"S": ["PAID"]}',
)
ATTRIBUTES = Names("the attributes of an item", ATTRIBUTE_VALUE)
_attribute_types["M"] = ATTRIBUTES  # a map holds attributes again
_attribute_types["L"] = UNCHECKED  # a list's elements: no rule reaches into them

USER_IDENTITY = Fields(
    "userIdentity",
    {
        # Only TTL deletions carry it (DynamoDB developer guide, "Time to Live").
        "type": OneOf("userIdentity.type", ("Service",)),
        "principalId": OneOf("userIdentity.principalId", ("dynamodb.amazonaws.com",)),
    },
)
EVENT_NAME = OneOf("eventName", EVENT_NAMES)
EVENT_SOURCE = OneOf("eventSource", ("aws:dynamodb",))

DYNAMODB_STREAM_RECORD: Final = Fields(
    "a DynamoDB stream record",
    {
        "awsRegion": VALUE,
        "dynamodb": Fields(
            "dynamodb",
            {
                "ApproximateCreationDateTime": NUMBER,
                "Keys": ATTRIBUTES,
                "NewImage": ATTRIBUTES,
                "OldImage": ATTRIBUTES,
                "SequenceNumber": TEXT,
                "SizeBytes": NUMBER,
                "StreamViewType": OneOf(
                    "dynamodb.StreamViewType",
                    ("KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"),
                ),
            },
        ),
        "eventID": TEXT,
        "eventName": EVENT_NAME,
        "eventSource": EVENT_SOURCE,
        "eventSourceARN": VALUE,
        "eventVersion": VALUE,
        "userIdentity": USER_IDENTITY,
    },
)
"""A record of a DynamoDB stream, as Lambda and Pipes deliver (and filter) it."""


@dataclass(frozen=True)
class ShapeProblem:
    """A part of a pattern the record's shape never matches: where, what is there, and why."""

    path: str
    """From the pattern's name, e.g. ``filters[0].dynamodb.NewImgae``."""
    value: Any
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def shape_problems(pattern: Mapping[str, Any], shape: Fields, where: str) -> list[ShapeProblem]:
    """What in ``pattern`` (valid in the matcher's grammar) ``shape`` can never match, with
    paths from ``where`` (``filters[0]``); ``$or`` alternatives are checked against the same
    shape."""
    return _object_problems(pattern, shape, where)


def _object_problems(
    pattern: Mapping[str, Any], shape: Fields | Names, where: str
) -> list[ShapeProblem]:
    found: list[ShapeProblem] = []
    for key, value in pattern.items():
        if key == "$or":
            for index, alternative in enumerate(value if isinstance(value, list) else ()):
                if isinstance(alternative, Mapping):
                    found += _object_problems(alternative, shape, f"{where}.$or[{index}]")
            continue
        path = f"{where}.{key}"
        if isinstance(shape, Names):
            found += _value_problems(value, shape.of, path)
        elif key in shape.fields:
            found += _value_problems(value, shape.fields[key], path)
        else:
            found.append(ShapeProblem(path, value, _unknown(key, shape)))
    return found


def _value_problems(value: Any, shape: Shape, path: str) -> list[ShapeProblem]:
    if shape is UNCHECKED:
        return []
    if isinstance(value, Mapping):
        if isinstance(shape, Fields | Names):
            return _object_problems(value, shape, path)
        reason = (
            "the record holds a value here, not an object, so fields below it never match; "
            'give its rules as a list, e.g. ["PAID"]'
        )
        return [ShapeProblem(path, value, reason)]
    if isinstance(shape, Fields | Names):
        reason = (
            f"rules on {shape.name}, an object: rules match values only (exists too), so "
            f"these never match (exists: false always does); {_below(shape, value)}"
        )
        return [ShapeProblem(path, value, reason)]
    if isinstance(shape, _Number | _Text) and isinstance(value, list):
        return [ShapeProblem(path, rule, why) for rule, why in _rules_never_met(value, shape)]
    return []


_DROPPED = "it never matches, and what no pattern matches is dropped without an error"


def _rules_never_met(rules: list[Any], shape: _Number | _Text) -> list[tuple[Any, str]]:
    """The rules of a list no value of ``shape`` meets, each with why."""
    found = [(rule, _never_met(rule, shape)) for rule in rules]
    return [(rule, why) for rule, why in found if why]


def _never_met(rule: Any, shape: _Number | _Text) -> str | None:
    """Why no value of ``shape`` meets ``rule`` (None: some may)."""
    if isinstance(rule, bool) or rule is None:
        return None
    if isinstance(shape, _Number):
        if isinstance(rule, str):
            return f"the record holds a number here, and {rule!r} is a string: {_DROPPED}"
        return None
    if isinstance(rule, int | float) or (isinstance(rule, Mapping) and "numeric" in rule):
        return f"the record holds a string here, and {rule!r} is numeric: {_DROPPED}"
    return _not_one_of(rule, shape) if isinstance(shape, OneOf) else None


def _not_one_of(rule: Any, shape: OneOf) -> str | None:
    """Why no value of ``shape`` meets ``rule`` (a string, prefix, equals-ignore-case or
    anything-but rule); None when one may."""
    values = shape.values
    listed = f"its values are {', '.join(values)}"
    if isinstance(rule, str):
        texts = [rule] if rule not in values else []
    elif isinstance(rule, Mapping) and isinstance(rule.get("prefix"), str):
        prefix = rule["prefix"]
        texts = [] if any(v.startswith(prefix) for v in values) else [prefix]
    elif isinstance(rule, Mapping) and isinstance(rule.get("equals-ignore-case"), str):
        text = rule["equals-ignore-case"]
        texts = [] if text.lower() in (v.lower() for v in values) else [text]
    elif isinstance(rule, Mapping) and "anything-but" in rule:
        but = rule["anything-but"]
        but = [but] if isinstance(but, str) else but if isinstance(but, list) else []
        texts = [t for t in but if isinstance(t, str) and t not in values]
    else:
        return None
    if not texts:
        return None
    close = _close_match(texts[0], list(values))
    meant = f" (did you mean {close!r}?)" if close else ""
    return f"{texts[0]!r} is not a value of {shape.field_name}{meant}: {_DROPPED}; {listed}"


def _below(shape: Fields | Names, rules: Any) -> str:
    """How to write rules on what is below ``shape`` instead."""
    if shape is ATTRIBUTE_VALUE:
        return f'put them under the attribute\'s type, e.g. {{"S": {json.dumps(rules)}}}'
    if isinstance(shape, Names):
        return "name an attribute below it, with its type"
    return f"name a field below it: {', '.join(shape.fields)}"


def _unknown(key: str, shape: Fields) -> str:
    fields = list(shape.fields)
    close = _close_match(key, fields)
    meant = f" (did you mean {close!r}?)" if close else ""
    hint = f"; {shape.hint}" if shape.hint else ""
    return (
        f"{shape.name} has no field {key!r}{meant}: {key} never matches, and what no "
        f"pattern matches is dropped without an error; its fields are {', '.join(fields)}{hint}"
    )


def _close_match(key: str, fields: list[str]) -> str | None:
    """The field ``key`` most likely misspells, ignoring case (``s`` means ``S``)."""
    by_lower = {name.lower(): name for name in fields}
    found = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[found[0]] if found else None
