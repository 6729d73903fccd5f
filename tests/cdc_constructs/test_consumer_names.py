"""A consumer's name namespaces its idempotency markers: the default is unique in the app, and
two consumers writing markers under one name into one idempotency table are refused, across
the stacks of one app too (issue 11 §2)."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Template
from constructs import Construct

from cdc_constructs import (
    CdcConfigurationError,
    ChangeCaptureTable,
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


def test_same_construct_id_under_different_parents_gets_different_default_names(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    markers = IdempotencyTable(stack, "Markers")
    for parent in ("Billing", "Shipping"):
        StreamConsumer(
            Construct(stack, parent),
            "Consumer",
            table=table,
            **consumer_code(),
            idempotency_table=markers,
        )
    names = _names(stack)
    assert sorted(names.values()) == ["Test-Billing-Consumer", "Test-Shipping-Consumer"]


def test_a_unique_construct_id_stays_the_default_name(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    StreamConsumer(Construct(stack, "Billing"), "Invoices", table=table, **consumer_code())
    StreamConsumer(stack, "Consumer", table=table, **consumer_code())
    assert sorted(_names(stack).values()) == ["Consumer", "Invoices"]


def test_a_default_name_steps_aside_for_a_given_one(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    markers = IdempotencyTable(stack, "Markers")
    StreamConsumer(stack, "Stats", table=table, **consumer_code(), idempotency_table=markers)
    StreamConsumer(
        stack,
        "Other",
        table=table,
        **consumer_code(),
        idempotency_table=markers,
        consumer_name="Stats",
    )
    assert sorted(_names(stack).values()) == ["Stats", "Test-Stats"]


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
