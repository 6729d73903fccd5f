"""Stream records as Lambda delivers them.

boto3's ``dynamodbstreams`` client parses ``ApproximateCreationDateTime`` into a datetime and
binary attributes into bytes; Lambda's event carries the wire JSON instead: epoch seconds (a
number) and base64 text. Lambda also adds ``eventSourceARN`` to each record.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any


def wire_json(value: Any) -> Any:
    """``value`` with datetimes as epoch seconds and bytes as base64 text, recursively."""
    if isinstance(value, Mapping):
        return {k: wire_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [wire_json(v) for v in value]
    if isinstance(value, datetime):
        return round(value.timestamp(), 3)
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    return value


def lambda_record(stream_record: Mapping[str, Any], stream_arn: str) -> dict[str, Any]:
    """A record from ``GetRecords`` in the shape of a Lambda event's ``Records[]`` entry."""
    record = wire_json(stream_record)
    record["eventSourceARN"] = stream_arn
    return record


def fingerprint(value: Any) -> str:
    """A canonical text form of a DynamoDB-JSON key, image or item, for comparisons."""
    return json.dumps(wire_json(value), sort_keys=True)
