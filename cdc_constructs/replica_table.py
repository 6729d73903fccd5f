"""ReplicaTable: a global table's replica in this stack's region, with its stream, for consumers
in that region.

A replica's stream ARN is not known at synthesis: ``AWS::DynamoDB::GlobalTable`` returns the
stream ARN of its own region only (``Fn::GetAtt ... StreamArn``), and aws-cdk-lib's
``TableV2.replica(region)`` gives ``arn:...:table/<name>/stream/*``, which IAM accepts but an
event source mapping or a pipe does not (they need the stream's own ARN). So it is read in the
replica's region when the stack deploys: a custom resource calls ``DescribeTable`` there and
returns ``Table.LatestStreamArn``. See docs/global-tables.md.
"""

from __future__ import annotations

from aws_cdk import Stack, Token
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import custom_resources as cr
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.acknowledge import acknowledge
from cdc_constructs.change_capture_table import ChangeCaptureTable
from cdc_constructs.exceptions import Problem
from cdc_constructs.permissions import allow
from cdc_constructs.stream_readers import StreamReaders
from cdc_constructs.table_props import TableConstruct
from cdc_constructs.validation import raise_if_any, view_type_name

__all__ = ["ReplicaTable"]

_STREAM_ARN = "Table.LatestStreamArn"
_PROVIDER_REASON = (
    "aws-cdk-lib's AwsCustomResource provider (one per stack): it calls dynamodb:DescribeTable "
    "on the replica once per deployment to read the replica's stream ARN, which is not known "
    "at synthesis; its role, runtime and settings are aws-cdk-lib's"
)
_PROVIDER_RULES = (
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
    "AWSLambdaBasicExecutionRole]",
    "AwsSolutions-L1",
    "Serverless-LambdaDLQ",
    "Serverless-LambdaDefaultMemorySize",
    "Serverless-LambdaLatestVersion",
    "Serverless-LambdaTracing",
)


class ReplicaTable(TableConstruct):
    """The replica, in this stack's region, of a global table, and its stream.

    :param table: the :class:`ChangeCaptureTable` (with ``replicas``) of this app whose replica
        in this stack's region to read; its name, TTL attribute, view type and key come from it,
        and this stack deploys after the table's. Default: none (give ``table_name``).
    :param table_name: the global table's name, for a table made outside this app.
    :param time_to_live_attribute: with ``table_name``: the table's TTL attribute (None: no
        TTL). Default ``"expireAt"``. With ``table``: the table's.
    :param stream_view_type: with ``table_name``: the stream's view type. Default
        NEW_AND_OLD_IMAGES.
    :param encryption_key: the replica's customer managed key (its consumers are granted
        ``kms:Decrypt`` on it to read the stream). Default: with ``table``, the key its
        ``replica_key_arns`` gives for this region (none when the table has the AWS-managed
        key); with ``table_name``, none (the AWS-managed key).

    Consumers take it as ``table=`` (StreamConsumer, StreamFanOut, OutboxPublisher), and count as
    readers of this replica's stream: at most one (AWS's DynamoDB quotas recommend one reader
    per shard of a global table's stream). Escape hatches: :attr:`table` (the replica as an
    ``ITableV2`` whose stream ARN is the one read at deployment) and :attr:`describe` (the
    custom resource).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: ChangeCaptureTable | None = None,
        table_name: str | None = None,
        time_to_live_attribute: str | None = defaults.TIME_TO_LIVE_ATTRIBUTE,
        stream_view_type: dynamodb.StreamViewType = defaults.STREAM_VIEW_TYPE,
        encryption_key: kms.IKey | None = None,
    ) -> None:
        region = Stack.of(scope).region
        raise_if_any(f"ReplicaTable {construct_id!r}", _problems(table, table_name, region))
        super().__init__(scope, construct_id)
        self.replicated = True
        """Always True: a replica's stream carries replicated writes (docs/global-tables.md)."""
        self.region: str = region
        """The replica's region (this stack's)."""
        if table is not None:
            # The replica exists before it is read.
            Stack.of(self).add_stack_dependency(Stack.of(table))
            table_name = table.table_name  # a literal here: a name generated for other regions
            time_to_live_attribute = table.time_to_live_attribute
            view_type = table.stream_view_type
            encryption_key = encryption_key or _replica_key(self, table, region)
        else:
            view_type = view_type_name(stream_view_type) or ""
        assert table_name is not None
        self.time_to_live_attribute = time_to_live_attribute
        """The table's TTL attribute (None: no TTL)."""
        self.stream_view_type: str = view_type
        """The stream's view type name (e.g. NEW_AND_OLD_IMAGES)."""
        self.encryption_key = encryption_key
        self.describe = self._describe(table_name)
        """The custom resource reading the replica's stream ARN (DescribeTable, this region)."""
        self.table = dynamodb.TableV2.from_table_attributes(  # type: ignore[assignment]
            self,
            "Table",
            table_name=table_name,
            table_stream_arn=self.describe.get_response_field(_STREAM_ARN),
            encryption_key=encryption_key,
        )
        """The replica (an ``ITableV2``; escape hatch)."""
        StreamReaders.of(self).mark_replicated(self.table, replica_stream_key(region, table_name))

    def _describe(self, table_name: str) -> cr.AwsCustomResource:
        call = cr.AwsSdkCall(
            service="DynamoDB",
            action="describeTable",
            parameters={"TableName": table_name},
            physical_resource_id=cr.PhysicalResourceId.from_response(_STREAM_ARN),
            output_paths=[_STREAM_ARN],
        )
        table_arn = Stack.of(self).format_arn(
            service="dynamodb", resource="table", resource_name=table_name
        )
        made = cr.AwsCustomResource(
            self,
            "DescribeReplica",
            on_create=call,
            on_update=call,
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [allow(["dynamodb:DescribeTable"], [table_arn])]
            ),
            install_latest_aws_sdk=False,
        )
        provider = Stack.of(self).node.try_find_child(_PROVIDER_ID)
        for rule in _PROVIDER_RULES:
            acknowledge(provider or made, rule, _PROVIDER_REASON)
        return made

    @property
    def table_stream_arn(self) -> str:
        """The replica's stream ARN (resolved in this region when the stack deploys)."""
        arn = self.table.table_stream_arn
        assert arn is not None
        return arn


def _replica_key(scope: Construct, table: ChangeCaptureTable, region: str) -> kms.IKey | None:
    """The table's customer managed key of ``region``'s replica (None: the AWS-managed key)."""
    arn = table.replica_key_arns.get(region)
    return kms.Key.from_key_arn(scope, "ReplicaKey", arn) if arn is not None else None


def replica_stream_key(region: str, table_name: str) -> str:
    """How the app's stream readers know the replica of ``table_name`` in ``region``: every
    ReplicaTable of it, in any stack, reads that one stream."""
    return f"replica {region} {table_name}"


_PROVIDER_ID = "AWS679f53fac002430cb0da5b7982bd2287"
"""aws-cdk-lib's id of the AwsCustomResource provider function (a singleton of the stack)."""


def _problems(table: object, table_name: object, region: str) -> list[Problem]:
    if Token.is_unresolved(region):
        return [
            Problem(
                "scope",
                "a region-agnostic stack",
                "a stack with an explicit region (env=Environment(region=...)): the replica "
                "read is the one in the stack's region",
            )
        ]
    if (table is None) == (table_name is None):
        return [Problem("table", table, "a ChangeCaptureTable with replicas, or table_name")]
    if table is None:
        if not isinstance(table_name, str) or not table_name or Token.is_unresolved(table_name):
            return [Problem("table_name", table_name, "the global table's name, a literal")]
        return []
    if not isinstance(table, ChangeCaptureTable):
        return [Problem("table", table, "a ChangeCaptureTable with replicas")]
    if region not in table.replica_regions:
        return [
            Problem(
                "table",
                table.node.path,
                f"a table with a replica in this stack's region {region} (its replicas: "
                f"{table.replica_regions or 'none'}); in the table's own region, use the table",
            )
        ]
    return []
