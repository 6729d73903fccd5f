"""StreamConsumer(members=[...]): several consumers behind one function and one mapping, each
keeping its name (markers, metrics, alarms, quarantine messages) and its filter."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Template

from cdc_constructs import (
    CdcConfigurationError,
    ChangeCaptureTable,
    ConsumerGroupMember,
    IdempotencyTable,
    StreamConsumer,
    StreamFilters,
)
from tests.cdc_constructs.support import consumer_code, resources

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
PAID = {"dynamodb": {"NewImage": {"status": {"S": ["paid"]}}}}


def group(stack: cdk.Stack, **props: Any) -> StreamConsumer:
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK, time_to_live_attribute="ttl")
    members = props.pop(
        "members",
        [
            ConsumerGroupMember("stats", [StreamFilters.exclude_ttl_deletions()], ["NewImage"]),
            ConsumerGroupMember("archive", [StreamFilters.ttl_deletions_only()], ["OldImage"]),
        ],
    )
    return StreamConsumer(
        stack, "Orders2", **consumer_code(), table=table, members=members, **props
    )


def mapping_patterns(template: dict[str, Any]) -> list[Any]:
    (mapping,) = resources(template, "AWS::Lambda::EventSourceMapping").values()
    criteria = mapping["Properties"].get("FilterCriteria", {"Filters": []})
    return [json.loads(f["Pattern"]) for f in criteria["Filters"]]


def test_one_function_one_mapping_filtering_on_the_union_of_the_members(stack):
    consumer = group(stack)
    template = Template.from_stack(stack).to_json()
    assert len(resources(template, "AWS::Lambda::EventSourceMapping")) == 1
    assert mapping_patterns(template) == [
        StreamFilters.exclude_ttl_deletions(),
        StreamFilters.ttl_deletions_only(),
    ]
    functions = resources(template, "AWS::Lambda::Function").values()
    variables, redrive = (
        f["Properties"]["Environment"]["Variables"]
        for handler in ("cdc_consumer.window_handler.handler", "cdc_consumer.redrive_handler.handler")
        for f in functions
        if f["Properties"]["Handler"] == handler
    )
    assert json.loads(variables["CDC_CONSUMER_GROUP"]) == [
        {"name": "stats", "filters": [StreamFilters.exclude_ttl_deletions()]},
        {"name": "archive", "filters": [StreamFilters.ttl_deletions_only()]},
    ]
    assert redrive["CDC_CONSUMER_GROUP"] == variables["CDC_CONSUMER_GROUP"]
    assert consumer.runtime_consumers == ["stats", "archive"]


def test_a_member_without_filters_makes_the_mapping_take_every_record(stack):
    group(stack, members=[ConsumerGroupMember("stats"), ConsumerGroupMember("audit", [PAID])])
    assert mapping_patterns(Template.from_stack(stack).to_json()) == []


def test_each_member_has_its_own_runtime_alarms_and_the_function_its_shared_ones(stack):
    consumer = group(stack)
    assert set(consumer.alarms) == {
        "IteratorAge",
        "DroppedRecords",
        "DestinationDeliveryFailures",
        "QuarantineQueueDepth",
        "RecordsQuarantined-stats",
        "RecordsQuarantined-archive",
        "ForeignMarkers-stats",
        "ForeignMarkers-archive",
        "ContentionFailures-stats",
        "ContentionFailures-archive",
        "FunctionErrors",
        "FunctionThrottles",
        "RedriveLostRecords",
        "RedriveErrors",
    }
    alarms = {
        a["Properties"]["AlarmDescription"].split(":")[0]: a["Properties"]
        for a in resources(Template.from_stack(stack).to_json(), "AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "RecordsQuarantined"
    }
    assert {name: a["Dimensions"] for name, a in alarms.items()} == {
        "stats": [{"Name": "Consumer", "Value": "stats"}],
        "archive": [{"Name": "Consumer", "Value": "archive"}],
    }


def test_members_names_are_marker_namespaces_no_other_consumer_may_take(stack):
    idempotency = IdempotencyTable(stack, "Markers")
    group(stack, idempotency_table=idempotency)
    other = ChangeCaptureTable(stack, "Other", partition_key=PK)
    with pytest.raises(CdcConfigurationError) as error:
        StreamConsumer(
            stack,
            "Other2",
            **consumer_code(),
            table=other,
            consumer_name="archive",
            idempotency_table=idempotency,
        )
    assert "consumer_name='archive'" in str(error.value)
    assert "Orders2" in str(error.value)


def test_members_are_checked_with_every_other_prop(stack):
    with pytest.raises(CdcConfigurationError) as error:
        group(
            stack,
            members=[
                ConsumerGroupMember(
                    "stats", [{"dynamodb": {"Keys": {"pk": {"S": [{"prefx": "a"}]}}}}]
                ),
                ConsumerGroupMember("stats"),
                ConsumerGroupMember("a#b"),
            ],
            filters=[PAID],
            reads_images=["NewImage"],
        )
    text = str(error.value)
    assert "filters=[" in text and "with members, give each member its filters" in text
    assert "with members, give each member its reads_images" in text
    assert "members=['stats', 'stats', 'a#b']: members with distinct consumer names" in text
    assert "members[0].filters" in text
    assert "members[2].consumer_name='a#b'" in text
    assert "\n  - consumer_name='a#b'" not in text  # each problem once


def test_members_must_be_consumer_group_members(stack):
    with pytest.raises(CdcConfigurationError) as error:
        group(stack, members=["stats", "archive"])
    assert "members=['stats', 'archive']: a non-empty list of ConsumerGroupMember" in str(
        error.value
    )


def test_a_member_reading_an_image_the_stream_lacks_is_refused(stack):
    table = ChangeCaptureTable(
        stack, "Keys", partition_key=PK, stream=dynamodb.StreamViewType.KEYS_ONLY
    )
    with pytest.raises(CdcConfigurationError) as error:
        StreamConsumer(
            stack,
            "Group",
            **consumer_code(),
            table=table,
            members=[ConsumerGroupMember("a"), ConsumerGroupMember("b", reads_images=["OldImage"])],
        )
    assert "members[1].reads_images" in str(error.value)
