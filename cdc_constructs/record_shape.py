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
- a Kinesis record of a table's changes: its metadata fields, and ``data``, the change as
  DynamoDB writes it to Kinesis (decoded from base64 JSON by Lambda before filtering).

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
    "ATTRIBUTE_TYPES",
    "DYNAMODB_STREAM_RECORD",
    "KINESIS_CHANGE_RECORD",
    "KINESIS_RECORD",
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


VALUE: Final = _Value()
UNCHECKED: Final = _Unchecked()


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
_ATTRIBUTE_VALUE = Fields(
    "an attribute value",
    _attribute_types,
    hint='an attribute\'s value is keyed by its DynamoDB type, e.g. {"S": ["PAID"]}',
)
_ATTRIBUTES = Names("the attributes of an item", _ATTRIBUTE_VALUE)
_attribute_types["M"] = _ATTRIBUTES  # a map holds attributes again
_attribute_types["L"] = UNCHECKED  # a list's elements: no rule reaches into them

_USER_IDENTITY = Fields("userIdentity", {"type": VALUE, "principalId": VALUE})

DYNAMODB_STREAM_RECORD: Final = Fields(
    "a DynamoDB stream record",
    {
        "awsRegion": VALUE,
        "dynamodb": Fields(
            "dynamodb",
            {
                "ApproximateCreationDateTime": VALUE,
                "Keys": _ATTRIBUTES,
                "NewImage": _ATTRIBUTES,
                "OldImage": _ATTRIBUTES,
                "SequenceNumber": VALUE,
                "SizeBytes": VALUE,
                "StreamViewType": VALUE,
            },
        ),
        "eventID": VALUE,
        "eventName": VALUE,
        "eventSource": VALUE,
        "eventSourceARN": VALUE,
        "eventVersion": VALUE,
        "userIdentity": _USER_IDENTITY,
    },
)
"""A record of a DynamoDB stream, as Lambda and Pipes deliver (and filter) it."""

KINESIS_CHANGE_RECORD: Final = Fields(
    "a Kinesis record",
    {
        "approximateArrivalTimestamp": VALUE,
        "data": Fields(
            "data (a DynamoDB change in Kinesis)",
            {
                "awsRegion": VALUE,
                "dynamodb": Fields(
                    "data.dynamodb",
                    {
                        "ApproximateCreationDateTime": VALUE,
                        "ApproximateCreationDateTimePrecision": VALUE,
                        "Keys": _ATTRIBUTES,
                        "NewImage": _ATTRIBUTES,
                        "OldImage": _ATTRIBUTES,
                        "SizeBytes": VALUE,
                    },
                ),
                "eventID": VALUE,
                "eventName": VALUE,
                "eventSource": VALUE,
                "recordFormat": VALUE,
                "tableName": VALUE,
                "userIdentity": _USER_IDENTITY,
            },
        ),
        "kinesisSchemaVersion": VALUE,
        "partitionKey": VALUE,
        "sequenceNumber": VALUE,
    },
    hint="the DynamoDB change is under 'data' (KinesisFilters.on_data)",
)
"""A record of a Kinesis stream a table streams its changes to, as Lambda filters it."""

KINESIS_RECORD: Final = Fields(
    "a Kinesis record",
    {**KINESIS_CHANGE_RECORD.fields, "data": UNCHECKED},
    hint="the payload is under 'data'",
)
"""A record of any Kinesis stream: its ``data`` may be anything (CdcChecks, where no table of
the template is known to stream into it)."""


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
    return []


def _below(shape: Fields | Names, rules: Any) -> str:
    """How to write rules on what is below ``shape`` instead."""
    if shape is _ATTRIBUTE_VALUE:
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
