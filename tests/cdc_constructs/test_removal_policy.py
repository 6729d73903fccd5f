"""What ``cdk destroy`` or a replacement leaves (issue 24 §2): every queue and bucket a construct
makes that may hold the only copy of a record is retained by default, and ``removal_policy``
changes it."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kinesis as kinesis
from aws_cdk.assertions import Template

from cdc_constructs import (
    KinesisConsumer,
    OutboxPublisher,
    StreamConsumer,
    StreamFanOut,
)
from cdc_constructs.exceptions import CdcConfigurationError
from tests.cdc_constructs.support import consumer_code, consumer_error, orders_table

RECORD_HOLDERS = ("AWS::SQS::Queue", "AWS::S3::Bucket")


def policies(stack: cdk.Stack) -> dict[str, tuple[str, str]]:
    """Each queue's and bucket's (DeletionPolicy, UpdateReplacePolicy), by logical id."""
    template = Template.from_stack(stack).to_json()
    return {
        logical_id: (resource.get("DeletionPolicy"), resource.get("UpdateReplacePolicy"))
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] in RECORD_HOLDERS
    }


def consumer(stack: cdk.Stack, **props: Any) -> StreamConsumer:
    return StreamConsumer(stack, "Consumer", table=orders_table(stack), **consumer_code(), **props)


def fan_out(stack: cdk.Stack, **props: Any) -> StreamFanOut:
    return StreamFanOut(stack, "Fan", table=orders_table(stack), source="com.example", **props)


def outbox(stack: cdk.Stack, **props: Any) -> OutboxPublisher:
    table = orders_table(stack)
    return OutboxPublisher(
        stack, "Out", table=table, source="com.example", key_prefix="O#", **props
    )


def kinesis_consumer(stack: cdk.Stack, **props: Any) -> KinesisConsumer:
    stream = kinesis.Stream(stack, "Changes", retention_period=Duration.days(1))
    return KinesisConsumer(
        stack,
        "Replica",
        stream=stream,
        stream_retention=Duration.days(1),
        **consumer_code(),
        **props,
    )


BUILDERS = {
    "StreamConsumer": consumer,
    "KinesisConsumer": kinesis_consumer,
    "StreamFanOut": fan_out,
    "OutboxPublisher": outbox,
}


@pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS.keys())
def test_what_may_hold_the_only_copy_of_a_record_is_retained_by_default(
    stack: cdk.Stack, build: Any
) -> None:
    build(stack)
    found = policies(stack)
    assert found, "the construct makes a queue or bucket"
    assert found == {logical_id: ("Retain", "Retain") for logical_id in found}


@pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS.keys())
def test_removal_policy_destroy_lets_them_go_with_the_stack(stack: cdk.Stack, build: Any) -> None:
    build(stack, removal_policy=RemovalPolicy.DESTROY)
    found = policies(stack)
    assert found == {logical_id: ("Delete", "Delete") for logical_id in found}


def test_the_consumers_quarantine_queue_and_failed_batch_bucket_follow_the_prop(
    stack: cdk.Stack,
) -> None:
    made = consumer(stack, removal_policy=RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE)
    template = Template.from_stack(stack).to_json()["Resources"]
    queue = stack.resolve(made.quarantine_queue.node.default_child.logical_id)  # type: ignore[union-attr]
    bucket = stack.resolve(made.on_failure_bucket.node.default_child.logical_id)  # type: ignore[union-attr]
    for logical_id in (queue, bucket):
        assert template[logical_id]["DeletionPolicy"] == "RetainExceptOnCreate"


@pytest.mark.parametrize("value", [None, "RETAIN", RemovalPolicy.SNAPSHOT])
def test_a_removal_policy_queues_and_buckets_cannot_take_is_refused(
    stack: cdk.Stack, value: Any
) -> None:
    error = consumer_error(stack, removal_policy=value)
    assert f"removal_policy={value!r}" in str(error)
    assert "RemovalPolicy.RETAIN (the default" in str(error)
    other = cdk.Stack(stack.node.root, "Other")
    with pytest.raises(CdcConfigurationError, match=r"removal_policy=.*RETAIN \(the default"):
        fan_out(other, removal_policy=value)
