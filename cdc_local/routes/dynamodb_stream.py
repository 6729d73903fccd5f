"""The DynamoDB stream route, locally: a table's stream (moto's ``dynamodbstreams``) read by
Lambda's event source mapping.

Lambda's records are the stream's in Lambda's shape (``cdc_consumer``'s ``to_lambda_record``,
with DynamoDB's TTL ``userIdentity`` on a sweeper deletion), filters match the record itself,
the item identifier is its ``SequenceNumber``, its age counts from its
``ApproximateCreationDateTime``, its lane is a hash of its partition key, and a discarded batch
is described by ``DDBStreamBatchInfo``. The mapping lists the table's streams when it starts (so
its role must allow ``dynamodb:ListStreams``, on ``*``); a child shard is found when its parent
closes (:mod:`cdc_local.shards`). DynamoDB fills the stream itself: no feed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from cdc_consumer.redrive.stream_reader import to_lambda_record

from cdc_local.arns import stream_table_name
from cdc_local.assembly import StackTemplate
from cdc_local.destinations import invocation_record
from cdc_local.endpoint import LocalEndpoint
from cdc_local.resources import LocalResources
from cdc_local.routes.protocol import Feed, RouteContext, SourceContext
from cdc_local.stream_tail import StreamPages

__all__ = ["DynamoDBStreamRoute", "DynamoDBStreamSource"]


class DynamoDBStreamSource(StreamPages):
    """A table's stream as one mapping reads it."""

    def __init__(self, streams: Any, arn: str, context: SourceContext) -> None:
        super().__init__(streams, arn)
        self.arn = arn
        self.context = context
        self._partition_key: str | None = None

    def start(self) -> None:
        """ListStreams of the table, as Lambda calls it; the table's partition key."""
        self.streams.list_streams(TableName=stream_table_name(self.arn))
        schema = self.describe()["KeySchema"]
        self._partition_key = next(k["AttributeName"] for k in schema if k["KeyType"] == "HASH")

    def record(self, shard_id: str, raw: Mapping[str, Any]) -> dict[str, Any]:
        record = to_lambda_record(raw, self.arn)
        ledger = self.context.ttl_ledger
        return ledger.annotate(self.arn, record) if ledger is not None else record

    def filter_view(self, record: Mapping[str, Any]) -> Mapping[str, Any]:
        return record

    def sequence_number(self, record: Mapping[str, Any]) -> str:
        return str(record["dynamodb"]["SequenceNumber"])

    def created_at(self, record: Mapping[str, Any]) -> float:
        return float(record["dynamodb"]["ApproximateCreationDateTime"])

    def partition_value(self, record: Mapping[str, Any]) -> str:
        return json.dumps(record["dynamodb"]["Keys"].get(self._partition_key), sort_keys=True)

    def change_id(self, record: Mapping[str, Any]) -> str | None:
        return str(record["eventID"])

    def failure_record(
        self, records: Sequence[Mapping[str, Any]], **context: Any
    ) -> dict[str, Any]:
        return invocation_record(records=records, stream_arn=self.arn, **context)


class DynamoDBStreamRoute:
    """Mappings of a table's DynamoDB stream (:class:`~cdc_local.routes.protocol.Route`)."""

    service: str = "dynamodb"
    client_service: str = "dynamodbstreams"
    quarantine_note: str | None = None
    reader_actions: tuple[str, ...] = (
        "dynamodb:DescribeStream",
        "dynamodb:GetRecords",
        "dynamodb:GetShardIterator",
    )
    pipe_parameters: str = "DynamoDBStreamParameters"

    def mapping_ids(self, stack: StackTemplate) -> list[str]:
        return [spec.logical_id for spec in stack.stream_mappings()]

    def provision(self, resources: LocalResources, endpoint: LocalEndpoint) -> None:
        """Nothing: the tables, and so their streams, are the pipeline's own resources."""

    def feeds(self, context: RouteContext) -> list[Feed]:
        return []

    def source(self, client: Any, arn: str, context: SourceContext) -> DynamoDBStreamSource:
        return DynamoDBStreamSource(client, arn, context)

    def redrive_stream_arn(self, arn: str) -> str:
        return arn
