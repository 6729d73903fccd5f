"""cdc_consumer.sinks.aggregates: mergeable view updates (hot aggregates).

The merge must be exactly the sequential application of the updates (property test on a model
of DynamoDB's ADD / SET / DELETE), and the Update action an aggregate carries must do on
DynamoDB (moto's server) what its structure says.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from cdc_consumer.exceptions import InvalidActionError
from cdc_consumer.sinks.aggregates import Aggregate, increment, merge_aggregates, update_aggregate
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.cdc_consumer.fixtures import Resources

TABLE = "view"
KEY = {"pk": "CUSTOMER#1"}


def apply(item: dict[str, Any], update: Aggregate) -> dict[str, Any]:
    """DynamoDB's semantics of the update's ADD / SET / ADD-to-set / DELETE-from-set."""
    item = dict(item)
    for name, value in update.adds.items():
        item[name] = item.get(name, Decimal(0)) + value
    item.update(update.puts)
    for name, ops in update.set_ops.items():
        members = set(item.get(name, set()))
        for element, added in ops.items():
            if added:
                members.add(element)
            else:
                members.discard(element)
        if members:
            item[name] = members
        else:
            item.pop(name, None)
    return item


ATTRIBUTES = ["a", "b", "c"]
updates = st.lists(
    st.one_of(
        st.builds(
            lambda name, n: update_aggregate(TABLE, KEY, add={name: n}),
            st.sampled_from(ATTRIBUTES),
            st.integers(-5, 5),
        ),
        st.builds(
            lambda name, v: update_aggregate(TABLE, KEY, put={name: v}),
            st.sampled_from(ATTRIBUTES),
            st.text(max_size=3),
        ),
        st.builds(
            lambda name, members, add: update_aggregate(
                TABLE, KEY, **{"add_to_set" if add else "delete_from_set": {name: members}}
            ),
            st.sampled_from(ATTRIBUTES),
            st.sets(st.sampled_from(["x", "y", "z"]), min_size=1),
            st.booleans(),
        ),
        st.builds(
            lambda a, b: increment(TABLE, KEY, {"a": a, "b": b}),
            st.integers(-3, 3),
            st.integers(-3, 3),
        ),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(updates)
def test_a_merge_is_the_updates_applied_one_after_the_other(group: list[Aggregate]) -> None:
    merged = merge_aggregates(group)
    if merged is None:
        return  # not combinable: the transaction is cut between them instead
    sequential: dict[str, Any] = {}
    for update in group:
        sequential = apply(sequential, update)
    assert apply({}, merged) == sequential
    assert merged.identity == group[0].identity


def test_increments_merge_into_their_sum() -> None:
    merged = merge_aggregates(
        [increment(TABLE, KEY, {"n": 1, "t": Decimal("2.5")}), increment(TABLE, KEY, {"n": 2})]
    )
    assert merged is not None
    assert merged.adds == {"n": Decimal(3), "t": Decimal("2.5")}


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (increment(TABLE, KEY, {"n": 1}), update_aggregate(TABLE, KEY, put={"n": 2})),
        (increment(TABLE, KEY, {"n": 1}), increment(TABLE, {"pk": "CUSTOMER#2"}, {"n": 1})),
        (increment(TABLE, KEY, {"n": 1}), increment("other", KEY, {"n": 1})),
        (
            update_aggregate(TABLE, KEY, add_to_set={"s": ["x"]}),
            update_aggregate(TABLE, KEY, delete_from_set={"s": ["y"]}),
        ),
    ],
)
def test_updates_that_cannot_merge(first: Aggregate, second: Aggregate) -> None:
    assert first.then(second) is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "at least one attribute"),
        ({"add": {"n": 1.5}}, "no floats"),
        ({"add": {"n": True}}, "int or Decimal"),
        ({"add": {"pk": 1}}, "key attributes"),
        ({"add": {"n": 1}, "put": {"n": 2}}, "two of"),
        ({"add_to_set": {"s": []}}, "cannot be empty"),
        ({"add_to_set": {"s": ["x"]}, "delete_from_set": {"s": ["y"]}}, "both added"),
    ],
)
def test_invalid_aggregates_are_poison(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidActionError, match=message):
        update_aggregate(TABLE, KEY, **kwargs)


def test_an_aggregate_is_a_plain_update_action() -> None:
    action = increment(TABLE, KEY, {"count_paid": 1})
    assert set(action) == {"Update"}
    body = action["Update"]
    assert body["TableName"] == TABLE
    assert body["Key"] == {"pk": {"S": "CUSTOMER#1"}}
    assert body["UpdateExpression"] == "ADD #g0 :g0"
    assert body["ExpressionAttributeNames"] == {"#g0": "count_paid"}
    assert body["ExpressionAttributeValues"] == {":g0": {"N": "1"}}


def test_the_action_does_on_dynamodb_what_its_structure_says(resources: Resources) -> None:
    """Each update sent alone, then the merge of the same on another item: both items equal
    the model's result."""
    group = [
        update_aggregate(
            resources.view_table,
            {"pk": "one"},
            add={"n": 2},
            put={"name": "first"},
            add_to_set={"tags": ["x", "y"]},
        ),
        update_aggregate(resources.view_table, {"pk": "one"}, add={"n": -5, "m": 1}),
        update_aggregate(resources.view_table, {"pk": "one"}, put={"name": "second"}),
        update_aggregate(resources.view_table, {"pk": "one"}, add_to_set={"tags": ["z"]}),
    ]
    merged = merge_aggregates(group)
    assert merged is not None
    for update in group:
        resources.dynamodb.update_item(**update["Update"])
    body = dict(merged["Update"], Key={"pk": {"S": "merged"}})
    resources.dynamodb.update_item(**body)
    items = {item.pop("pk"): item for item in resources.scan(resources.view_table)}
    expected: dict[str, Any] = {}
    for update in group:
        expected = apply(expected, update)
    assert items["one"] == items["merged"] == expected


combinable = st.lists(
    st.builds(
        lambda n, v, added, deleted: update_aggregate(
            TABLE,
            KEY,
            add={"a": n},
            put={"b": v} if v is not None else None,
            add_to_set={"c": added} if added else None,
            delete_from_set={"d": deleted} if deleted else None,
        ),
        st.integers(-5, 5),
        st.one_of(st.none(), st.integers(0, 9)),
        st.sets(st.sampled_from(["x", "y"])),
        st.sets(st.sampled_from(["x", "y"])),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(combinable)
def test_updates_keeping_to_one_kind_per_attribute_always_merge(group: list[Aggregate]) -> None:
    merged = merge_aggregates(group)
    assert merged is not None
    sequential: dict[str, Any] = {}
    for update in group:
        sequential = apply(sequential, update)
    assert apply({}, merged) == sequential
