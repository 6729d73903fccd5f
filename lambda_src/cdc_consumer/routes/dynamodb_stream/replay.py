"""The DynamoDB stream route as the redrive reads it back (:class:`~cdc_consumer.routes.replay.
ReplayRoute`): a table's own stream (``dynamodbstreams``), its records named by
``dynamodb.SequenceNumber``, a failed batch described under ``DDBStreamBatchInfo``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from botocore.config import Config

from cdc_consumer.exceptions import MalformedMessageError
from cdc_consumer.redrive_shapes import OnFailureMessage
from cdc_consumer.wire import to_wire

__all__ = ["ROUTE", "STREAM_ARN_PATTERN", "DynamoDBStreamReplay", "to_lambda_record"]

#: A DynamoDB stream ARN: ``arn:<partition>:dynamodb:<region>:<account>:table/<t>/stream/<label>``.
STREAM_ARN_PATTERN = re.compile(
    r"^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:\d{12}:table/[^/]+/stream/[^/]+$"
)
#: The one value of a GetRecords record that boto3 parses into a datetime (in ``dynamodb``).
_CREATED = "ApproximateCreationDateTime"


def to_lambda_record(record: Mapping[str, Any], stream_arn: str) -> dict[str, Any]:
    """A GetRecords record (as boto3 returns it) in the shape Lambda delivers it to a consumer.

    Lambda's event differs from boto3's GetRecords response in these ways: it adds
    ``eventSourceARN``; it carries the wire JSON, so ``dynamodb.ApproximateCreationDateTime`` is
    epoch seconds (whole seconds, as DynamoDB Streams rounds it down to the second) and binary
    attributes are base64 text (see :func:`cdc_consumer.wire.to_wire`); and ``userIdentity``
    has lower-case keys (``type``, ``principalId``), which is what TTL filters and the
    runtime's TTL detection look at. ``record`` is not changed.
    """
    converted: dict[str, Any] = to_wire(record)  # a copy: every mapping in it is new
    stream = converted.get("dynamodb")
    if isinstance(stream, dict) and isinstance(stream.get(_CREATED), datetime):
        stream[_CREATED] = int(stream[_CREATED].timestamp())
    identity = converted.get("userIdentity")
    if isinstance(identity, Mapping):
        converted["userIdentity"] = {
            "type": identity.get("Type", identity.get("type")),
            "principalId": identity.get("PrincipalId", identity.get("principalId")),
        }
    converted["eventSourceARN"] = stream_arn
    return converted


class DynamoDBStreamReplay:
    """The DynamoDB stream route's answers to the redrive."""

    name = "DynamoDB stream"
    batch_info = OnFailureMessage.BATCH_INFO
    arn_shape = "arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE/stream/LABEL"

    def owns_stream(self, stream_arn: str) -> bool:
        return bool(STREAM_ARN_PATTERN.match(stream_arn))

    def owns_record(self, record: Any) -> bool:
        return (
            isinstance(record, Mapping)
            and isinstance(record.get("dynamodb"), Mapping)
            and "kinesis" not in record
        )

    def owns_raw(self, raw: Any) -> bool:
        return isinstance(raw, Mapping) and isinstance(raw.get("dynamodb"), Mapping)

    def client(self, session: Any) -> Any:
        return session.client(
            "dynamodbstreams", config=Config(retries={"mode": "standard", "max_attempts": 5})
        )

    def shard_iterator(self, client: Any, stream_arn: str, shard_id: str, start: str) -> str:
        return str(
            client.get_shard_iterator(
                StreamArn=stream_arn,
                ShardId=shard_id,
                ShardIteratorType="AT_SEQUENCE_NUMBER",
                SequenceNumber=start,
            )["ShardIterator"]
        )

    def records_page(self, client: Any, stream_arn: str, iterator: str, limit: int) -> Any:
        return client.get_records(ShardIterator=iterator, Limit=limit)

    def raw_sequence(self, raw: Mapping[str, Any]) -> int:
        return int(raw["dynamodb"]["SequenceNumber"])

    def lambda_record(
        self, raw: Mapping[str, Any], shard_id: str, stream_arn: str
    ) -> dict[str, Any]:
        return to_lambda_record(raw, stream_arn)

    def retention_seconds(self, client: Any, stream_arn: str) -> int | None:
        return None  # a trimmed range fails the read (TrimmedDataAccessException)

    def shard_parents(
        self, client: Any, stream_arn: str, shards: Iterable[str]
    ) -> dict[str, str | None]:
        """Every page of DescribeStream (it lists the shards the stream still holds)."""
        parents: dict[str, str | None] = {}
        start: str | None = None
        while True:
            request: dict[str, Any] = {"StreamArn": stream_arn}
            if start is not None:
                request["ExclusiveStartShardId"] = start
            description = client.describe_stream(**request)["StreamDescription"]
            for shard in description.get("Shards", []):
                if shard.get("ShardId"):
                    parents[str(shard["ShardId"])] = shard.get("ParentShardId") or None
            start = description.get("LastEvaluatedShardId")
            if not start:
                return parents

    def sequence_number(self, record: Any) -> str | None:
        stream = record.get("dynamodb") if isinstance(record, Mapping) else None
        value = stream.get("SequenceNumber") if isinstance(stream, Mapping) else None
        return value if isinstance(value, str) and value else None

    def check_record(self, record: Mapping[str, Any], what: str) -> None:
        dynamodb = record.get("dynamodb")
        if not record.get("eventID") or not isinstance(dynamodb, Mapping):
            raise MalformedMessageError(
                f"{what} lacks eventID or the dynamodb object; expected a DynamoDB stream record"
            )
        if not str(dynamodb.get("SequenceNumber", "")).isdigit():
            raise MalformedMessageError(
                f"{what} has dynamodb.SequenceNumber {dynamodb.get('SequenceNumber')!r};"
                " expected a string of digits"
            )

    def filter_view(self, record: Mapping[str, Any]) -> Any:
        return record  # matched whole

    def item_key(self, record: Mapping[str, Any]) -> str:
        return json.dumps(record.get("dynamodb", {}).get("Keys", {}), sort_keys=True)

    def change_of(self, record: Mapping[str, Any]) -> tuple[int, int]:
        """(``ApproximateCreationDateTime`` seconds, sequence number)."""
        stream = record.get("dynamodb", {})
        created = stream.get(_CREATED, 0)
        return int(float(created or 0)), int(stream["SequenceNumber"])

    def written_at(self, record: Mapping[str, Any]) -> float | None:
        value = record.get("dynamodb", {}).get(_CREATED)
        try:
            return float(value) if value is not None else None
        except (TypeError, ValueError):
            return None


ROUTE = DynamoDBStreamReplay()
"""The DynamoDB stream route."""
