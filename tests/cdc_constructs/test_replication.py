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


HAND_WRITTEN_TTL_FILTERS = [
    {"eventName": ["REMOVE"], "userIdentity": {"principalId": ["dynamodb.amazonaws.com"]}},
    {"userIdentity": {"type": ["Service"]}},
    {"eventName": ["REMOVE"], "userIdentity": {"principalId": [{"prefix": "dynamodb."}]}},
]


@pytest.mark.parametrize("pattern", HAND_WRITTEN_TTL_FILTERS)
def test_a_hand_written_ttl_filter_on_a_replicated_table_is_widened_too(
    stack, pattern: dict[str, Any]
) -> None:
    """Any condition on userIdentity only the TTL identity meets drops replicated expiries in
    the mapping: each is widened as StreamFilters' is, and the runtime applies it as written."""
    synthesized = _consumer(stack, _global(stack), filters=[pattern])
    (widened,) = synthesized["patterns"]
    assert "userIdentity" not in widened and widened["eventName"] == ["REMOVE"]
    assert widened["dynamodb"] == {"OldImage": {"expireAt": {"N": [{"exists": True}]}}}
    assert json.loads(synthesized["env"]["CDC_RECORD_FILTERS"]) == [pattern]


def test_a_ttl_filter_inside_or_on_a_replicated_table_is_refused_with_the_way_out(stack) -> None:
    either = {"$or": [StreamFilters.ttl_deletions_only(), {"eventName": ["INSERT"]}]}
    with pytest.raises(CdcConfigurationError) as refused:
        StreamConsumer(stack, "Archive", table=_global(stack), **with_code({"filters": [either]}))
    message = str(refused.value)
    assert "filters[0]" in message and "$or" in message and "separate patterns" in message


def test_a_kinesis_consumer_refuses_a_ttl_filter_inside_or_too(stack) -> None:
    from cdc_constructs import KinesisConsumer, KinesisDestination, KinesisFilters

    either = {"$or": [StreamFilters.ttl_deletions_only(), {"eventName": ["INSERT"]}]}
    table = _global(stack, kinesis=KinesisDestination())
    with pytest.raises(CdcConfigurationError, match="separate patterns"):
        KinesisConsumer(
            stack,
            "Archive",
            table=table,
            **with_code({"filters": [KinesisFilters.on_data(either)]}),
        )


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


def _kinesis_consumer(stack: cdk.Stack, **props: Any) -> dict[str, Any]:
    from cdc_constructs import KinesisConsumer, KinesisDestination

    table = _global(stack, kinesis=KinesisDestination())
    KinesisConsumer(stack, "Archive", table=table, **with_code(props))
    return _synthesized(Template.from_stack(stack).to_json())


def _synthesized(template: dict[str, Any]) -> dict[str, Any]:
    (mapping,) = resources(template, "AWS::Lambda::EventSourceMapping").values()
    (function,) = [
        r["Properties"]
        for r in resources(template, "AWS::Lambda::Function").values()
        if "CDC_CONSUMER_NAME" in r["Properties"].get("Environment", {}).get("Variables", {})
        and "CONSUMER_FUNCTION_NAME" not in r["Properties"]["Environment"]["Variables"]
    ]
    criteria = mapping["Properties"].get("FilterCriteria", {"Filters": []})
    patterns = [json.loads(f["Pattern"]) for f in criteria["Filters"]]
    return {"patterns": patterns, "env": function["Environment"]["Variables"]}


def test_a_kinesis_ttl_archive_on_a_replicated_table_is_widened_and_told(stack) -> None:
    """The table's Kinesis stream carries the other regions' expiries without the identity too."""
    from cdc_constructs import KinesisFilters

    archive = KinesisFilters.on_data(StreamFilters.ttl_deletions_only())
    synthesized = _kinesis_consumer(stack, filters=[archive])
    assert synthesized["patterns"] == [
        {
            "data": {
                "eventName": ["REMOVE"],
                "dynamodb": {"OldImage": {"expireAt": {"N": [{"exists": True}]}}},
            }
        }
    ]
    env = synthesized["env"]
    assert env["CDC_REPLICATED_TABLE"] == "true" and env["CDC_TTL_ATTRIBUTE"] == "expireAt"
    assert json.loads(env["CDC_RECORD_FILTERS"]) == [archive]
    warnings = Annotations.from_stack(stack).find_warning(
        "*", Match.string_like_regexp(f".*{REPLICATED_FILTER_WARNING}.*|.*TTL identity.*")
    )
    assert warnings, "the widening is said at synthesis"


def test_a_kinesis_consumer_of_a_replicated_table_without_filters_is_told(stack) -> None:
    env = _kinesis_consumer(stack)["env"]
    assert env["CDC_REPLICATED_TABLE"] == "true" and env["CDC_TTL_ATTRIBUTE"] == "expireAt"
    assert "CDC_RECORD_FILTERS" not in env


def test_a_kinesis_consumer_excluding_ttl_deletions_keeps_its_filter(stack) -> None:
    from cdc_constructs import KinesisFilters

    excluding = KinesisFilters.on_data(StreamFilters.exclude_ttl_deletions())
    synthesized = _kinesis_consumer(stack, filters=[excluding])
    assert synthesized["patterns"] == [excluding]
    assert json.loads(synthesized["env"]["CDC_RECORD_FILTERS"]) == [excluding]


def _warnings(stack: cdk.Stack) -> list[str]:
    found = Annotations.from_stack(stack).find_warning("*", Match.any_value())
    return [str(w.entry.data) for w in found if REPLICATED_FILTER_WARNING in str(w.entry.data)]


def test_a_fan_out_excluding_ttl_deletions_of_a_replicated_table_is_warned(stack) -> None:
    """A pipe runs no code: its exclusion forwards the other regions' expiries as deletes, so
    synthesis says so, as it does for a Lambda consumer."""
    from cdc_constructs import StreamFanOut

    pattern = StreamFilters.exclude_ttl_deletions()
    StreamFanOut(stack, "Expiries", table=_global(stack), source="orders", filters=[pattern])
    (warning,) = _warnings(stack)
    assert "StreamFanOut 'Expiries'" in warning and "pipe" in warning
    (pipe,) = resources(Template.from_stack(stack).to_json(), "AWS::Pipes::Pipe").values()
    filters = pipe["Properties"]["SourceParameters"]["FilterCriteria"]["Filters"]
    assert [json.loads(f["Pattern"]) for f in filters] == [pattern], "kept as written"


@pytest.mark.parametrize("pattern", [StreamFilters.ttl_deletions_only(), *HAND_WRITTEN_TTL_FILTERS])
def test_a_fan_out_requiring_the_ttl_identity_of_a_replicated_table_is_refused(
    stack, pattern: dict[str, Any]
) -> None:
    """It would forward this region's expiries only, and a pipe has no runtime to widen for."""
    from cdc_constructs import FanOutConfigurationError, StreamFanOut

    with pytest.raises(FanOutConfigurationError) as refused:
        StreamFanOut(stack, "Expiries", table=_global(stack), source="orders", filters=[pattern])
    assert "filters[0]" in str(refused.value) and "StreamConsumer" in str(refused.value)


def test_a_fan_out_of_a_replica_excluding_ttl_deletions_is_warned() -> None:
    from cdc_constructs import ReplicaTable, StreamFanOut

    app = cdk.App()
    east = cdk.Stack(app, "East", env=US_EAST_1)
    orders = _global(east)
    west = cdk.Stack(app, "West", env=cdk.Environment(account="123456789012", region="us-west-2"))
    replica = ReplicaTable(west, "Orders", table=orders)
    StreamFanOut(
        west,
        "Expiries",
        table=replica,
        source="orders",
        filters=[StreamFilters.exclude_ttl_deletions()],
    )
    assert _warnings(west)


def test_a_fan_out_without_an_identity_filter_or_of_a_single_region_table_is_not_warned(
    stack,
) -> None:
    from cdc_constructs import OutboxPublisher, StreamFanOut

    StreamFanOut(stack, "Paid", table=_global(stack), source="orders", filters=[])
    other = cdk.Stack(cdk.App(), "Single", env=US_EAST_1)
    single = ChangeCaptureTable(other, "Orders", partition_key=PK)
    StreamFanOut(
        other, "Expiries", table=single, source="o", filters=[StreamFilters.ttl_deletions_only()]
    )
    third = cdk.Stack(cdk.App(), "Outbox", env=US_EAST_1)
    OutboxPublisher(third, "Outbox", table=_global(third), source="o", key_prefix="OUTBOX#")
    assert _warnings(stack) == _warnings(other) == _warnings(third) == []


def test_a_group_member_filtering_on_the_ttl_identity_is_warned(stack) -> None:
    from cdc_constructs import ConsumerGroupMember

    StreamConsumer(
        stack,
        "Group",
        table=_global(stack),
        members=[
            ConsumerGroupMember("stats", [StreamFilters.exclude_ttl_deletions()]),
            ConsumerGroupMember("archive", [StreamFilters.ttl_deletions_only()]),
        ],
        **with_code({}),
    )
    assert _warnings(stack)


@pytest.mark.parametrize("first", ["consumer", "fan-out"])
def test_a_fan_out_counts_as_the_one_reader_of_a_replicated_tables_stream(
    stack, first: str
) -> None:
    """AWS's one reader per shard of a global table's stream counts pipes as readers."""
    from cdc_constructs import FanOutConfigurationError, StreamFanOut

    table = _global(stack)
    if first == "consumer":
        StreamConsumer(stack, "First", table=table, **with_code({}))
        with pytest.raises(FanOutConfigurationError, match="at most 1 for a table with replicas"):
            StreamFanOut(stack, "Second", table=table, source="orders")
    else:
        StreamFanOut(stack, "First", table=table, source="orders")
        with pytest.raises(CdcConfigurationError, match="at most 1 for a table with replicas"):
            StreamConsumer(stack, "Second", table=table, **with_code({}))


def _key(stack: cdk.Stack) -> Any:
    from aws_cdk import aws_kms as kms

    return kms.Key(stack, "Key")


WEST_KEY = "arn:aws:kms:us-west-2:123456789012:key/0f0e0d0c-0b0a-0908-0706-050403020100"


def test_a_customer_key_with_replicas_without_their_keys_is_refused_naming_the_fix(
    stack,
) -> None:
    """aws-cdk-lib failed at synthesis ("KMS key for us-west-2 was not found in
    'replicaKeyArns'"): the table now says what to give before anything is made."""
    with pytest.raises(CdcConfigurationError) as refused:
        _global(stack, encryption_key=_key(stack))
    message = str(refused.value)
    assert "replica_key_arns" in message and "us-west-2" in message
    assert "arn:aws:kms:us-west-2:<account>:key/<id>" in message


@pytest.mark.parametrize(
    ("given", "wrong"),
    [
        ({"us-west-2": "arn:aws:kms:eu-west-1:123456789012:key/x"}, "a KMS key ARN in us-west-2"),
        ({"us-west-2": WEST_KEY, "eu-west-1": WEST_KEY}, "regions of the replicas only"),
    ],
)
def test_replica_keys_of_other_regions_are_refused(stack, given: Any, wrong: str) -> None:
    with pytest.raises(CdcConfigurationError, match=wrong):
        _global(stack, encryption_key=_key(stack), replica_key_arns=given)


def test_replica_keys_without_a_table_key_are_refused(stack) -> None:
    with pytest.raises(CdcConfigurationError, match="omitted without encryption_key"):
        _global(stack, replica_key_arns={"us-west-2": WEST_KEY})


def test_replica_keys_encrypt_each_replica_and_its_replica_tables_consumers_decrypt() -> None:
    from cdc_constructs import ReplicaTable

    app = cdk.App()
    east = cdk.Stack(app, "East", env=US_EAST_1)
    orders = _global(east, encryption_key=_key(east), replica_key_arns={"us-west-2": WEST_KEY})
    west = cdk.Stack(app, "West", env=cdk.Environment(account="123456789012", region="us-west-2"))
    replica = ReplicaTable(west, "Orders", table=orders)  # its docstring's default: the key
    assert replica.encryption_key is not None and replica.encryption_key.key_arn == WEST_KEY
    StreamConsumer(west, "Stats", table=replica, **with_code({}))
    (props,) = [
        r["Properties"]
        for r in resources(
            Template.from_stack(east).to_json(), "AWS::DynamoDB::GlobalTable"
        ).values()
    ]
    (west_replica,) = [r for r in props["Replicas"] if r["Region"] == "us-west-2"]
    assert west_replica["SSESpecification"] == {"KMSMasterKeyId": WEST_KEY}
    statements = [
        s
        for policy in resources(Template.from_stack(west).to_json(), "AWS::IAM::Policy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert any("kms:Decrypt" in s["Action"] and s["Resource"] == WEST_KEY for s in statements), (
        "the consumer decrypts the replica's stream with the replica's key"
    )
