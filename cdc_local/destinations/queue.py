"""Delivering to an SQS on-failure destination as Lambda does: the invocation record only (a
pointer into the stream), one message per batch. The construct side is
``cdc_constructs.failure_kinds.queue``; the redrive reads it with
``cdc_consumer.redrive.sources.queue``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cdc_local.destinations.target import DeliveryTarget
from cdc_local.exceptions import LocalPipelineError
from cdc_local.peek import peek_messages

__all__ = ["QUEUE", "QueueDelivery"]


class QueueDelivery:
    """An SQS queue of the stack: a pointer per batch."""

    service = "sqs"

    def check(self, target: DeliveryTarget) -> None:
        if target.queue_url is None:
            raise LocalPipelineError(
                f"on-failure destination {target.arn!r}: no such queue in the stack"
            )

    def bucket(self, target: DeliveryTarget) -> str | None:
        return None

    def send(
        self,
        client: Any,
        target: DeliveryTarget,
        record: Mapping[str, Any],
        event: Mapping[str, Any],
        now: float,
    ) -> None:
        client.send_message(QueueUrl=target.queue_url, MessageBody=json.dumps(record))

    def where(self, target: DeliveryTarget) -> str | None:
        return target.queue_url

    def peek(self, client: Any, target: DeliveryTarget) -> list[dict[str, Any]]:
        assert target.queue_url is not None  # check() refused a queue without one
        return peek_messages(client, target.queue_url)

    def describe(self, target: DeliveryTarget) -> str:
        return f"SQS {target.queue_url} (pointers into the stream)"

    def label(self, target: DeliveryTarget) -> str | None:
        return f"on-failure queue: {target.queue_url}"

    def redrive_options(
        self, target: DeliveryTarget, function_name: str
    ) -> tuple[list[str], list[str]] | None:
        return ["--queue-url", str(target.queue_url)], ["--consumer-function", function_name]

    def beside_quarantine(self, target: DeliveryTarget) -> list[str]:
        return []


QUEUE = QueueDelivery()
"""The SQS delivery kind."""
