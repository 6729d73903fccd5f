"""Unsafe or invalid props raise one CdcConfigurationError naming every problem, before any
construct is added to the tree."""

from __future__ import annotations

import pytest
from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_

from cdc_constructs import CdcConfigurationError, ChangeCaptureTable, StreamConsumer, StreamFilters
from tests.cdc_constructs.support import consumer_code, consumer_error, orders_table


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"retry_attempts": -1}, "retry_attempts=-1: a number in 0..10000; finite: -1"),
        ({"retry_attempts": 10_001}, "retry_attempts=10001: a number in 0..10000"),
        (
            {"max_record_age": Duration.hours(24)},
            "max_record_age='86400 s': whole seconds in 60..86399",
        ),
        (
            {"max_record_age": Duration.days(7)},
            "max_record_age='604800 s': whole seconds in 60..86399",
        ),
        (
            {"max_record_age": Duration.seconds(59)},
            "max_record_age='59 s': whole seconds in 60..86399",
        ),
        ({"batch_size": 0}, "batch_size=0: a number in 1..10000"),
        ({"batch_size": 10_001}, "batch_size=10001: a number in 1..10000"),
        ({"parallelization_factor": 0}, "parallelization_factor=0: a number in 1..10"),
        ({"parallelization_factor": 11}, "parallelization_factor=11: a number in 1..10"),
        (
            {"max_batching_window": Duration.seconds(301)},
            "max_batching_window='301 s': whole seconds in 0..300",
        ),
        (
            {"starting_position": lambda_.StartingPosition.LATEST},
            "starting_position='LATEST': TRIM_HORIZON; LATEST skips the records written while "
            "the mapping is created or updated; to accept that, also pass "
            "allow_latest_starting_position=True",
        ),
        (
            {"filters": [StreamFilters.event_names("INSERT")] * 6},
            "filters='6 patterns': at most 5 patterns per event source mapping",
        ),
        ({"filters": [{}]}, "filters[0]={}: a non-empty dict"),
        ({"filters": [{"eventname": ["INSERT"]}]}, "eventname never matches"),
        ({"consumer_name": "a#b"}, "consumer_name='a#b': a non-empty string without '#'"),
        ({"code": lambda_.Code.from_inline("x = 1")}, "handler=None: the handler string"),
        ({"timeout": Duration.minutes(16)}, "timeout='960 s': whole seconds in 1..900"),
        ({"memory_size": 64}, "memory_size=64: a number in 128..10240"),
        (
            {"timeout": Duration.seconds(880)},
            "redrive='True with a consumer timeout of 880 s': a consumer timeout below 870 s",
        ),
        (
            {"iterator_age_alarm_threshold": Duration.hours(2)},
            "iterator_age_alarm_threshold='7200 s': more than 0 and below max_record_age (3600 s)",
        ),
    ],
)
def test_bad_prop_is_named_with_its_value_and_what_is_allowed(stack, props, expected):
    error = consumer_error(stack, **props)
    assert expected in str(error)
    assert len(error.problems) == 1, str(error)


def test_latest_is_allowed_with_explicit_opt_in(stack):
    consumer = StreamConsumer(
        stack,
        "Consumer",
        **consumer_code(),
        table=orders_table(stack),
        starting_position=lambda_.StartingPosition.LATEST,
        allow_latest_starting_position=True,
    )
    assert consumer.event_source_mapping is not None


@pytest.mark.parametrize(
    ("view_type", "pattern", "image"),
    [
        ("KEYS_ONLY", StreamFilters.new_image_attribute_equals("status", "PAID"), "NewImage"),
        ("NEW_IMAGE", {"dynamodb": {"OldImage": {"status": {"S": ["PAID"]}}}}, "OldImage"),
        ("OLD_IMAGE", StreamFilters.new_image_attribute_prefix("sku", "B"), "NewImage"),
    ],
)
def test_filter_on_an_image_the_stream_lacks(stack, view_type, pattern, image):
    table = orders_table(stack, dynamodb.StreamViewType[view_type])
    error = consumer_error(stack, table=table, filters=[pattern])
    assert f"a stream with view type {view_type} carries no {image}" in str(error)
    assert error.problems[0].prop == "filters[0]"


def test_key_filters_work_on_keys_only_streams(stack):
    table = orders_table(stack, dynamodb.StreamViewType.KEYS_ONLY)
    StreamConsumer(
        stack,
        "Consumer",
        **consumer_code(),
        table=table,
        filters=[StreamFilters.key_prefix("pk", "O#")],
    )


def test_imported_table_filters_checked_against_given_view_type(stack):
    table = dynamodb.TableV2.from_table_attributes(
        stack,
        "Imported",
        table_name="orders",
        table_stream_arn="arn:aws:dynamodb:eu-west-1:111111111111:table/orders/stream/2024",
    )
    error = consumer_error(
        stack,
        table=table,
        stream_view_type=dynamodb.StreamViewType.KEYS_ONLY,
        filters=[StreamFilters.new_image_attribute_equals("status", "PAID")],
    )
    assert "carries no NewImage" in str(error)


def test_table_without_stream_is_rejected(stack):
    table = dynamodb.TableV2.from_table_name(stack, "NoStream", "orders")
    error = consumer_error(stack, table=table)
    assert "table='Test/NoStream': a table with a stream" in str(error)


def test_every_problem_is_listed_in_one_error(stack):
    error = consumer_error(
        stack,
        retry_attempts=-1,
        max_record_age=Duration.hours(24),
        batch_size=0,
        parallelization_factor=11,
        starting_position=lambda_.StartingPosition.LATEST,
        filters=[StreamFilters.event_names("INSERT")] * 6,
    )
    assert [p.prop for p in error.problems] == [
        "starting_position",
        "batch_size",
        "parallelization_factor",
        "retry_attempts",
        "max_record_age",
        "filters",
    ]
    message = str(error)
    assert message.startswith("StreamConsumer 'Consumer': 6 invalid props:\n  - ")
    assert message.count("\n  - ") == 6


def test_change_capture_table_rejects_empty_ttl_attribute(stack):
    with pytest.raises(
        CdcConfigurationError, match="time_to_live_attribute='': a non-empty string"
    ):
        ChangeCaptureTable(
            stack,
            "Orders",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            time_to_live_attribute="",
        )
    assert stack.node.try_find_child("Orders") is None


def test_a_long_consumer_timeout_is_fine_without_the_redrive(stack):
    consumer = StreamConsumer(
        stack,
        "Consumer",
        **consumer_code(),
        table=orders_table(stack),
        timeout=Duration.seconds(880),
        redrive=False,
    )
    assert consumer.redrive is None
