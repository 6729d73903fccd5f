"""A consumer's name namespaces its idempotency markers: the default is the consumer's own
construct id whatever else the app holds (issue 23 §3), and two consumers writing markers under
one name into one idempotency table are refused, never renamed, across the stacks of one app too
(issue 11 §2)."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Template
from constructs import Construct

from cdc_constructs import (
    CdcConfigurationError,
    ChangeCaptureTable,
    ConsumerGroupMember,
    IdempotencyTable,
    StreamConsumer,
)
from tests.cdc_constructs.support import consumer_code, resources

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


def _names(stack: cdk.Stack) -> dict[str, str]:
    """Each consumer function's CDC_CONSUMER_NAME, by the function's logical id prefix."""
    functions = resources(Template.from_stack(stack).to_json(), "AWS::Lambda::Function")
    return {
        logical_id[:-8]: function["Properties"]["Environment"]["Variables"]["CDC_CONSUMER_NAME"]
        for logical_id, function in functions.items()
        if "CDC_CONSUMER_NAME" in function["Properties"].get("Environment", {}).get("Variables", {})
        and "Redrive" not in logical_id
    }


def test_same_construct_id_under_different_parents_into_one_table_is_refused(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    markers = IdempotencyTable(stack, "Markers")
    StreamConsumer(
        Construct(stack, "Billing"),
        "Consumer",
        table=table,
        **consumer_code(),
        idempotency_table=markers,
    )
    with pytest.raises(CdcConfigurationError) as caught:
        StreamConsumer(
            Construct(stack, "Shipping"),
            "Consumer",
            table=table,
            **consumer_code(),
            idempotency_table=markers,
        )
    message = str(caught.value)
    assert "consumer_name='Consumer (the default: the construct id)'" in message
    assert "Test/Billing/Consumer already does" in message
    assert "each of Test/Billing/Consumer and Test/Shipping/Consumer" in message


def test_same_construct_id_under_different_parents_with_their_own_tables_keeps_the_id(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    for parent in ("Billing", "Shipping"):
        StreamConsumer(Construct(stack, parent), "Consumer", table=table, **consumer_code())
    assert sorted(_names(stack).values()) == ["Consumer", "Consumer"]


def _order_stats_app(cdk_context, *, with_member: str | None) -> dict[str, str]:
    """A standalone consumer ``order-stats`` (its default name), and maybe a group elsewhere in
    the app with a member ``order-stats`` (its own idempotency table, or the standalone's)."""
    app = cdk.App(context=cdk_context)
    stack = cdk.Stack(app, "Stack")
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    markers = IdempotencyTable(stack, "Markers")
    StreamConsumer(stack, "order-stats", table=table, **consumer_code(), idempotency_table=markers)
    if with_member is not None:
        StreamConsumer(
            Construct(stack, "Reports"),
            "Group",
            table=table,
            **consumer_code(),
            members=[ConsumerGroupMember("order-stats"), ConsumerGroupMember("audit")],
            idempotency_table=markers if with_member == "shared table" else None,
        )
    return _names(stack)


def test_adding_a_group_member_of_the_same_name_never_renames_a_consumer(cdk_context):
    """On main the standalone consumer became Stack-order-stats: its markers were forgotten."""
    alone = _order_stats_app(cdk_context, with_member=None)
    beside = _order_stats_app(cdk_context, with_member="own table")
    assert sorted(alone.values()) == ["order-stats"]
    assert sorted(beside.values()) == ["Group", "order-stats"]


def test_a_group_member_named_like_a_consumer_on_its_table_is_refused_naming_both(cdk_context):
    with pytest.raises(CdcConfigurationError) as caught:
        _order_stats_app(cdk_context, with_member="shared table")
    message = str(caught.value)
    assert message.startswith("StreamConsumer 'Group': 1 invalid prop:\n  - consumer_name=")
    assert (
        "Stack/order-stats already does, so each of Stack/order-stats and "
        "Stack/Reports/Group (member order-stats) would take the other's records"
    ) in message


def test_a_consumer_named_like_a_group_member_on_its_table_is_refused_naming_both(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    markers = IdempotencyTable(stack, "Markers")
    StreamConsumer(
        stack,
        "Group",
        table=table,
        **consumer_code(),
        idempotency_table=markers,
        members=[ConsumerGroupMember("order-stats"), ConsumerGroupMember("audit")],
    )
    with pytest.raises(CdcConfigurationError, match=r"Test/Group \(member order-stats\) already"):
        StreamConsumer(
            stack,
            "order-stats",
            table=table,
            **consumer_code(),
            idempotency_table=markers,
            extra_reader_reason="a test of names",
        )


def test_a_unique_construct_id_stays_the_default_name(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    StreamConsumer(Construct(stack, "Billing"), "Invoices", table=table, **consumer_code())
    StreamConsumer(stack, "Consumer", table=table, **consumer_code())
    assert sorted(_names(stack).values()) == ["Consumer", "Invoices"]


def test_a_default_name_does_not_step_aside_for_a_given_one_it_is_refused(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    markers = IdempotencyTable(stack, "Markers")
    StreamConsumer(stack, "Stats", table=table, **consumer_code(), idempotency_table=markers)
    with pytest.raises(CdcConfigurationError, match="Test/Stats already does"):
        StreamConsumer(
            stack,
            "Other",
            table=table,
            **consumer_code(),
            idempotency_table=markers,
            consumer_name="Stats",
        )


def test_one_name_into_one_table_is_refused_naming_both_paths(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    markers = IdempotencyTable(stack, "Markers")
    StreamConsumer(
        Construct(stack, "A"),
        "C",
        table=table,
        **consumer_code(),
        idempotency_table=markers,
        consumer_name="stats",
    )
    with pytest.raises(CdcConfigurationError) as caught:
        StreamConsumer(
            Construct(stack, "B"),
            "C",
            table=table,
            **consumer_code(),
            idempotency_table=markers,
            consumer_name="stats",
        )
    message = str(caught.value)
    assert message.startswith("StreamConsumer 'C': 1 invalid prop:\n  - consumer_name='stats': ")
    assert "Test/A/C already does, so each of Test/A/C and Test/B/C would take the other" in message


def test_one_name_into_one_table_is_refused_across_the_stacks_of_an_app(cdk_context):
    app = cdk.App(context=cdk_context)
    env = cdk.Environment(account="111111111111", region="eu-west-1")
    first, second = cdk.Stack(app, "First", env=env), cdk.Stack(app, "Second", env=env)
    markers = IdempotencyTable(first, "Markers")
    StreamConsumer(
        first,
        "C",
        table=ChangeCaptureTable(first, "Orders", partition_key=PK),
        **consumer_code(),
        idempotency_table=markers,
        consumer_name="stats",
    )
    with pytest.raises(CdcConfigurationError, match="First/C already does"):
        StreamConsumer(
            second,
            "C",
            table=ChangeCaptureTable(second, "Orders", partition_key=PK),
            **consumer_code(),
            idempotency_table=markers,
            consumer_name="stats",
        )


def test_one_name_into_different_tables_is_fine(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    StreamConsumer(
        Construct(stack, "A"), "C", table=table, **consumer_code(), consumer_name="stats"
    )
    StreamConsumer(
        Construct(stack, "B"), "C", table=table, **consumer_code(), consumer_name="stats"
    )
    assert sorted(_names(stack).values()) == ["stats", "stats"]
