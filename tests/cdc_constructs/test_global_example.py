"""The synthesized example of docs/global-tables.md: an orders table replicated to a second
region, a consumer in each region (one reader per replica's stream) and one TTL archive; its
snapshots (tests/snapshots/GlobalOrders*.json, `make snapshots`) and CdcChecks (with the
AwsSolutions and Serverless packs) clean."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from cdc_constructs import (
    CdcConfigurationError,
    ChangeCaptureTable,
    ConsumerGroupMember,
    ReplicaTable,
    StreamConsumer,
)
from cdc_constructs.filters import StreamFilters
from cdc_constructs.nag import CdcChecks
from tests.cdc_constructs.support import consumer_code, normalize, resources

SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots"
PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
EAST = cdk.Environment(account="123456789012", region="us-east-1")
WEST = cdk.Environment(account="123456789012", region="us-west-2")


@dataclass
class Example:
    east: dict[str, Any]
    west: dict[str, Any]


def build(app: cdk.App) -> tuple[cdk.Stack, cdk.Stack]:
    """us-east-1: the table (replica in us-west-2), order-stats and the TTL archive behind one
    mapping; us-west-2: order-stats on the replica's stream. One reader per stream."""
    east = cdk.Stack(app, "GlobalOrdersEast", env=EAST)
    orders = ChangeCaptureTable(
        east, "Orders", partition_key=PK, replicas=[dynamodb.ReplicaTableProps(region="us-west-2")]
    )
    StreamConsumer(
        east,
        "OrdersConsumers",
        table=orders,
        members=[
            ConsumerGroupMember("order-stats", [StreamFilters.exclude_ttl_deletions()]),
            ConsumerGroupMember(
                "ttl-archive", [StreamFilters.ttl_deletions_only()], reads_images=["OldImage"]
            ),
        ],
        **consumer_code(),
    )
    west = cdk.Stack(app, "GlobalOrdersWest", env=WEST)
    replica = ReplicaTable(west, "Orders", table=orders)
    StreamConsumer(
        west, "WestOrderStats", table=replica, consumer_name="order-stats", **consumer_code()
    )
    return east, west


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Example:
    app = cdk.App(outdir=str(tmp_path_factory.mktemp("global.out")))
    build(app)
    cdk.Validations.of(app).add_plugins(
        AwsSolutionsChecks(app), ServerlessChecks(app), CdcChecks(app)
    )
    assembly = app.synth()  # raises on any unacknowledged finding of the three packs
    return Example(
        assembly.get_stack_by_name("GlobalOrdersEast").template,
        assembly.get_stack_by_name("GlobalOrdersWest").template,
    )


@pytest.mark.parametrize("stack", ["GlobalOrdersEast", "GlobalOrdersWest"])
def test_snapshot(example: Example, stack: str) -> None:
    current = normalize(example.east if stack.endswith("East") else example.west)
    snapshot = SNAPSHOTS / f"{stack}.json"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        snapshot.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    assert current == json.loads(snapshot.read_text()), f"{stack} changed: run make snapshots"


def test_the_west_consumer_reads_the_replicas_stream_read_in_its_region(example: Example) -> None:
    (describe,) = resources(example.west, "Custom::AWS").values()
    create = json.loads(describe["Properties"]["Create"])  # the table's name: a literal
    assert (create["service"], create["action"]) == ("DynamoDB", "describeTable")
    (mapping,) = resources(example.west, "AWS::Lambda::EventSourceMapping").values()
    source = mapping["Properties"]["EventSourceArn"]
    assert source["Fn::GetAtt"][1] == "Table.LatestStreamArn"
    (function,) = [
        r["Properties"]["Environment"]["Variables"]
        for r in resources(example.west, "AWS::Lambda::Function").values()
        if r["Properties"].get("Environment", {}).get("Variables", {}).get("CDC_CONSUMER_NAME")
        and "CONSUMER_FUNCTION_NAME" not in r["Properties"]["Environment"]["Variables"]
    ]
    assert function["CDC_REPLICATED_TABLE"] == "true"
    assert function["CDC_TTL_ATTRIBUTE"] == "expireAt"


def test_the_archive_in_one_region_sees_every_regions_expiries(example: Example) -> None:
    """The group's mapping takes every change (order-stats has no identity-only filter on the
    mapping); the runtime tells replicated expiries by the TTL attribute (CDC_REPLICATED_TABLE)."""
    (function,) = [
        r["Properties"]["Environment"]["Variables"]
        for r in resources(example.east, "AWS::Lambda::Function").values()
        if "CDC_CONSUMER_GROUP" in r["Properties"].get("Environment", {}).get("Variables", {})
        and "CONSUMER_FUNCTION_NAME" not in r["Properties"]["Environment"]["Variables"]
    ]
    assert function["CDC_REPLICATED_TABLE"] == "true"
    (mapping,) = resources(example.east, "AWS::Lambda::EventSourceMapping").values()
    patterns = [
        json.loads(f["Pattern"]) for f in mapping["Properties"]["FilterCriteria"]["Filters"]
    ]
    assert not any("userIdentity" in p and "eventName" in p for p in patterns), patterns


def test_a_second_reader_of_a_replicas_stream_is_refused() -> None:
    app = cdk.App()
    _, west = build(app)
    replica = next(c for c in west.node.children if isinstance(c, ReplicaTable))
    with pytest.raises(CdcConfigurationError, match="at most 1 for a table with replicas"):
        StreamConsumer(west, "Another", table=replica, **consumer_code())


def test_a_replica_in_a_region_the_table_has_none_in_is_refused() -> None:
    app = cdk.App()
    east, _ = build(app)
    orders = next(c for c in east.node.children if isinstance(c, ChangeCaptureTable))
    elsewhere = cdk.Stack(app, "Elsewhere", env=cdk.Environment(region="eu-west-1"))
    with pytest.raises(CdcConfigurationError, match="eu-west-1"):
        ReplicaTable(elsewhere, "Orders", table=orders)


@pytest.mark.parametrize("reader", ["fan-out", "outbox"])
def test_the_fan_out_and_the_outbox_read_a_replica_as_a_local_table(reader: str) -> None:
    from cdc_constructs import OutboxPublisher, StreamFanOut

    app = cdk.App()
    east = cdk.Stack(app, "East", env=EAST)
    orders = ChangeCaptureTable(
        east, "Orders", partition_key=PK, replicas=[dynamodb.ReplicaTableProps(region="us-west-2")]
    )
    west = cdk.Stack(app, "West", env=WEST)
    replica = ReplicaTable(west, "Orders", table=orders)
    if reader == "fan-out":
        StreamFanOut(west, "Events", table=replica, source="com.example.orders")
    else:
        OutboxPublisher(
            west, "Outbox", table=replica, source="com.example.orders", key_prefix="OUTBOX#"
        )
    template = cdk.assertions.Template.from_stack(west).to_json()
    (pipe,) = resources(template, "AWS::Pipes::Pipe").values()
    assert pipe["Properties"]["Source"]["Fn::GetAtt"][1] == "Table.LatestStreamArn"
    with pytest.raises(CdcConfigurationError, match="at most 1 for a table with replicas"):
        StreamConsumer(west, "Second", table=replica, **consumer_code())
