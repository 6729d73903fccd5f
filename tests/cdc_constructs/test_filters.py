"""StreamFilters build the exact Lambda filter patterns, and StreamConsumer synthesizes them
unchanged (aws-cdk-lib would render a raw dict as ``{}``)."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb

from cdc_constructs import CdcConfigurationError, ChangeCaptureTable, StreamConsumer, StreamFilters
from tests.cdc_constructs.support import consumer_code, only


def test_ttl_deletions_only_matches_the_service_identity_on_remove():
    assert StreamFilters.ttl_deletions_only() == {
        "eventName": ["REMOVE"],
        "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
    }


def test_exclude_ttl_deletions_requires_no_user_identity():
    assert StreamFilters.exclude_ttl_deletions() == {"userIdentity": {"type": [{"exists": False}]}}


def test_event_names_deduplicates_in_order():
    assert StreamFilters.event_names("MODIFY", "INSERT", "MODIFY") == {
        "eventName": ["MODIFY", "INSERT"]
    }


def test_event_names_rejects_unknown_names():
    with pytest.raises(CdcConfigurationError, match=r"names=\['UPDATE'\]: one or more of INSERT"):
        StreamFilters.event_names("UPDATE")


@pytest.mark.parametrize(
    ("value", "condition"),
    [
        ("PAID", {"S": ["PAID"]}),
        (True, {"BOOL": [True]}),
        (20, {"N": [{"numeric": ["=", 20]}]}),
        (2.5, {"N": [{"numeric": ["=", 2.5]}]}),
    ],
)
def test_new_image_attribute_equals_types_the_value(value, condition):
    assert StreamFilters.new_image_attribute_equals("status", value) == {
        "dynamodb": {"NewImage": {"status": condition}}
    }


def test_new_image_attribute_prefix():
    assert StreamFilters.new_image_attribute_prefix("sku", "BOOK-") == {
        "dynamodb": {"NewImage": {"sku": {"S": [{"prefix": "BOOK-"}]}}}
    }


def test_new_image_attribute_numeric_flattens_conditions():
    assert StreamFilters.new_image_attribute_numeric("amount", (">=", 100), ("<", 1000)) == {
        "dynamodb": {"NewImage": {"amount": {"N": [{"numeric": [">=", 100, "<", 1000]}]}}}
    }


def test_new_image_attribute_numeric_rejects_bad_operator():
    with pytest.raises(CdcConfigurationError, match="operator one of =, <, <=, >, >="):
        StreamFilters.new_image_attribute_numeric("amount", ("!=", 1))


def test_key_prefix():
    assert StreamFilters.key_prefix("pk", "OUTBOX#") == {
        "dynamodb": {"Keys": {"pk": {"S": [{"prefix": "OUTBOX#"}]}}}
    }


@pytest.mark.parametrize("prefix", ["", None])
def test_key_prefix_rejects_empty_prefix(prefix):
    with pytest.raises(CdcConfigurationError, match=r"prefix=.*: a non-empty str"):
        StreamFilters.key_prefix("pk", prefix)


def test_all_of_merges_into_one_pattern():
    merged = StreamFilters.all_of(
        StreamFilters.exclude_ttl_deletions(),
        StreamFilters.event_names("INSERT", "MODIFY"),
        StreamFilters.new_image_attribute_equals("status", "PAID"),
        StreamFilters.key_prefix("pk", "ORDER#"),
    )
    assert merged == {
        "userIdentity": {"type": [{"exists": False}]},
        "eventName": ["INSERT", "MODIFY"],
        "dynamodb": {
            "NewImage": {"status": {"S": ["PAID"]}},
            "Keys": {"pk": {"S": [{"prefix": "ORDER#"}]}},
        },
    }


def test_all_of_rejects_two_conditions_on_one_field():
    with pytest.raises(CdcConfigurationError, match=r"eventName=\['REMOVE'\]: one condition"):
        StreamFilters.all_of(
            StreamFilters.event_names("INSERT"), StreamFilters.event_names("REMOVE")
        )


def test_helpers_return_fresh_dicts():
    first = StreamFilters.ttl_deletions_only()
    first["userIdentity"]["type"].append("Mutated")
    assert StreamFilters.ttl_deletions_only()["userIdentity"]["type"] == ["Service"]


def test_each_pattern_is_synthesized_exactly_as_given(stack: cdk.Stack):
    patterns = [
        StreamFilters.exclude_ttl_deletions(),
        StreamFilters.ttl_deletions_only(),
        StreamFilters.new_image_attribute_numeric("amount", (">", 0)),
        StreamFilters.key_prefix("pk", "ORDER#"),
        {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"status": {"S": ["NEW"]}}}},
    ]
    table = ChangeCaptureTable(
        stack,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
    )
    StreamConsumer(stack, "Consumer", **consumer_code(), table=table, filters=patterns)
    from aws_cdk.assertions import Template

    mapping = only(Template.from_stack(stack).to_json(), "AWS::Lambda::EventSourceMapping")
    synthesized = [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]
    assert synthesized == patterns
