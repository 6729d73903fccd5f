"""The DynamoDB stream route: a consumer reads its table's own DynamoDB stream.

Records are the stream's (24 h retention, each change once, in order per item); the mapping
reads the stream's ARN and is granted the stream read actions (and the table key's decrypt);
the redrive reads a range back from the same stream (what the failure kinds ask of it). Each
consumer of the stream is one of its readers (:mod:`~cdc_constructs.stream_readers`: AWS
throttles a third).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from cdc_constructs.consumer_options import ConsumerOptions
from cdc_constructs.monitoring_options import MonitoringOptions
from cdc_constructs.permissions import grant_stream_read
from cdc_constructs.record_shape import DYNAMODB_STREAM_RECORD
from cdc_constructs.redrive import StreamArnRoute, StreamRedrive
from cdc_constructs.routes.route import TemplateRoute
from cdc_constructs.stream_readers import StreamReaders

__all__ = ["DYNAMODB_STREAM_TEMPLATE", "DynamoDBStreamRoute"]

DYNAMODB_STREAM_TEMPLATE: Final = TemplateRoute(
    name="dynamodb",
    resource_types=frozenset({"AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable"}),
    arn_parts=(":dynamodb:", "/stream/"),
    pipe_parameters="DynamoDBStreamParameters",
    reads_table_stream=True,
    record_shape=DYNAMODB_STREAM_RECORD,
)
"""A table's DynamoDB stream in any template: a table resource, or a literal stream ARN."""


@dataclass(frozen=True)
class DynamoDBStreamRoute(StreamArnRoute):
    """A consumer of ``table``'s DynamoDB stream (``StreamConsumer``)."""

    table: dynamodb.ITable | None = None

    @classmethod
    def of(cls, table: dynamodb.ITable) -> DynamoDBStreamRoute:
        """The route of ``table``'s stream (checked to have one before)."""
        return cls(table.table_stream_arn, table)  # type: ignore[arg-type]

    @property
    def source_arn(self) -> str:
        return self.stream_arn

    @property
    def retention(self) -> Duration | None:
        return None  # DynamoDB Streams' 24 h

    @property
    def reads_table_stream(self) -> bool:
        return True

    def attach(self, consumer: Construct) -> None:
        """``consumer.source_table``: the table whose stream it reads."""
        consumer.source_table = self.table  # type: ignore[attr-defined]

    def grant_read(self, function: lambda_.IFunction) -> None:
        """The stream's read actions on this stream only, and its key's decrypt."""
        key = self.table.encryption_key if self.table is not None else None
        grant_stream_read(function, self.stream_arn, key)

    def mapping_added(
        self, consumer: Construct, mapping: lambda_.EventSourceMapping, options: ConsumerOptions
    ) -> None:
        """The mapping is one of the stream's readers (a third is refused without a reason)."""
        assert self.table is not None
        reason = options.mapping.extra_reader_reason
        StreamReaders.of(consumer).add(self.table, consumer.node.path, mapping, reason)

    def monitoring_options(self, options: ConsumerOptions) -> MonitoringOptions:
        return options.monitoring

    def add_alarms(
        self, consumer: Construct, options: ConsumerOptions, topic: sns.ITopic | None
    ) -> Mapping[str, cloudwatch.Alarm]:
        return {}  # the stream itself needs none: the consumer's lag alarm covers it

    def make_redrive(self, scope: Construct, construct_id: str, **props: Any) -> StreamRedrive:
        return StreamRedrive(scope, construct_id, route=self, **props)
