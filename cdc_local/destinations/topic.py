"""Delivering to an SNS on-failure destination as Lambda does: the invocation record only (a
pointer into the stream), published. The construct side is ``cdc_constructs.failure_kinds.
topic``; the redrive does not read a topic (subscribe a queue to it and redrive that queue).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cdc_local.destinations.target import DeliveryTarget

__all__ = ["TOPIC", "TopicDelivery"]


class TopicDelivery:
    """An SNS topic: a pointer per batch, published to its subscribers."""

    service = "sns"

    def check(self, target: DeliveryTarget) -> None:
        """Any topic ARN will do: a missing topic fails the publish, as in AWS."""

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
        client.publish(TopicArn=target.arn, Message=json.dumps(record))

    def where(self, target: DeliveryTarget) -> str | None:
        return None

    def peek(self, client: Any, target: DeliveryTarget) -> list[dict[str, Any]]:
        return []  # published, kept by nothing here

    def describe(self, target: DeliveryTarget) -> str:
        return f"SNS {target.arn} (pointers, published)"

    def label(self, target: DeliveryTarget) -> str | None:
        return None

    def redrive_options(
        self, target: DeliveryTarget, function_name: str
    ) -> tuple[list[str], list[str]] | None:
        return None

    def beside_quarantine(self, target: DeliveryTarget) -> list[str]:
        return []


TOPIC = TopicDelivery()
"""The SNS delivery kind."""
