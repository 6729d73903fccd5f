"""Each consumer's marker lifetime is derived from its own replay windows (issue 23 §1): the
constructs put it in CDC_MARKER_TTL_SECONDS for every route (DynamoDB Streams and Kinesis,
standalone consumers and groups), and refuse a ``marker_lifetime`` below the rule."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from aws_cdk.aws_lambda_event_sources import S3OnFailureDestination, SqsDlq
from cdc_consumer.defaults import EXPIRATION_ATTRIBUTE
from cdc_consumer.replay_windows import ReplayWindows, minimum_marker_lifetime

from cdc_constructs import (
    CdcConfigurationError,
    ChangeCaptureTable,
    ConsumerGroupMember,
    KinesisConsumer,
    KinesisDestination,
    StreamConsumer,
)
from tests.cdc_constructs.support import consumer_code, resources

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
HOUR, DAY = 3600, 24 * 3600


def _lifetimes(stack: cdk.Stack) -> dict[str, int]:
    """Each consumer function's CDC_MARKER_TTL_SECONDS, by CDC_CONSUMER_NAME."""
    found = {}
    for function in resources(
        Template.from_stack(stack).to_json(), "AWS::Lambda::Function"
    ).values():
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        if "CDC_MARKER_TTL_SECONDS" in variables:
            found[variables["CDC_CONSUMER_NAME"]] = int(variables["CDC_MARKER_TTL_SECONDS"])
    return found


@pytest.fixture
def table(stack: cdk.Stack) -> ChangeCaptureTable:
    return ChangeCaptureTable(stack, "Orders", partition_key=PK)


def test_the_rule_chains_the_windows_plus_a_day() -> None:
    """The stream (24 h), or the record age then the failed-batch bucket (its days, and up to a
    day more: S3 expires an object at the next midnight UTC after them), then the quarantine (a
    record is quarantined when it is delivered, from the stream or from a redrive)."""
    defaults = ReplayWindows(DAY, HOUR, 14 * DAY, 14 * DAY)
    assert minimum_marker_lifetime(defaults) == HOUR + (14 + 1 + 14 + 1) * DAY
    pointer_only = ReplayWindows(DAY, HOUR, 0, 4 * DAY)  # SQS destination, SQS default retention
    assert minimum_marker_lifetime(pointer_only) == (1 + 4 + 1) * DAY
    kinesis_year = ReplayWindows(365 * DAY, 7 * DAY, 14 * DAY, 14 * DAY)
    assert minimum_marker_lifetime(kinesis_year) == (365 + 14 + 1) * DAY
    unlimited_age = ReplayWindows(DAY, -1, 14 * DAY, 14 * DAY)
    assert minimum_marker_lifetime(unlimited_age) == (1 + 14 + 1 + 14 + 1) * DAY


def test_s3_rounding_an_expiration_to_midnight_utc_is_inside_the_rule() -> None:
    """Issue 30: a batch written at 00:00:01 UTC under a 14-day rule expires at 00:00 UTC on
    day 15, almost 15 days later; the markers must still cover a replay of it on its last
    moment, with the whole day's margin left."""
    windows = ReplayWindows(DAY, HOUR, 14 * DAY, 14 * DAY)
    assert windows.failed_batch_kept == 15 * DAY
    written = 0
    discarded = written + HOUR
    last_readable = discarded + (15 * DAY - 1)  # expires at the next midnight UTC after 14 days
    quarantined_until = last_readable + 14 * DAY
    assert minimum_marker_lifetime(windows) >= quarantined_until + DAY
    assert ReplayWindows(DAY, HOUR, 0, 14 * DAY).failed_batch_kept == 0  # pointers: no S3


def test_a_standalone_consumer_and_a_group_derive_it_from_their_own_settings(
    stack: cdk.Stack, table: ChangeCaptureTable
) -> None:
    StreamConsumer(stack, "Stats", table=table, **consumer_code())
    group = StreamConsumer(
        stack,
        "Group",
        table=table,
        **consumer_code(),
        members=[ConsumerGroupMember("totals"), ConsumerGroupMember("audit")],
        max_record_age=Duration.hours(6),
        failed_batch_retention=Duration.days(30),
    )
    assert _lifetimes(stack) == {
        "Stats": HOUR + (14 + 1 + 14 + 1) * DAY,
        "Group": 6 * HOUR + (30 + 1 + 14 + 1) * DAY,  # the members share the function
    }
    assert group.marker_lifetime.to_seconds() == 6 * HOUR + 46 * DAY
    assert group.replay_windows == ReplayWindows(DAY, 6 * HOUR, 30 * DAY, 14 * DAY)


def test_given_destinations_and_queues_are_read_from_the_app(
    stack: cdk.Stack, table: ChangeCaptureTable
) -> None:
    bucket = s3.Bucket(
        stack,
        "Failures",
        lifecycle_rules=[
            s3.LifecycleRule(expiration=Duration.days(60), prefix="archive/"),  # not failed batches
            s3.LifecycleRule(expiration=Duration.days(21)),
        ],
    )
    quarantine = sqs.Queue(stack, "Quarantine", retention_period=Duration.days(10))
    StreamConsumer(
        stack,
        "Bucketed",
        table=table,
        **consumer_code(),
        on_failure=S3OnFailureDestination(bucket),
        quarantine_queue=quarantine,
    )
    StreamConsumer(
        stack,
        "Pointers",
        table=table,
        **consumer_code(),
        on_failure=SqsDlq(sqs.Queue(stack, "OnFailure")),
        quarantine_queue=sqs.Queue(stack, "DefaultRetention"),
        extra_reader_reason="a test of derivation, not of readers",
    )
    assert _lifetimes(stack) == {
        "Bucketed": HOUR + (21 + 1 + 10 + 1) * DAY,
        # A pointer is replayed from the stream (24 h); SQS keeps a message 4 days by default.
        "Pointers": (1 + 4 + 1) * DAY,
    }


@pytest.mark.parametrize("route", ["table", "stream"])
def test_the_kinesis_route_puts_the_kinesis_retention_in_place_of_24_hours(
    stack: cdk.Stack, route: str
) -> None:
    if route == "table":
        source: dict[str, Any] = {
            "table": ChangeCaptureTable(
                stack,
                "Orders",
                partition_key=PK,
                kinesis=KinesisDestination(retention=Duration.days(30)),
            )
        }
    else:
        stream = kinesis.Stream(stack, "Changes", retention_period=Duration.days(30))
        source = {"stream": stream, "stream_retention": Duration.days(30)}
    KinesisConsumer(stack, "Replica", **consumer_code(), **source, max_record_age=Duration.days(2))
    # The stream holds a record 30 days; the record age then the bucket end at 16 days; a
    # record delivered on day 30 can be quarantined then, and kept 14 more days.
    assert _lifetimes(stack) == {"Replica": (30 + 14 + 1) * DAY}


def test_a_marker_lifetime_below_the_rule_is_refused_naming_the_windows_and_the_minimum(
    stack: cdk.Stack, table: ChangeCaptureTable
) -> None:
    minimum = HOUR + 30 * DAY
    with pytest.raises(CdcConfigurationError) as caught:
        StreamConsumer(
            stack,
            "Stats",
            table=table,
            **consumer_code(),
            members=[ConsumerGroupMember("totals"), ConsumerGroupMember("audit")],
            marker_lifetime=Duration.days(7),
        )
    assert str(caught.value) == (
        "StreamConsumer 'Stats': 1 invalid prop:\n"
        f"  - marker_lifetime='{7 * DAY} s': at least {minimum} s (30.0417 days): markers and "
        "claims must outlive every window in which their record can come back (stream "
        "retention 86400 s, maximum record age 3600 s, failed-batch retention 1209600 s (kept "
        "up to 1296000 s: S3 expires at the next midnight UTC), quarantine retention 1209600 s, "
        "plus a day's margin), or a late replay applies the record again"
    )


def test_a_marker_lifetime_at_or_above_the_rule_is_used(
    stack: cdk.Stack, table: ChangeCaptureTable
) -> None:
    StreamConsumer(
        stack, "Stats", table=table, **consumer_code(), marker_lifetime=Duration.days(90)
    )
    assert _lifetimes(stack) == {"Stats": 90 * DAY}


def test_the_kinesis_route_refuses_a_short_lifetime_too(stack: cdk.Stack) -> None:
    stream = kinesis.Stream(stack, "Changes", retention_period=Duration.days(30))
    with pytest.raises(CdcConfigurationError, match=r"marker_lifetime='2592000 s': at least"):
        KinesisConsumer(
            stack,
            "Replica",
            **consumer_code(),
            stream=stream,
            stream_retention=Duration.days(30),
            marker_lifetime=Duration.days(30),
        )


def test_the_variable_cannot_be_set_around_the_rule(
    stack: cdk.Stack, table: ChangeCaptureTable
) -> None:
    with pytest.raises(CdcConfigurationError, match=r"environment\['CDC_MARKER_TTL_SECONDS'\]"):
        StreamConsumer(
            stack,
            "Stats",
            table=table,
            **consumer_code(),
            environment={"CDC_MARKER_TTL_SECONDS": str(7 * DAY)},
        )


@pytest.mark.parametrize("where", ["imported", "never-expiring"])
def test_a_bucket_whose_lifecycle_is_unknown_needs_a_stated_lifetime(
    stack: cdk.Stack, table: ChangeCaptureTable, where: str
) -> None:
    bucket = (
        s3.Bucket.from_bucket_name(stack, "Failures", "failed-batches")
        if where == "imported"
        else s3.Bucket(stack, "Failures")
    )
    with pytest.raises(CdcConfigurationError, match="marker_lifetime set to at least"):
        StreamConsumer(
            stack,
            "Stats",
            table=table,
            **consumer_code(),
            on_failure=S3OnFailureDestination(bucket),
        )
    StreamConsumer(
        stack,
        "Stated",
        table=table,
        **consumer_code(),
        on_failure=S3OnFailureDestination(bucket),
        marker_lifetime=Duration.days(120),
    )
    assert _lifetimes(stack) == {"Stated": 120 * DAY}


def test_the_ledger_table_expires_its_entries_by_the_marker_lifetime(
    stack: cdk.Stack, table: ChangeCaptureTable
) -> None:
    """Entries replace markers, so the ledger table is kept by the same rule: its TTL attribute
    is the one the runtime writes as now + CDC_MARKER_TTL_SECONDS (tests/cdc_consumer/
    test_marker_lifetime.py), and the function writing to it is given the derived lifetime."""
    consumer = StreamConsumer(stack, "Stats", table=table, **consumer_code())
    assert consumer.ledger_table is not None
    template = Template.from_stack(stack).to_json()
    ledger_id = stack.get_logical_id(consumer.ledger_table.node.default_child)
    ledger = template["Resources"][ledger_id]["Properties"]
    assert ledger["TimeToLiveSpecification"] == {
        "AttributeName": EXPIRATION_ATTRIBUTE,
        "Enabled": True,
    }
    (function,) = [
        f["Properties"]["Environment"]["Variables"]
        for f in resources(template, "AWS::Lambda::Function").values()
        if "CDC_LEDGER_TABLE_NAME" in f["Properties"].get("Environment", {}).get("Variables", {})
    ]
    assert function["CDC_LEDGER_TABLE_NAME"] == {"Ref": ledger_id}
    assert int(function["CDC_MARKER_TTL_SECONDS"]) == consumer.marker_lifetime.to_seconds()
    assert consumer.marker_lifetime.to_seconds() == minimum_marker_lifetime(consumer.replay_windows)
