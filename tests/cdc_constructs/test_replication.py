"""ChangeCaptureTable with replicas (a global table) and what its consumers get: the runtime told
the table is replicated and its TTL attribute, filters on the TTL identity widened and said so."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Annotations, Match, Template

from cdc_constructs import CdcConfigurationError, ChangeCaptureTable, StreamConsumer
from cdc_constructs.filters import StreamFilters
from cdc_constructs.replication import REPLICATED_FILTER_WARNING
from tests.cdc_constructs.support import resources, with_code

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
US_EAST_1 = cdk.Environment(account="123456789012", region="us-east-1")


@pytest.fixture
def stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "Orders", env=US_EAST_1)


def _global(stack: cdk.Stack, **props: Any) -> ChangeCaptureTable:
    return ChangeCaptureTable(
        stack,
        "Orders",
        partition_key=PK,
        replicas=[dynamodb.ReplicaTableProps(region="us-west-2")],
        **props,
    )


def test_a_table_with_replicas_is_a_global_table_with_its_stream_and_ttl(stack) -> None:
    table = _global(stack)
    assert table.replicated and table.replica_regions == ["us-west-2"]
    (props,) = [
        r["Properties"]
        for r in resources(
            Template.from_stack(stack).to_json(), "AWS::DynamoDB::GlobalTable"
        ).values()
    ]
    assert sorted(r["Region"] for r in props["Replicas"]) == ["us-east-1", "us-west-2"]
    assert props["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expireAt", "Enabled": True}


def test_ttl_on_a_strongly_consistent_table_is_refused_with_the_reason(stack) -> None:
    with pytest.raises(CdcConfigurationError) as refused:
        ChangeCaptureTable(
            stack,
            "Orders",
            partition_key=PK,
            replicas=[
                dynamodb.ReplicaTableProps(region="us-east-2"),
                dynamodb.ReplicaTableProps(region="us-west-2"),
            ],
            multi_region_consistency=dynamodb.MultiRegionConsistency.STRONG,
        )
    message = str(refused.value)
    assert "time_to_live_attribute" in message and "'expireAt'" in message
    assert "MRSC" in message and "does not support TTL" in message


def test_a_strongly_consistent_table_without_ttl_is_made(stack) -> None:
    table = ChangeCaptureTable(
        stack,
        "Orders",
        partition_key=PK,
        replicas=[
            dynamodb.ReplicaTableProps(region="us-east-2"),
            dynamodb.ReplicaTableProps(region="us-west-2"),
        ],
        multi_region_consistency=dynamodb.MultiRegionConsistency.STRONG,
        time_to_live_attribute=None,
    )
    assert table.time_to_live_attribute is None
    (props,) = [
        r["Properties"]
        for r in resources(
            Template.from_stack(stack).to_json(), "AWS::DynamoDB::GlobalTable"
        ).values()
    ]
    assert props["MultiRegionConsistency"] == "STRONG" and "TimeToLiveSpecification" not in props


def _consumer(stack: cdk.Stack, table: Any, **props: Any) -> dict[str, Any]:
    StreamConsumer(stack, "Archive", table=table, **with_code(props))
    template = Template.from_stack(stack).to_json()
    (mapping,) = resources(template, "AWS::Lambda::EventSourceMapping").values()
    (function,) = [
        r["Properties"]
        for r in resources(template, "AWS::Lambda::Function").values()
        if "CDC_CONSUMER_NAME" in r["Properties"].get("Environment", {}).get("Variables", {})
        and "CONSUMER_FUNCTION_NAME" not in r["Properties"]["Environment"]["Variables"]
    ]
    patterns = [
        json.loads(f["Pattern"]) for f in mapping["Properties"]["FilterCriteria"]["Filters"]
    ]
    return {"patterns": patterns, "env": function["Environment"]["Variables"]}


def test_a_ttl_archive_on_a_replicated_table_is_widened_and_told(stack) -> None:
    """The identity filter would miss every expiry replicated from another region: the mapping
    takes REMOVEs of items with a TTL attribute, and the runtime applies the filter as written
    after recognising replicated expiries."""
    synthesized = _consumer(stack, _global(stack), filters=[StreamFilters.ttl_deletions_only()])
    assert synthesized["patterns"] == [
        {"eventName": ["REMOVE"], "dynamodb": {"OldImage": {"expireAt": {"N": [{"exists": True}]}}}}
    ]
    env = synthesized["env"]
    assert env["CDC_REPLICATED_TABLE"] == "true" and env["CDC_TTL_ATTRIBUTE"] == "expireAt"
    assert json.loads(env["CDC_RECORD_FILTERS"]) == [StreamFilters.ttl_deletions_only()]
    warnings = Annotations.from_stack(stack).find_warning(
        "*", Match.string_like_regexp(f".*{REPLICATED_FILTER_WARNING}.*|.*TTL identity.*")
    )
    assert warnings, "the widening is said at synthesis"


def test_a_consumer_excluding_ttl_deletions_keeps_its_filter_and_is_told(stack) -> None:
    synthesized = _consumer(stack, _global(stack), filters=[StreamFilters.exclude_ttl_deletions()])
    assert synthesized["patterns"] == [StreamFilters.exclude_ttl_deletions()]
    assert json.loads(synthesized["env"]["CDC_RECORD_FILTERS"]) == [
        StreamFilters.exclude_ttl_deletions()
    ]


def test_a_single_region_table_keeps_the_identity_filter(stack) -> None:
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    synthesized = _consumer(stack, table, filters=[StreamFilters.ttl_deletions_only()])
    assert synthesized["patterns"] == [StreamFilters.ttl_deletions_only()]
    assert "CDC_REPLICATED_TABLE" not in synthesized["env"]
    assert "CDC_RECORD_FILTERS" not in synthesized["env"]


def test_a_second_reader_of_a_replicated_tables_stream_is_refused(stack) -> None:
    """AWS's DynamoDB quotas: for global tables, one simultaneous reader per shard."""
    table = _global(stack)
    StreamConsumer(stack, "First", table=table, **with_code({}))
    with pytest.raises(CdcConfigurationError, match="at most 1 for a table with replicas"):
        StreamConsumer(stack, "Second", table=table, **with_code({}))
