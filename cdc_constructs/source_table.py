"""The table whose stream a construct reads: unwrapping it, checking it has a stream, and
knowing which images its stream carries.

StreamConsumer and StreamFanOut accept the same things as ``table``: a
:class:`~cdc_constructs.change_capture_table.ChangeCaptureTable`, or any ``dynamodb.ITable`` /
``dynamodb.ITableV2`` with a stream (made in the app or imported with ``table_stream_arn``).
"""

from __future__ import annotations

from typing import Any, TypeAlias

from aws_cdk import Stack
from aws_cdk import aws_dynamodb as dynamodb

from cdc_constructs.change_capture_table import ChangeCaptureTable
from cdc_constructs.exceptions import Problem
from cdc_constructs.idempotency_table import IdempotencyTable
from cdc_constructs.replica_table import ReplicaTable
from cdc_constructs.table_props import TableConstruct

SourceTable: TypeAlias = ChangeCaptureTable | ReplicaTable | dynamodb.ITable | dynamodb.ITableV2
"""What ``table`` props accept."""

UNKNOWN_VIEW_TYPE = "UNKNOWN"
"""The view type of a stream known only by its ARN (an imported table): filters and templates
on images cannot be checked against it."""


def as_table(
    table: ChangeCaptureTable | IdempotencyTable | dynamodb.ITable | dynamodb.ITableV2,
) -> dynamodb.ITable:
    """The aws-cdk-lib table inside one of this library's table constructs, or ``table``."""
    if isinstance(table, TableConstruct):
        return table.table
    return table  # type: ignore[return-value]  # ITableV2 has every member consumers use


def check_source_table(table: Any) -> list[Problem]:
    """``table`` is a ChangeCaptureTable or a table with a stream."""
    if isinstance(table, ChangeCaptureTable | ReplicaTable):
        return []
    if table is None or not hasattr(table, "table_arn"):
        return [
            Problem(
                "table", table, "a ChangeCaptureTable or a dynamodb.ITable/ITableV2 with a stream"
            )
        ]
    # TableV2 returns a StreamArn token even without a stream: ask the table's own definition.
    if not getattr(table, "table_stream_arn", None) or stream_view_type_of(table) is None:
        return [
            Problem(
                "table",
                table.node.path if hasattr(table, "node") else table,
                "a table with a stream (this one has none): use ChangeCaptureTable "
                "(NEW_AND_OLD_IMAGES), enable a stream, or import the table with "
                "table_stream_arn",
            )
        ]
    return []


def stream_view_type_of(table: SourceTable) -> str | None:
    """The stream's view type name (e.g. ``NEW_AND_OLD_IMAGES``); None when the table has no
    stream; :data:`UNKNOWN_VIEW_TYPE` for an imported table (its stream ARN is all we know)."""
    if isinstance(table, ChangeCaptureTable | ReplicaTable):
        return table.stream_view_type
    resource = table.node.default_child
    if not isinstance(resource, dynamodb.CfnTable | dynamodb.CfnGlobalTable):
        return UNKNOWN_VIEW_TYPE if getattr(table, "table_stream_arn", None) else None
    # The L1's properties as given: the public getter of TableV2's stream specification is lazy
    # and cannot be read before synthesis.
    try:
        properties = Stack.of(table).resolve(resource._cfn_properties)
    except RuntimeError:  # a jsii error resolving someone's custom table: do not guess
        return UNKNOWN_VIEW_TYPE
    specification = properties.get("streamSpecification")
    if not specification:
        return None
    return specification.get("streamViewType") or UNKNOWN_VIEW_TYPE
