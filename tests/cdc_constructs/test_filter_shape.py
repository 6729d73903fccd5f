"""A filter on a field or type the record never has is refused at every level where the record's
shape is known (issue 24 §3): Lambda and Pipes would drop every record it does not match,
silently. The error names the typo, its path and the field meant."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Template

from cdc_constructs import (
    ChangeCaptureTable,
    ConsumerGroupMember,
    KinesisConsumer,
    KinesisDestination,
    KinesisFilters,
    StreamConsumer,
    StreamFanOut,
    StreamFilters,
)
from cdc_constructs.exceptions import CdcConfigurationError
from tests.cdc_constructs.support import consumer_code, consumer_error, orders_table

TYPOS = [
    (
        {"dynamodb": {"NewImgae": {"status": {"S": ["PAID"]}}}},
        "filters[0].dynamodb.NewImgae",
        "dynamodb has no field 'NewImgae' (did you mean 'NewImage'?)",
    ),
    (
        {"dynamodb": {"NewImage": {"status": {"s": ["PAID"]}}}},
        "filters[0].dynamodb.NewImage.status.s",
        "an attribute value has no field 's' (did you mean 'S'?)",
    ),
    (
        {"dynamodb": {"NewImage": {"address": {"M": {"city": {"SS ": ["Oslo"]}}}}}},
        "filters[0].dynamodb.NewImage.address.M.city.SS ",
        "(did you mean 'SS'?)",
    ),
    (
        {"$or": [{"eventName": ["INSERT"]}, {"dynamodb": {"keys": {"pk": {"S": ["A"]}}}}]},
        "filters[0].$or[1].dynamodb.keys",
        "(did you mean 'Keys'?)",
    ),
    (
        {"userIdentity": {"principalID": ["dynamodb.amazonaws.com"]}},
        "filters[0].userIdentity.principalID",
        "(did you mean 'principalId'?)",
    ),
    (
        {"dynamodb": {"SequenceNumbr": [{"prefix": "1"}]}},
        "filters[0].dynamodb.SequenceNumbr",
        "(did you mean 'SequenceNumber'?)",
    ),
    (
        {"dynamodb": {"NewImage": {"status": ["PAID"]}}},
        "filters[0].dynamodb.NewImage.status",
        "rules on an attribute value, an object: rules match values only (exists too), so "
        "these never match (exists: false always does); put them under the attribute's "
        'type, e.g. {"S": ["PAID"]}',
    ),
    (
        {"dynamodb": {"OldImage": [{"exists": False}]}},
        "filters[0].dynamodb.OldImage",
        "rules on the attributes of an item, an object",
    ),
    (
        {"eventName": {"S": ["INSERT"]}},
        "filters[0].eventName",
        "the record holds a value here, not an object",
    ),
]


@pytest.mark.parametrize(("pattern", "path", "reason"), TYPOS)
def test_a_stream_consumer_refuses_a_typo_at_any_level(
    stack: cdk.Stack, pattern: dict[str, Any], path: str, reason: str
) -> None:
    error = consumer_error(stack, filters=[pattern])
    (problem,) = error.problems
    assert problem.prop == path
    assert reason in problem.allowed
    assert f"  - {path}=" in str(error)


@pytest.mark.parametrize(("pattern", "path", "reason"), TYPOS[:3])
def test_a_fan_out_pipe_refuses_them_too(
    stack: cdk.Stack, pattern: dict[str, Any], path: str, reason: str
) -> None:
    with pytest.raises(CdcConfigurationError) as raised:
        StreamFanOut(
            stack, "Fan", table=orders_table(stack), source="com.example", filters=[pattern]
        )
    assert f"{path}=" in str(raised.value) and reason in str(raised.value)


def test_a_group_members_filter_is_checked_with_its_path(stack: cdk.Stack) -> None:
    (pattern, path, reason) = TYPOS[0]
    error = consumer_error(
        stack, members=[ConsumerGroupMember("stats"), ConsumerGroupMember("paid", [pattern])]
    )
    assert reason in str(error) and path.removeprefix("filters[0]") in str(error)


def kinesis_consumer(stack: cdk.Stack, filters: list[dict[str, Any]]) -> KinesisConsumer:
    table = ChangeCaptureTable(
        stack,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        kinesis=KinesisDestination(retention=Duration.days(1)),
    )
    return KinesisConsumer(stack, "Replica", table=table, filters=filters, **consumer_code())


@pytest.mark.parametrize(
    ("pattern", "path", "reason"),
    [
        (
            KinesisFilters.on_data(TYPOS[0][0]),
            "filters[0].data.dynamodb.NewImgae",
            "data.dynamodb has no field 'NewImgae' (did you mean 'NewImage'?)",
        ),
        (
            KinesisFilters.on_data(TYPOS[1][0]),
            "filters[0].data.dynamodb.NewImage.status.s",
            "(did you mean 'S'?)",
        ),
        (
            {"data": {"eventname": ["INSERT"]}},
            "filters[0].data.eventname",
            "(did you mean 'eventName'?)",
        ),
        (
            {"partitionkey": ["A"]},
            "filters[0].partitionkey",
            "a Kinesis record has no field 'partitionkey' (did you mean 'partitionKey'?)",
        ),
        (
            # SequenceNumber and StreamViewType are not in a Kinesis record's change.
            {"data": {"dynamodb": {"StreamViewType": ["NEW_AND_OLD_IMAGES"]}}},
            "filters[0].data.dynamodb.StreamViewType",
            "data.dynamodb has no field 'StreamViewType'",
        ),
    ],
)
def test_a_kinesis_consumer_refuses_a_typo_in_the_record_or_its_data(
    stack: cdk.Stack, pattern: dict[str, Any], path: str, reason: str
) -> None:
    with pytest.raises(CdcConfigurationError) as raised:
        kinesis_consumer(stack, [pattern])
    (problem,) = raised.value.problems
    assert problem.prop == path and reason in problem.allowed


def test_well_typed_filters_at_every_level_synthesize_as_given(stack: cdk.Stack) -> None:
    patterns = [
        {
            "eventName": ["MODIFY"],
            "dynamodb": {
                "Keys": {"pk": {"S": [{"prefix": "O#"}]}},
                "NewImage": {
                    "address": {"M": {"city": {"S": ["Oslo"]}}},
                    "tags": {"SS": ["x"]},
                    "amount": {"N": [{"numeric": [">", 0]}]},
                    "paid": {"BOOL": [True]},
                    "note": {"NULL": [True]},
                    "lines": {"L": [{"exists": True}]},
                },
                "StreamViewType": ["NEW_AND_OLD_IMAGES"],
            },
        },
        StreamFilters.exclude_ttl_deletions(),
        StreamFilters.ttl_deletions_only(),
        StreamFilters.all_of(
            StreamFilters.event_names("INSERT"), StreamFilters.key_prefix("pk", "O#")
        ),
        StreamFilters.new_image_attribute_numeric("amount", (">=", 1)),
    ]
    StreamConsumer(
        stack, "Consumer", table=orders_table(stack), filters=patterns, **consumer_code()
    )
    (mapping,) = (
        Template.from_stack(stack).find_resources("AWS::Lambda::EventSourceMapping").values()
    )
    assert len(mapping["Properties"]["FilterCriteria"]["Filters"]) == 5


VALUE_TYPOS = [
    (
        {"eventName": ["REMOVED"]},
        "filters[0].eventName",
        "'REMOVED' is not a value of eventName (did you mean 'REMOVE'?): it never matches",
    ),
    (
        {"eventName": [{"anything-but": ["INSRT"]}]},
        "filters[0].eventName",
        "its values are INSERT, MODIFY, REMOVE",
    ),
    (
        {"eventName": [{"prefix": "DEL"}]},
        "filters[0].eventName",
        "'DEL' is not a value of eventName",
    ),
    (
        {"eventName": ["REMOVE"], "userIdentity": {"type": ["service"]}},
        "filters[0].userIdentity.type",
        "'service' is not a value of userIdentity.type (did you mean 'Service'?)",
    ),
    (
        {"userIdentity": {"principalId": ["dynamodb.amazonaws.co"]}},
        "filters[0].userIdentity.principalId",
        "(did you mean 'dynamodb.amazonaws.com'?)",
    ),
    (
        {"dynamodb": {"SizeBytes": ["100"]}},
        "filters[0].dynamodb.SizeBytes",
        "the record holds a number here, and '100' is a string",
    ),
    (
        {"dynamodb": {"SequenceNumber": [{"numeric": [">", 100]}]}},
        "filters[0].dynamodb.SequenceNumber",
        "the record holds a string here",
    ),
    (
        {"dynamodb": {"StreamViewType": ["NEW_AND_OLD_IMAGE"]}},
        "filters[0].dynamodb.StreamViewType",
        "(did you mean 'NEW_AND_OLD_IMAGES'?)",
    ),
]


@pytest.mark.parametrize(("pattern", "path", "reason"), VALUE_TYPOS)
def test_a_value_the_service_never_writes_is_refused_with_the_value_meant(
    stack: cdk.Stack, pattern: dict[str, Any], path: str, reason: str
) -> None:
    error = consumer_error(stack, filters=[pattern])
    (problem,) = error.problems
    assert problem.prop == path
    assert reason in problem.allowed


def test_the_values_the_service_writes_pass(stack: cdk.Stack) -> None:
    StreamConsumer(
        stack,
        "Consumer",
        table=orders_table(stack),
        filters=[
            StreamFilters.ttl_deletions_only(),
            StreamFilters.event_names("INSERT", "MODIFY", "REMOVE"),
            {"eventName": [{"anything-but": ["REMOVE"]}, {"prefix": "MOD"}]},
            {"eventName": [{"equals-ignore-case": "insert"}], "eventSource": ["aws:dynamodb"]},
            {"dynamodb": {"SizeBytes": [{"numeric": ["<", 1000]}], "SequenceNumber": ["1"]}},
        ],
        **consumer_code(),
    )


def test_a_kinesis_consumer_checks_the_changes_values_under_data(stack: cdk.Stack) -> None:
    with pytest.raises(CdcConfigurationError) as raised:
        kinesis_consumer(stack, [KinesisFilters.on_data({"eventName": ["UPDATE"]})])
    assert "filters[0].data.eventName" in str(raised.value)
    assert "'UPDATE' is not a value of eventName" in str(raised.value)
