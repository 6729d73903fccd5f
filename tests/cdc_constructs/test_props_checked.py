"""Every numeric prop is checked for type, whole number and range; NaN and infinity are refused
before any aws-cdk-lib call; filters are checked in the runtime matcher's grammar; every problem
is in one error (issue 11 §5)."""

from __future__ import annotations

import math
import re

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from cdc_constructs import (
    FanOutConfigurationError,
    OutboxPublisher,
    StreamConsumer,
    StreamFanOut,
)
from tests.cdc_constructs.support import (
    consumer_code,
    consumer_error,
    only,
    orders_table,
)

NAN, INF = math.nan, math.inf
CODE = lambda_.Code.from_inline("def handler(event, context):\n    return {}\n")


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"retry_attempts": 2.5}, "retry_attempts=2.5: a whole number in 0..10000"),
        ({"retry_attempts": NAN}, "retry_attempts=nan: a number in 0..10000"),
        (
            {"retry_attempts": "5"},
            "retry_attempts='5': got a str; retry_attempts is a whole number in 0..10000",
        ),
        (
            {"retry_attempts": True},
            "retry_attempts=True: got a bool; retry_attempts is a whole number in 0..10000",
        ),
        ({"memory_size": 256.5}, "memory_size=256.5: a whole number in 128..10240"),
        ({"memory_size": INF}, "memory_size=inf: a number in 128..10240"),
        ({"batch_size": 10.5}, "batch_size=10.5: a whole number in 1..10000"),
        ({"batch_size": NAN}, "batch_size=nan: a number in 1..10000"),
        ({"parallelization_factor": 2.5}, "parallelization_factor=2.5: a whole number in 1..10"),
        (
            {"reserved_concurrent_executions": -5},
            "reserved_concurrent_executions=-5: a number >= 0",
        ),
        (
            {"reserved_concurrent_executions": 1.5},
            "reserved_concurrent_executions=1.5: a whole number >= 0",
        ),
        ({"reserved_concurrent_executions": INF}, "reserved_concurrent_executions=inf"),
        ({"bisect_batch_on_error": "yes"}, "bisect_batch_on_error='yes': True or False"),
        ({"monitoring": 0}, "monitoring=0: True or False"),
        ({"redrive": None}, "redrive=None: True or False"),
        ({"environment": {"A": 1}}, "environment['A']=1: a dict of environment variable"),
        ({"log_retention": 30}, "log_retention=30: a logs.RetentionDays"),
    ],
)
def test_a_bad_number_or_type_is_named_in_the_error(stack, props, expected):
    error = consumer_error(stack, code=CODE, handler="index.handler", **props)
    assert expected in str(error)
    assert len(error.problems) == 1, str(error)


@pytest.mark.parametrize(
    "prop",
    [
        "retry_attempts",
        "batch_size",
        "parallelization_factor",
        "memory_size",
        "reserved_concurrent_executions",
    ],
)
def test_a_duration_for_a_count_is_named_as_a_duration(stack, prop):
    """Not ``<aws_cdk.Duration object at 0x7f...>``: what was given, and what the prop is."""
    error = consumer_error(stack, code=CODE, handler="index.handler", **{prop: Duration.minutes(5)})
    (problem,) = error.problems
    assert str(problem).startswith(f"{prop}=Duration.minutes(5): got a Duration; {prop} is a "), (
        str(problem)
    )
    assert "object at 0x" not in str(error)


@pytest.mark.parametrize(
    ("props", "prop"),
    [
        ({"max_record_age": 3600}, "max_record_age"),
        ({"max_batching_window": 5}, "max_batching_window"),
        ({"timeout": 30}, "timeout"),
    ],
)
def test_a_number_for_a_duration_says_a_duration_is_wanted(stack, props, prop):
    error = consumer_error(stack, code=CODE, handler="index.handler", **props)
    (problem,) = error.problems
    assert f"got an int; {prop} is an aws_cdk.Duration" in str(problem), str(problem)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (
            {"dynamodb": {"NewImage": {"amount": {"N": [{"numeric": [">", NAN]}]}}}},
            "filters[0]={'dynamodb': {'NewImage': {'amount': {'N': [{'numeric': ['>', nan]}]}}}}"
            ": finite numbers only: NaN and infinity are not JSON",
        ),
        ({"dynamodb": {"Keys": {"n": {"N": [INF]}}}}, "finite numbers only"),
    ],
)
def test_nan_or_infinity_in_a_filter_is_refused_and_the_kernel_survives(stack, pattern, expected):
    error = consumer_error(stack, filters=[pattern])
    assert expected in str(error)
    # The same process can still make constructs: nothing non-finite reached the jsii kernel.
    consumer = StreamConsumer(
        stack, "After", **consumer_code(), table=orders_table(stack, name="Other")
    )
    assert consumer.event_source_mapping.node.path == "Test/After/Function/StreamMapping"
    assert Template.from_stack(stack).to_json()["Resources"]


def test_a_misspelled_filter_rule_is_refused_with_the_matchers_words(stack):
    error = consumer_error(
        stack, filters=[{"dynamodb": {"Keys": {"pk": {"S": [{"prefx": "O#"}]}}}}]
    )
    message = str(error)
    assert "filters[0]=" in message
    assert "a pattern Lambda accepts: filter filters[0].dynamodb.Keys.pk.S has matcher " in message
    assert "{'prefx': 'O#'}: unknown rule" in message


def test_or_is_accepted_and_synthesized_as_given(stack):
    pattern = {"$or": [{"eventName": ["INSERT"]}, {"dynamodb": {"Keys": {"pk": {"S": ["x"]}}}}]}
    StreamConsumer(
        stack, "Consumer", **consumer_code(), table=orders_table(stack), filters=[pattern]
    )
    mapping = only(Template.from_stack(stack).to_json(), "AWS::Lambda::EventSourceMapping")
    assert mapping["FilterCriteria"]["Filters"] == [
        {"Pattern": '{"$or":[{"eventName":["INSERT"]},{"dynamodb":{"Keys":{"pk":{"S":["x"]}}}}]}'}
    ]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ({"$or": [{"eventName": ["INSERT"]}, {"eventname": ["MODIFY"]}]}, "eventname never"),
        (
            {"$or": [{"eventName": ["INSERT"]}, {"dynamodb": {"NewImage": {"a": {"S": ["x"]}}}}]},
            "view type KEYS_ONLY carries no NewImage",
        ),
        ({"$or": [{"eventName": ["INSERT"]}]}, "$or needs a list of at least two patterns"),
    ],
)
def test_or_branches_are_checked_like_the_pattern(stack, pattern, expected):
    error = consumer_error(
        stack, table=orders_table(stack, dynamodb.StreamViewType.KEYS_ONLY), filters=[pattern]
    )
    assert expected in str(error)


def test_an_existing_function_the_layer_cannot_serve_is_in_the_one_error(stack):
    function = lambda_.Function(
        stack, "Old", runtime=lambda_.Runtime.PYTHON_3_10, handler="index.handler", code=CODE
    )
    error = consumer_error(stack, function=function, batch_size=0, retry_attempts=2.5)
    assert [p.prop for p in error.problems] == ["function", "batch_size", "retry_attempts"]
    assert (
        "function='Test/Old on runtime python3.10': a function on a runtime the consumer "
        "runtime layer supports (python3.11, python3.12, python3.13, python3.14)"
    ) in str(error)


def test_an_existing_function_on_any_supported_python_takes_the_layer(stack):
    function = lambda_.Function(
        stack, "Fn", runtime=lambda_.Runtime.PYTHON_3_12, handler="index.handler", code=CODE
    )
    StreamConsumer(stack, "Consumer", table=orders_table(stack), function=function)
    layer = only(Template.from_stack(stack).to_json(), "AWS::Lambda::LayerVersion")
    assert layer["CompatibleRuntimes"] == ["python3.11", "python3.12", "python3.13", "python3.14"]


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"retry_attempts": 2.5}, "retry_attempts=2.5: a whole number in 0..10000"),
        ({"batch_size": NAN}, "batch_size=nan: a number in 1..10000"),
        ({"parallelization_factor": INF}, "parallelization_factor=inf"),
        ({"filters": [{"eventName": [NAN]}]}, "finite numbers only"),
        ({"filters": [{"eventName": [{"prefx": "I"}]}]}, "unknown rule"),
        ({"log_retention": 7}, "log_retention=7: a logs.RetentionDays"),
    ],
)
def test_fan_out_checks_its_numbers_and_filters_alike(props, expected):
    stack = cdk.Stack(cdk.App(), "S")
    with pytest.raises(FanOutConfigurationError, match=re.escape(expected)):
        StreamFanOut(stack, "F", table=orders_table(stack), source="com.example", **props)
    StreamFanOut(stack, "After", table=_imported(stack), source="x.y")


def _imported(stack: cdk.Stack) -> dynamodb.ITableV2:
    return dynamodb.TableV2.from_table_attributes(
        stack,
        "Imported",
        table_name="orders",
        table_stream_arn="arn:aws:dynamodb:eu-west-1:111111111111:table/orders/stream/2024",
    )


def test_outbox_publisher_checks_its_numbers(stack):
    with pytest.raises(FanOutConfigurationError, match=re.escape("retry_attempts=0.5")):
        OutboxPublisher(
            stack, "O", table=orders_table(stack), source="x.y", key_prefix="O#", retry_attempts=0.5
        )


def test_filter_criteria_filter_output_is_accepted(stack):
    pattern = {"eventName": ["INSERT"], "dynamodb": {"Keys": {"pk": {"S": [{"prefix": "O#"}]}}}}
    consumer = StreamConsumer(
        stack,
        "Consumer",
        **consumer_code(),
        table=orders_table(stack),
        filters=[lambda_.FilterCriteria.filter(pattern)],
        max_record_age=Duration.hours(2),
    )
    assert consumer.options.mapping.filter_patterns == [pattern]
    mapping = only(Template.from_stack(stack).to_json(), "AWS::Lambda::EventSourceMapping")
    (criteria,) = mapping["FilterCriteria"]["Filters"]
    assert criteria == {"Pattern": lambda_.FilterCriteria.filter(pattern)["pattern"]}


def test_filter_criteria_filter_output_is_checked_like_a_dict(stack):
    bad = lambda_.FilterCriteria.filter({"dynamodb": {"NewImage": {"a": {"S": ["x"]}}}})
    error = consumer_error(
        stack, table=orders_table(stack, dynamodb.StreamViewType.KEYS_ONLY), filters=[bad]
    )
    assert "view type KEYS_ONLY carries no NewImage" in str(error)


@pytest.mark.parametrize(
    ("view", "reads", "missing"),
    [
        ("KEYS_ONLY", ["NewImage"], "has no NewImage"),
        ("NEW_IMAGE", ["NewImage", "OldImage"], "has no OldImage"),
        ("OLD_IMAGE", ["NewImage", "OldImage"], "has no NewImage"),
        ("KEYS_ONLY", ["NewImage", "OldImage"], "has no NewImage and no OldImage"),
    ],
)
def test_a_stream_without_the_images_the_handler_reads_is_refused(stack, view, reads, missing):
    table = orders_table(stack, dynamodb.StreamViewType[view])
    error = consumer_error(stack, table=table, reads_images=reads)
    assert f"reads_images={reads!r}: images the stream carries: its view type {view} " in str(error)
    assert missing + ", which the handler reads" in str(error)


def test_declared_images_the_stream_carries_pass(stack):
    table = orders_table(stack, dynamodb.StreamViewType.NEW_IMAGE)
    StreamConsumer(stack, "Consumer", **consumer_code(), table=table, reads_images=["NewImage"])


@pytest.mark.parametrize(
    ("reads", "expected"),
    [
        ("NewImage", "reads_images='NewImage': a list of image names (NewImage, OldImage)"),
        (["newimage"], "reads_images=['newimage']: image names among NewImage, OldImage"),
    ],
)
def test_reads_images_are_image_names(stack, reads, expected):
    assert expected in str(consumer_error(stack, reads_images=reads))


def test_the_reference_app_declares_the_images_its_handlers_read():
    from reference_app.stack import CdcReferenceStack

    stack = CdcReferenceStack(cdk.App(), "Ref")
    members = {m.consumer_name: m.reads_images for m in stack.orders_consumers.group.members}
    assert members == {"order-stats": ["NewImage", "OldImage"], "ttl-archive": ["OldImage"]}
    # The mapping checks the union against the stream's view type.
    assert stack.orders_consumers.options.mapping.reads_images == ["NewImage", "OldImage"]


def test_a_timeout_that_cannot_fit_one_record_is_refused_with_the_rule(stack):
    error = consumer_error(stack, timeout=Duration.seconds(1))
    assert (
        "timeout='1 s': a timeout of at least 2 s: the runtime stops taking records a safety "
        "margin before the deadline (a fifth of the timeout, between 500 and 5000 ms; here "
        "500 ms) and one record needs 1000 ms after it, so this timeout could take no record"
    ) in str(error)
    assert len(error.problems) == 1


def test_an_existing_functions_own_timeout_is_held_to_the_same_rule(stack):
    function = lambda_.Function(
        stack,
        "Fn",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=CODE,
        timeout=Duration.seconds(1),
    )
    error = consumer_error(stack, function=function)
    assert "function='Test/Fn with a timeout of 1 s': a timeout of at least 2 s" in str(error)


@pytest.mark.parametrize("timeout", [None, Duration.seconds(3)])
def test_lambdas_default_3_s_fits_one_record(stack, timeout):
    function = lambda_.Function(
        stack,
        "Fn",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=CODE,
        timeout=timeout,
    )
    StreamConsumer(stack, "Consumer", table=orders_table(stack), function=function)
