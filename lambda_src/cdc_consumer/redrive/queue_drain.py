"""Draining one queue: a window of messages at a time, each window in stream order; a message
is deleted only after all its records were replayed, every other one is made visible again at
the end."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.contract import OnFailureMessage, RedriveCause
from cdc_consumer.redrive.marker_age import MarkerAge, failure_time
from cdc_consumer.redrive.messages import Source
from cdc_consumer.redrive.pending_changes import Change, change_of, item_key
from cdc_consumer.redrive.queue_messages import QueueMessageReader
from cdc_consumer.redrive.replayer import Replayer
from cdc_consumer.redrive.report import FailedMessage, PlannedMessage, RedriveReport
from cdc_consumer.redrive.requarantine import RequarantineWatch, release

__all__ = ["QueueDrain", "stream_position"]


def stream_position(message: Mapping[str, Any]) -> tuple[str, int]:
    """Where a message's records are in the stream, for ordering; unreadable bodies first."""
    try:
        document = json.loads(message["Body"])
        if OnFailureMessage.batch_info(document) is not None:
            batch = OnFailureMessage.from_dict(document).batch
            return batch.shard_id, int(batch.start_sequence_number)
        return "", int(document["record"]["dynamodb"]["SequenceNumber"])
    except (TypeError, ValueError, KeyError, AttributeError):
        return "", -1


@dataclass
class QueueDrain:
    """One run over ``queue_url``: messages sent after ``started_ms`` are deferred to the next
    run (so a run always ends); ``should_stop`` is asked before each message and ``progress``
    told after each one."""

    sqs_client: Any
    queue_url: str
    reader: QueueMessageReader
    replayer: Replayer
    watch: RequarantineWatch
    report: RedriveReport
    started_ms: int
    window: int
    receive_wait_seconds: int
    visibility_timeout_seconds: int
    dry_run: bool = False
    should_stop: Callable[[], bool] | None = None
    progress: Callable[[int, RedriveReport], None] | None = None
    #: For a quarantine run: why a record must wait for the bucket (None: it need not).
    hold: Callable[[Mapping[str, Any]], str | None] | None = None
    #: The consumer's marker lifetime: a message older than it covers is refused (None: the
    #: lifetime is not known, nothing is refused for age).
    age: MarkerAge | None = None
    _seen: set[str] = field(default_factory=set, init=False)
    #: Item -> its earliest quarantined change held or failed in this run, and its message.
    _stalled: dict[str, tuple[Change, str]] = field(default_factory=dict, init=False)
    #: Message id -> receipt handle of the messages kept, released at the end.
    _keep: dict[str, str] = field(default_factory=dict, init=False)
    #: Message id -> the object holding its whole record (too big for the queue), deleted
    #: with the message.
    _stored: dict[str, dict[str, str]] = field(default_factory=dict, init=False)

    def _stopping(self) -> bool:
        return self.should_stop is not None and self.should_stop()

    def drain(self, max_messages: int | None) -> bool:
        """Redrive up to ``max_messages`` (all by default); False when time ran out within a
        window (the rest of it is released unread)."""
        try:
            while max_messages is None or len(self._seen) < max_messages:
                if self._stopping():
                    break
                limit = self.window if max_messages is None else max_messages - len(self._seen)
                window = self._receive_window(min(limit, self.window))
                if not window:
                    break
                if not self._drain_window(window):
                    return False
        finally:
            release(self.sqs_client, self.queue_url, self._keep.values())
        return True

    def _drain_window(self, window: Sequence[dict[str, Any]]) -> bool:
        for index, message in enumerate(window):
            if index and self._stopping():
                # Out of time: the rest were received, so they are released at the end.
                self._keep.update((m["MessageId"], m["ReceiptHandle"]) for m in window[index:])
                return False
            if self._take(message) and self.progress is not None:
                self.progress(self.report.messages_received, self.report)
        return True

    def _take(self, message: Mapping[str, Any]) -> bool:
        """Redrive, defer or keep one message; False when it was deferred."""
        sent = int(message.get("Attributes", {}).get("SentTimestamp", 0))
        if sent > self.started_ms:
            self.report.messages_deferred += 1
            self._keep[message["MessageId"]] = message["ReceiptHandle"]
            if self.reader.source is Source.QUARANTINE:
                self.watch.note(message, self.report)
            return False
        self.report.messages_received += 1
        if self._handle(message):
            self.sqs_client.delete_message(
                QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"]
            )
            self.report.messages_deleted += 1
            self._delete_stored(message["MessageId"])
        else:
            self._keep[message["MessageId"]] = message["ReceiptHandle"]
        return True

    def _delete_stored(self, message_id: str) -> None:
        """Delete the object that held the message's record, if any; a failure is noted (the
        bucket's lifecycle expires it), never a reason to replay the record again."""
        location = self._stored.pop(message_id, None)
        if location is None or self.reader.s3 is None:
            return
        try:
            self.reader.s3().delete_object(Bucket=location["bucket"], Key=location["key"])
        except (ClientError, BotoCoreError) as error:
            self.report.notes.append(
                f"message {message_id} was replayed and deleted, but its record's object"
                f" s3://{location['bucket']}/{location['key']} could not be deleted ({error});"
                " the bucket's lifecycle expires it"
            )

    def _receive_window(self, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` messages not seen before, oldest records first.

        A standard queue does not keep order, so each window is sorted by where its records are
        in the stream (shard id, whose number is the shard's creation time, then sequence number).
        Order across windows is not guaranteed.
        """
        window: list[dict[str, Any]] = []
        while len(window) < limit:
            wanted = min(10, limit - len(window))  # SQS returns at most 10 per call
            messages = self.sqs_client.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=wanted,
                WaitTimeSeconds=self.receive_wait_seconds,
                VisibilityTimeout=self.visibility_timeout_seconds,
                MessageSystemAttributeNames=["SentTimestamp"],
            ).get("Messages", [])
            fresh = [m for m in messages if m["MessageId"] not in self._seen]
            self._seen.update(m["MessageId"] for m in fresh)
            window.extend(fresh)
            if len(messages) < wanted or not fresh:
                break  # the queue has no more for now; the next window asks again
        return sorted(window, key=stream_position)

    def _handle(self, message: Mapping[str, Any]) -> bool:
        """Redrive one message; True when it may be deleted."""
        message_id = message["MessageId"]
        found = self.reader.read(message, self.report)
        if found is None:
            return False
        quarantined = found.records[0] if self.reader.source is Source.QUARANTINE else None
        too_old = (
            self.age.refusal(found.records, failure_time(found.failed_at))
            if self.age is not None
            else None
        )
        if too_old is not None:
            self.report.refused.append(
                FailedMessage(message_id, too_old, RedriveCause.OLDER_THAN_MARKERS)
            )
            self._stall(quarantined, message_id)
            return False
        held = self._hold_reason(quarantined) if quarantined is not None else None
        if held is not None:
            self.report.held.append(FailedMessage(message_id, held[1], held[0]))
            self._stall(quarantined, message_id)
            return False
        if self.dry_run:
            self.report.planned.append(
                PlannedMessage(
                    message_id, found.shard_id, found.first, found.last, len(found.records)
                )
            )
            return False
        failure = self.replayer.replay(found.records, self.report)
        if failure is None and found.stored_at is not None:
            self._stored[message_id] = found.stored_at
        if failure is not None:
            self.report.failed.append(
                FailedMessage(message_id, failure, RedriveCause.REPLAY_FAILED)
            )
            self._stall(quarantined, message_id)
            return False
        return True

    def _hold_reason(self, record: Mapping[str, Any]) -> tuple[RedriveCause, str] | None:
        """Why a quarantined ``record`` must wait: an earlier quarantined change of its item
        stayed in the queue in this run, or the bucket holds one (``hold``)."""
        stalled = self._stalled.get(item_key(record))
        if stalled is not None and stalled[0] < change_of(record):
            return RedriveCause.EARLIER_CHANGE_OF_ITEM, (
                f"an earlier change of its item (message {stalled[1]}) stays in the queue, and"
                " this one must not overtake it"
            )
        reason = self.hold(record) if self.hold is not None else None
        return None if reason is None else (RedriveCause.EARLIER_CHANGE_IN_BUCKET, reason)

    def _stall(self, record: Mapping[str, Any] | None, message_id: str) -> None:
        if record is not None:
            key, change = item_key(record), change_of(record)
            if key not in self._stalled or change < self._stalled[key][0]:
                self._stalled[key] = (change, message_id)
