"""The wire form of DynamoDB attribute values, as Lambda delivers stream records.

A Lambda event is JSON, so DynamoDB's binary values travel as base64 text: ``{"B": "AQID"}``,
``{"BS": ["AQ==", "Ag=="]}``, at any depth inside ``M`` and ``L``. boto3's GetRecords response
holds the same values as ``bytes`` (botocore decodes the base64). The runtime reads both:

- :func:`deserialize_image` turns an image (``Keys``, ``NewImage``, ``OldImage``) into Python
  values, with ``B`` as ``bytes`` and ``BS`` as a ``set`` of ``bytes`` (boto3's own
  ``TypeDeserializer`` refuses base64 text and wraps bytes in ``Binary``); numbers become
  ``Decimal`` as in boto3;
- :func:`to_wire` turns anything the runtime serializes (a record, a quarantine message, an
  archive body) back into the wire form: ``bytes`` become base64 text, so a record leaves the
  runtime exactly as Lambda delivered it.

No boto3 import beyond its deserializer, so redrive, the local pipeline and handlers can share it.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from boto3.dynamodb.types import DYNAMODB_CONTEXT, TypeDeserializer

__all__ = ["WireDeserializer", "binary_from_wire", "deserialize_image", "dumps", "to_wire"]


def binary_from_wire(value: Any) -> bytes:
    """A ``B`` value as bytes: base64 text (Lambda's event) is decoded, bytes kept.

    Raises ``ValueError`` for text that is not base64 (standard alphabet, padded, as AWS
    writes it) and ``TypeError`` for anything else.
    """
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as error:
            raise ValueError(f"binary value {value[:40]!r} is not base64 text ({error})") from None
    raise TypeError(f"a binary value is base64 text or bytes, got {type(value).__name__}")


class WireDeserializer(TypeDeserializer):
    """boto3's ``TypeDeserializer`` reading binary values as Lambda delivers them (base64 text)
    or as boto3 returns them (bytes), and returning plain ``bytes`` instead of ``Binary``."""

    def _deserialize_b(self, value: Any) -> bytes:
        return binary_from_wire(value)

    def _deserialize_bs(self, value: Any) -> set[bytes]:
        if not isinstance(value, list | tuple | set):
            raise TypeError(f"BS must be a list of binary values, got {type(value).__name__}")
        return {binary_from_wire(inner) for inner in value}


_deserializer = WireDeserializer()
_decimal = DYNAMODB_CONTEXT.create_decimal


def deserialize_image(image: Mapping[str, Any]) -> dict[str, Any]:
    """An image in DynamoDB JSON (wire form) as Python values.

    Raises ``TypeError``, ``ValueError``, ``KeyError``, ``AttributeError`` or
    ``ArithmeticError`` (a number DynamoDB could not hold) for what is not an attribute value.
    """
    decoded = {}
    for name, value in image.items():
        # Strings and numbers, most attributes, inline (a call per attribute costs more).
        if type(value) is dict and len(value) == 1:
            inner = value.get("S")
            if inner is not None:
                decoded[name] = inner
                continue
            inner = value.get("N")
            if inner is not None:
                decoded[name] = _decimal(inner)
                continue
        decoded[name] = _value(value)
    return decoded


def _value(value: Any) -> Any:
    """One attribute value: the common types (S, N, BOOL, NULL, M, L) directly, the same as
    :class:`WireDeserializer` returns them but without its per-value method lookup; anything
    else (binary, sets, malformed values) through it, so errors are the same."""
    if type(value) is dict and len(value) == 1:
        for kind, inner in value.items():
            if kind == "S":
                return inner
            if kind == "N":
                return DYNAMODB_CONTEXT.create_decimal(inner)
            if kind == "M" and type(inner) is dict:
                return {name: _value(v) for name, v in inner.items()}
            if kind == "L" and type(inner) is list:
                return [_value(v) for v in inner]
            if kind == "BOOL":
                return inner
            if kind == "NULL":
                return None
    return _deserializer.deserialize(value)


def to_wire(value: Any) -> Any:
    """``value`` with every ``bytes`` (at any depth of dicts, lists, tuples and sets) as base64
    text: the JSON form DynamoDB JSON takes in a Lambda event and in DynamoDB's S3 export."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Mapping):
        return {key: to_wire(inner) for key, inner in value.items()}
    if isinstance(value, set | frozenset):
        encoded = [to_wire(inner) for inner in value]
        try:
            return sorted(encoded)  # deterministic text for the same set
        except TypeError:
            return encoded
    if isinstance(value, list | tuple):
        return [to_wire(inner) for inner in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps`` of ``value`` in wire form (binary as base64 text); anything else JSON
    cannot hold (``Decimal``, ``datetime``) is written as ``str``, as the runtime's logs do."""
    return json.dumps(to_wire(value), default=str, **options)
