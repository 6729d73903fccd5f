"""The local pipeline refuses what SQS refuses (issue 30): a queue the template does not size
takes messages up to 256 KiB, as in AWS, not moto's 1 MiB. Without it, a quarantine message too
big for AWS went through locally, and the stall it causes in AWS (the runtime's send refused,
treated as transient, the shard retried) never showed."""

from __future__ import annotations

from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from cdc_consumer.service_limits import MAX_QUEUE_MESSAGE_BYTES

from cdc_local.assembly import StackTemplate
from cdc_local.endpoint import LocalEndpoint
from cdc_local.resources import create_resources


def stack(properties: dict[str, object]) -> StackTemplate:
    return StackTemplate(
        stack_name="Limits",
        template={
            "Resources": {"Quarantine": {"Type": "AWS::SQS::Queue", "Properties": properties}}
        },
        assembly_dir=Path("."),
    )


def test_a_queue_refuses_a_message_over_256_kib_as_sqs_does(aws: LocalEndpoint) -> None:
    resources = create_resources(stack({}), aws)
    url = resources.queue_urls["Quarantine"]
    sqs = aws.client("sqs")
    sqs.send_message(QueueUrl=url, MessageBody="x" * MAX_QUEUE_MESSAGE_BYTES)

    with pytest.raises(ClientError, match=r"InvalidParameterValue|shorter than"):
        sqs.send_message(QueueUrl=url, MessageBody="x" * (MAX_QUEUE_MESSAGE_BYTES + 1))


def test_a_queue_the_template_sizes_keeps_its_size(aws: LocalEndpoint) -> None:
    resources = create_resources(stack({"MaximumMessageSize": 1_048_576}), aws)
    url = resources.queue_urls["Quarantine"]

    aws.client("sqs").send_message(QueueUrl=url, MessageBody="x" * (MAX_QUEUE_MESSAGE_BYTES + 1))
