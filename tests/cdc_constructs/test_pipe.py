"""StreamFanOut and OutboxPublisher share one pipe base (StreamPipe)."""

from __future__ import annotations

import re

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Template

from cdc_constructs import (
    FanOutConfigurationError,
    OutboxPublisher,
    StreamFanOut,
)
from cdc_constructs.pipe import StreamPipe
from tests.cdc_constructs.support import orders_table

SOURCE = "com.example.orders"


def test_outbox_publisher_makes_the_pipe_the_fan_out_made_for_the_outbox():
    publisher_stack, fan_out_stack = Stack(App(), "S"), Stack(App(), "S")
    publisher = OutboxPublisher(
        publisher_stack,
        "Outbox",
        table=orders_table(publisher_stack),
        source=SOURCE,
        key_prefix="O#",
    )
    fan_out = StreamFanOut(
        fan_out_stack,
        "Outbox",
        table=orders_table(fan_out_stack),
        source=SOURCE,
        outbox_key_prefix="O#",
    )
    assert isinstance(publisher, StreamPipe) and isinstance(fan_out, StreamPipe)
    assert (
        Template.from_stack(publisher_stack).to_json()
        == Template.from_stack(fan_out_stack).to_json()
    )


def test_pipe_alarms_are_a_dict_by_stable_name_as_the_consumers():
    stack = Stack(App(), "S")
    fan = StreamFanOut(stack, "F", table=orders_table(stack), source=SOURCE)
    assert list(fan.alarms) == [
        "ExecutionFailed",
        "ExecutionPartiallyFailed",
        "ExecutionTimeout",
        "DeadLetterQueue",
        "DeadLetterQueueAge",
    ]


def test_the_dead_letter_alarm_fires_at_the_first_message_and_says_how_long_records_remain():
    """A pipe's dead-letter message is a pointer: the alarm says the records remain 24 hours
    in the stream, then are gone, and which construct keeps failures whole for longer."""
    stack = Stack(App(), "S")
    StreamFanOut(stack, "F", table=orders_table(stack), source=SOURCE)
    alarms = Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm")
    (alarm,) = [
        a["Properties"]
        for a in alarms.values()
        if a["Properties"].get("MetricName") == "ApproximateNumberOfMessagesVisible"
    ]
    assert alarm["Threshold"] == 1
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    description = alarm["AlarmDescription"]
    assert "24 hours" in description and "gone" in description
    assert "StreamConsumer" in description and "14 days" in description


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"key_prefix": ""}, "outbox_key_prefix='': the outbox items' key prefix"),
        ({"key_attribute": "p k"}, "outbox_key_attribute='p k'"),
        ({"batch_size": 0}, "batch_size=0: a number in 1..10000"),
    ],
)
def test_outbox_publisher_refuses_bad_props_in_one_error(props, expected):
    stack = Stack(App(), "S")
    arguments = {"key_prefix": "O#"} | props
    with pytest.raises(FanOutConfigurationError, match=re.escape(expected)) as caught:
        OutboxPublisher(stack, "Outbox", table=orders_table(stack), source=SOURCE, **arguments)
    assert str(caught.value).startswith("OutboxPublisher 'Outbox': 1 invalid prop")
    assert stack.node.try_find_child("Outbox") is None


def test_outbox_publisher_needs_a_stream_with_new_images():
    stack = Stack(App(), "S")
    with pytest.raises(FanOutConfigurationError, match="carries NewImage, where outbox events"):
        OutboxPublisher(
            stack,
            "Outbox",
            table=orders_table(stack, dynamodb.StreamViewType.KEYS_ONLY),
            source=SOURCE,
            key_prefix="O#",
        )
