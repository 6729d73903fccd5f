"""Looking at a queue's messages without taking them (tests, the demo, a destination's peek)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["peek_messages"]


def peek_messages(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    """Every message body of the queue, left in the queue (made visible again)."""
    bodies: dict[str, dict[str, Any]] = {}
    handles: dict[str, str] = {}
    while True:
        received = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=60
        ).get("Messages", [])
        if not received:
            break
        for message in received:
            bodies[message["MessageId"]] = json.loads(message["Body"])
            handles[message["MessageId"]] = message["ReceiptHandle"]
    ids = list(handles)
    for start in range(0, len(ids), 10):
        sqs.change_message_visibility_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(n), "ReceiptHandle": handles[i], "VisibilityTimeout": 0}
                for n, i in enumerate(ids[start : start + 10])
            ],
        )
    return list(bodies.values())
