"""The changes pending in the *other* source of a redrive: the quarantine queue while the bucket
is replayed, the bucket while the quarantine is.

The rule (docs/design.md §5): no change of an item is applied while an earlier change of that
item is pending in the bucket or in the quarantine queue. A consumer quarantines a poison record
and goes on, so the queue can hold an item's older change while its newer one failed into the
bucket, or the other way round; replaying one source whole and then the other would let the
older change land last. So, before a run:

- a bucket object is held while the quarantine holds a change of one of its items earlier than
  the object's first change of that item (a quarantined change between its first and last is
  one of the object's own records: a batch holds every change of an item in its range, so it
  replays that change in order itself, and the quarantine's copy is then a duplicate);
- a quarantined record is held while the bucket holds an earlier change of its item, or an
  object of this consumer whose items cannot be known (unreadable, malformed, not surveyed);
- within the quarantine, a record of an item held or failed in this run holds that item's later
  records.

"Earlier" compares ``ApproximateCreationDateTime`` (seconds) and then the sequence number: exact
within a shard (the sequence number decides), and across a parent and a child shard the child's
records are created after its parent closed. A record the consumer quarantines *again* during
the replay is poison by the consumer's own judgement and is set aside as the running consumer
sets it aside; it is reported (``requarantined``) and holds nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.exceptions import MalformedMessageError
from cdc_consumer.redrive.messages import parse_quarantine_message
from cdc_consumer.redrive.requarantine import release
from cdc_consumer.routes.replay import Change, change_of, item_key

__all__ = ["Change", "PendingChanges", "change_of", "item_key", "peek_quarantine"]


@dataclass
class PendingChanges:
    """The earliest pending change of each item in one source (``where`` names it), and the
    places whose items cannot be known (``unknown``)."""

    source: str
    earliest: dict[str, tuple[Change, str]] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)

    def add(self, item: str, change: Change, where: str) -> None:
        if item not in self.earliest or change < self.earliest[item][0]:
            self.earliest[item] = (change, where)

    def items(self) -> frozenset[str]:
        return frozenset(self.earliest)

    def before(self, item: str, change: Change, *, unknown_holds: bool) -> str | None:
        """Why ``change`` of ``item`` must wait for this source, or None."""
        found = self.earliest.get(item)
        if found is not None and found[0] < change:
            return (
                f"{self.source} holds an earlier change of item {item} ({found[1]}, sequence"
                f" number {found[0][1]}): it must be replayed first"
            )
        if unknown_holds and self.unknown:
            return (
                f"{self.source} holds {self.unknown[0]}, whose changes cannot be read, so it may"
                f" hold an earlier change of item {item}"
            )
        return None


def peek_quarantine(
    sqs_client: Any,
    queue_url: str,
    stream_arn: str,
    consumers: Iterable[str],
    visibility_timeout_seconds: int,
    set_aside_since_ms: int | None = None,
) -> PendingChanges:
    """The changes the quarantine queue holds for ``consumers`` on ``stream_arn``: every message
    is received once and made visible again at once; other consumers' and unreadable messages
    are not this consumer's changes and are left out, and so are the messages sent since
    ``set_aside_since_ms`` (quarantined again by this redrive)."""
    pending = PendingChanges("the quarantine queue")
    accepted = tuple(consumers)
    seen: dict[str, str] = {}
    try:
        while True:
            messages = sqs_client.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=0,
                VisibilityTimeout=visibility_timeout_seconds,
                MessageSystemAttributeNames=["SentTimestamp"],
            ).get("Messages", [])
            fresh = [m for m in messages if m["MessageId"] not in seen]
            if not fresh:
                return pending
            for message in fresh:
                seen[message["MessageId"]] = message["ReceiptHandle"]
                sent = int(message.get("Attributes", {}).get("SentTimestamp", 0))
                if set_aside_since_ms is not None and sent >= set_aside_since_ms:
                    continue
                try:
                    record = parse_quarantine_message(
                        message["Body"], expected_stream_arn=stream_arn, expected_consumer=accepted
                    ).record
                except MalformedMessageError:
                    continue  # another's, or not a record: no change of this consumer's
                pending.add(item_key(record), change_of(record), f"message {message['MessageId']}")
    except (ClientError, BotoCoreError) as error:
        pending.unknown.append(f"receiving from it failed: {error}")
        return pending
    finally:
        release(sqs_client, queue_url, seen.values())
