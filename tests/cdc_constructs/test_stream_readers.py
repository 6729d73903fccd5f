"""A third reader of one table's stream (a second, with replicas) is refused when it is made,
naming the others, unless ``extra_reader_reason`` accepts it and acknowledges CDC-ESM11."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb

from cdc_constructs import (
    CdcConfigurationError,
    ChangeCaptureTable,
    FanOutConfigurationError,
    StreamConsumer,
    StreamFanOut,
)
from cdc_constructs.stream_readers import READERS_RULE, StreamReaders
from tests.cdc_constructs.support import consumer_code

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
ENV = cdk.Environment(account="111111111111", region="eu-west-1")


def consumer(scope: cdk.Stack, name: str, table: ChangeCaptureTable, **props) -> StreamConsumer:
    return StreamConsumer(
        scope, name, **consumer_code(), table=table, monitoring=False, redrive=False, **props
    )


def fan_out(scope: cdk.Stack, name: str, table: ChangeCaptureTable, **props) -> StreamFanOut:
    return StreamFanOut(scope, name, table=table, source="com.example.shop", **props)


def acknowledged(construct) -> dict[str, str]:
    found = {}
    for entry in construct.node.metadata:
        if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
            found.update(entry.data)
    return {key.rpartition("::")[2]: reason for key, reason in found.items()}


def test_a_third_reader_is_refused_naming_the_other_two(stack: cdk.Stack) -> None:
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    consumer(stack, "Stats", table)
    fan_out(stack, "Events", table)
    with pytest.raises(CdcConfigurationError) as caught:
        consumer(stack, "Archive", table)
    message = str(caught.value)
    assert message.startswith("StreamConsumer 'Archive': 1 invalid prop:")
    assert (
        "table='Test/Orders/Table': a table whose stream has room for another reader "
        "(at most 2): "
        "Test/Archive would be reader 3, after Test/Stats, Test/Events. DynamoDB Streams "
        "throttles a third reader of a shard."
    ) in message
    assert "give extra_reader_reason to accept the throttling" in message
    assert stack.node.try_find_child("Archive") is None  # nothing made


def test_a_third_pipe_is_refused_too(stack: cdk.Stack) -> None:
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    consumer(stack, "Stats", table)
    consumer(stack, "Archive", table)
    with pytest.raises(FanOutConfigurationError, match="Test/Events would be reader 3"):
        fan_out(stack, "Events", table)


def test_readers_in_other_stacks_count_together() -> None:
    app = cdk.App()
    tables = cdk.Stack(app, "Tables", env=ENV)
    table = ChangeCaptureTable(tables, "Orders", partition_key=PK)
    consumer(cdk.Stack(app, "One", env=ENV), "Stats", table)
    fan_out(cdk.Stack(app, "Two", env=ENV), "Events", table)
    with pytest.raises(CdcConfigurationError, match="after One/Stats, Two/Events"):
        consumer(cdk.Stack(app, "Three", env=ENV), "Archive", table)


def test_a_reason_accepts_the_reader_and_acknowledges_the_rule(stack: cdk.Stack) -> None:
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    consumer(stack, "Stats", table)
    consumer(stack, "Archive", table)
    reason = "a migration reader, removed after the backfill"
    third = fan_out(stack, "Events", table, extra_reader_reason=reason)
    assert acknowledged(third.pipe) == {READERS_RULE: reason}
    assert len(StreamReaders.of(stack).readers[table.table.node.path]) == 3
    with pytest.raises(CdcConfigurationError, match="extra_reader_reason='  ': a sentence"):
        consumer(stack, "Fourth", table, extra_reader_reason="  ")


def test_a_table_with_replicas_takes_one_reader() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Global", env=ENV)
    table = dynamodb.TableV2(
        stack,
        "Orders",
        partition_key=PK,
        dynamo_stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
        replicas=[dynamodb.ReplicaTableProps(region="us-east-1")],
    )
    consumer(stack, "Stats", table)
    with pytest.raises(CdcConfigurationError) as caught:
        fan_out(stack, "Events", table)
    assert (
        "a table whose stream has room for another reader (at most 1 for a table with "
        "replicas): Global/Events would be reader 2, after Global/Stats."
    ) in str(caught.value)


def test_two_replica_tables_of_one_replica_in_two_stacks_are_one_stream() -> None:
    """A replica is read through its stream whatever construct names it: a consumer on a second
    ReplicaTable of the same replica, in another stack of the app, is a second reader."""
    from cdc_constructs import ReplicaTable

    app = cdk.App()
    east = cdk.Stack(app, "East", env=cdk.Environment(account="111111111111", region="us-east-1"))
    orders = ChangeCaptureTable(
        east, "Orders", partition_key=PK, replicas=[dynamodb.ReplicaTableProps(region="eu-west-1")]
    )
    first, second = cdk.Stack(app, "Stats", env=ENV), cdk.Stack(app, "Archive", env=ENV)
    consumer(first, "Stats", ReplicaTable(first, "Orders", table=orders))  # type: ignore[arg-type]
    with pytest.raises(CdcConfigurationError) as refused:
        consumer(second, "Archive", ReplicaTable(second, "Orders", table=orders))  # type: ignore[arg-type]
    message = str(refused.value)
    assert "at most 1 for a table with replicas" in message and "Stats/Stats" in message
    # A ReplicaTable of another table in that region is another stream.
    other = ChangeCaptureTable(
        east, "Other", partition_key=PK, replicas=[dynamodb.ReplicaTableProps(region="eu-west-1")]
    )
    consumer(second, "Other", ReplicaTable(second, "OtherReplica", table=other))  # type: ignore[arg-type]
