"""Lambda's filter-pattern semantics on DynamoDB stream records (no endpoint needed)."""

from __future__ import annotations

from typing import Any

import pytest

from cdc_local.filter_patterns import FilterCriteria, FilterPattern, FilterPatternError

RECORD: dict[str, Any] = {
    "eventName": "INSERT",
    "dynamodb": {
        "Keys": {"pk": {"S": "ORDER#1"}},
        "NewImage": {
            "pk": {"S": "ORDER#1"},
            "status": {"S": "paid"},
            "total": {"N": "42.5"},
            "gift": {"BOOL": True},
            "tags": {"SS": ["a", "b"]},
        },
    },
}
TTL_REMOVE = {
    "eventName": "REMOVE",
    "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
    "dynamodb": {"Keys": {"pk": {"S": "ORDER#1"}}},
}


def image(rules: dict[str, Any]) -> dict[str, Any]:
    return {"dynamodb": {"NewImage": rules}}


@pytest.mark.parametrize(
    ("pattern", "matches"),
    [
        ({"eventName": ["INSERT"]}, True),
        ({"eventName": ["MODIFY", "INSERT"]}, True),  # OR within a field
        ({"eventName": ["INSERT"], "dynamodb": {"Keys": {"pk": {"S": ["ORDER#2"]}}}}, False),  # AND
        (image({"status": {"S": [{"prefix": "pa"}]}}), True),
        (image({"status": {"S": [{"prefix": "x"}]}}), False),
        (image({"status": {"S": [{"suffix": "id"}]}}), True),
        (image({"status": {"S": [{"equals-ignore-case": "PAID"}]}}), True),
        (image({"status": {"S": [{"anything-but": ["open", "cancelled"]}]}}), True),
        (image({"status": {"S": [{"anything-but": "paid"}]}}), False),
        (image({"status": {"S": [{"anything-but": {"prefix": "pa"}}]}}), False),
        (image({"total": {"N": [{"numeric": [">", 40, "<=", 42.5]}]}}), True),
        (image({"total": {"N": [{"numeric": ["<", 40]}]}}), False),
        (image({"total": {"N": [{"numeric": ["=", 42.5]}]}}), True),
        (image({"gift": {"BOOL": [True]}}), True),
        (image({"gift": {"BOOL": [False]}}), False),
        (image({"tags": {"SS": ["b"]}}), True),  # any element of a list
        (image({"status": {"S": [{"exists": True}]}}), True),
        (image({"missing": {"S": [{"exists": False}]}}), True),
        (image({"missing": {"S": [{"exists": True}]}}), False),
        (image({"missing": {"S": [{"anything-but": "x"}]}}), False),  # absent fields match nothing
        (image({"status": [{"exists": True}]}), False),  # exists only works on leaves
        ({"$or": [{"eventName": ["REMOVE"]}, image({"status": {"S": ["paid"]}})]}, True),
        ({"userIdentity": {"type": ["Service"]}}, False),
    ],
)
def test_pattern_semantics(pattern: dict[str, Any], matches: bool) -> None:
    assert FilterPattern(pattern).matches(RECORD) is matches


def test_ttl_deletion_pattern_matches_only_service_removes() -> None:
    pattern = FilterPattern(
        '{"userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]}}'
    )
    assert pattern.matches(TTL_REMOVE)
    assert not pattern.matches({**TTL_REMOVE, "userIdentity": None})
    assert not pattern.matches(RECORD)


def test_criteria_pass_a_record_matching_any_pattern_and_pass_all_without_patterns() -> None:
    criteria = FilterCriteria.from_properties(
        {
            "FilterCriteria": {
                "Filters": [
                    {"Pattern": '{"eventName": ["REMOVE"]}'},
                    {"Pattern": '{"eventName": ["INSERT"]}'},
                ]
            }
        }
    )
    assert criteria.matches(RECORD) and criteria.matches(TTL_REMOVE)
    assert FilterCriteria.from_properties({}).matches(RECORD)


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ({"eventName": "INSERT"}, r"must be a list of rules"),
        ({"eventName": [{"contains": "x"}]}, r"unknown rule"),
        ({"n": [{"numeric": ["!=", 1]}]}, r"numeric operator '!='"),
        ({"n": [{"exists": "yes"}]}, r"exists takes true or false"),
    ],
)
def test_invalid_patterns_are_rejected_with_the_reason(
    pattern: dict[str, Any], message: str
) -> None:
    with pytest.raises(FilterPatternError, match=message):
        FilterPattern(pattern)


def test_an_empty_filter_is_rejected_as_the_cdk_raw_dict_pitfall() -> None:
    with pytest.raises(FilterPatternError, match=r"FilterCriteria\.filter"):
        FilterCriteria.from_properties({"FilterCriteria": {"Filters": [{}]}})
