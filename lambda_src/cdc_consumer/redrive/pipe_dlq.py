"""Redriving a fan-out pipe's dead-letter queue: its messages point at stream records, which are
read back while the stream holds them (24 hours) and put on the pipe's event bus.

An EventBridge Pipe with a DynamoDB stream source writes, for a batch it could not deliver, a
message in the shape of Lambda's on-failure record: ``DDBStreamBatchInfo`` names the shard and
the first and last sequence numbers of the batch (``shardId``, ``startSequenceNumber``,
``endSequenceNumber``, ``streamArn``, ``batchSize``, ``approximateArrivalOf...``). The records
themselves are not in it. :class:`PipeDlqRedrive` reads each message's range back with
:class:`~cdc_consumer.redrive.stream_reader.StreamRangeReader`, puts each record on the bus as
the pipe would (:class:`~cdc_consumer.redrive.pipe_events.EventShape`) and deletes the message
only after every record of it was delivered. A range the stream no longer holds is reported
lost by sequence number and its message kept; so is a message that is not such a record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cdc_consumer.exceptions import ForeignMessageError, MalformedMessageError, RecordsLostError
from cdc_consumer.redrive.defaults import (
    DEFAULT_PUT_ATTEMPTS,
    DEFAULT_RECEIVE_WAIT_SECONDS,
    DEFAULT_VISIBILITY_TIMEOUT_SECONDS,
)
from cdc_consumer.redrive.messages import OnFailureBatch, parse_on_failure_message
from cdc_consumer.redrive.pipe_events import (
    EventShape,
    TemplateError,
    put_events,
)
from cdc_consumer.redrive.report import FailedMessage, LostRange, PlannedMessage, RedriveReport
from cdc_consumer.redrive.requarantine import release
from cdc_consumer.redrive.stream_reader import StreamRangeReader
from cdc_consumer.redrive_shapes import RedriveCause

__all__ = ["PIPE_DLQ_SOURCE", "PipeDlqRedrive"]

#: The report's ``source`` for a pipe dead-letter queue run.
PIPE_DLQ_SOURCE = "pipe-dlq"


@dataclass
class PipeDlqRedrive:
    """Drains one pipe dead-letter queue onto the pipe's event bus (see the module docstring)."""

    sqs_client: Any
    streams_client: Any
    events_client: Any
    stream_arn: str
    shape: EventShape
    put_attempts: int = DEFAULT_PUT_ATTEMPTS
    receive_wait_seconds: int = DEFAULT_RECEIVE_WAIT_SECONDS
    visibility_timeout_seconds: int = DEFAULT_VISIBILITY_TIMEOUT_SECONDS
    sleep: Callable[[float], None] | None = None

    def run(
        self, queue_url: str, *, dry_run: bool = False, max_messages: int | None = None
    ) -> RedriveReport:
        """Redrive the queue's messages (at most ``max_messages``); each is received once, and
        each one kept is visible again when the run ends (for the next run, or a person)."""
        report = RedriveReport(source=PIPE_DLQ_SOURCE, queue_url=queue_url, dry_run=dry_run)
        seen: set[str] = set()
        kept: list[str] = []
        try:
            self._drain(queue_url, report, seen, kept, dry_run, max_messages)
        finally:
            release(self.sqs_client, queue_url, kept)
        return report

    def _drain(
        self,
        queue_url: str,
        report: RedriveReport,
        seen: set[str],
        kept: list[str],
        dry_run: bool,
        max_messages: int | None,
    ) -> None:
        while max_messages is None or report.messages_received < max_messages:
            wanted = (
                10 if max_messages is None else min(10, max_messages - report.messages_received)
            )
            messages = self.sqs_client.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=wanted,
                WaitTimeSeconds=self.receive_wait_seconds,
                VisibilityTimeout=self.visibility_timeout_seconds,
            ).get("Messages", [])
            fresh = [m for m in messages if m["MessageId"] not in seen]
            if not fresh:
                break
            for message in fresh:
                seen.add(message["MessageId"])
                report.messages_received += 1
                if not self._redrive_message(queue_url, message, report, dry_run):
                    kept.append(message["ReceiptHandle"])

    def _redrive_message(
        self, queue_url: str, message: dict[str, Any], report: RedriveReport, dry_run: bool
    ) -> bool:
        """Redrive one message; True when it was deleted."""
        message_id = message["MessageId"]
        try:
            batch = parse_on_failure_message(message["Body"], self.stream_arn)
        except ForeignMessageError as error:
            report.kept.append(FailedMessage(message_id, str(error), RedriveCause.FOREIGN))
            return False
        except MalformedMessageError as error:
            reason = f"{error}; expected a pipe dead-letter message (kept)"
            report.failed.append(FailedMessage(message_id, reason, RedriveCause.UNREADABLE))
            return False
        records = self._read(message_id, batch, report)
        if records is None:
            return False
        if dry_run:
            report.planned.append(
                PlannedMessage(
                    message_id,
                    batch.shard_id,
                    batch.start_sequence_number,
                    batch.end_sequence_number,
                    len(records),
                )
            )
            return False
        if not self._deliver(message_id, records, report):
            return False
        self.sqs_client.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        report.messages_deleted += 1
        return True

    def _read(
        self, message_id: str, batch: OnFailureBatch, report: RedriveReport
    ) -> list[dict[str, Any]] | None:
        """The batch's records from the stream; None (reported lost) when it no longer has them."""
        reader = StreamRangeReader(self.streams_client, self.stream_arn)
        try:
            return reader.read(
                batch.shard_id, batch.start_sequence_number, batch.end_sequence_number
            )
        except RecordsLostError as error:
            report.lost.append(
                LostRange(
                    message_id,
                    batch.shard_id,
                    batch.start_sequence_number,
                    batch.end_sequence_number,
                    batch.batch_size,
                    f"{error.reason} (message kept)",
                )
            )
            return None

    def _deliver(
        self, message_id: str, records: list[dict[str, Any]], report: RedriveReport
    ) -> bool:
        """Put the records' events on the bus; True when every one was delivered."""
        try:
            entries = [self.shape.entry(record) for record in records]
        except TemplateError as error:
            reason = f"{error} (message kept)"
            report.failed.append(FailedMessage(message_id, reason, RedriveCause.UNREADABLE))
            return False
        options = {"sleep": self.sleep} if self.sleep is not None else {}
        outcome = put_events(self.events_client, entries, attempts=self.put_attempts, **options)
        report.invocations += outcome.calls
        report.records_replayed += outcome.delivered
        if outcome.failed_entry_count:
            reason = (
                f"PutEvents FailedEntryCount {outcome.failed_entry_count} of {len(entries)}"
                f" after {self.put_attempts} round(s): {'; '.join(sorted(set(outcome.errors)))}"
                " (message kept; the delivered events are sent again on the next run)"
            )
            report.failed.append(FailedMessage(message_id, reason, RedriveCause.REPLAY_FAILED))
            return False
        return True
