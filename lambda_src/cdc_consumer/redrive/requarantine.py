"""Recognising the records a run replayed that the consumer quarantined again (still poison):
they are reported by sequence number, so the run is not ok."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.exceptions import MalformedMessageError
from cdc_consumer.redrive.messages import parse_quarantine_message
from cdc_consumer.redrive.report import FailedMessage, RedriveReport, RequarantinedRecord
from cdc_consumer.redrive_shapes import RedriveCause

__all__ = ["RequarantineWatch", "release"]


def release(sqs_client: Any, queue_url: str, receipt_handles: Iterable[str]) -> None:
    """Make received messages visible again at once (for the next run, or a person)."""
    for receipt_handle in receipt_handles:
        sqs_client.change_message_visibility(
            QueueUrl=queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=0
        )


@dataclass
class RequarantineWatch:
    """Looks at quarantine messages for records of ``replayed`` (this run's, by sequence
    number) of the consumer(s) ``consumers`` on ``stream_arn``."""

    sqs_client: Any
    stream_arn: str
    consumers: Sequence[str]
    visibility_timeout_seconds: int
    replayed: set[str]

    def note(self, message: Mapping[str, Any], report: RedriveReport) -> None:
        """Report ``message`` when it quarantines again a record this run replayed."""
        try:
            quarantined = parse_quarantine_message(
                message["Body"],
                expected_stream_arn=self.stream_arn,
                expected_consumer=self.consumers,
            )
        except MalformedMessageError:
            return  # not ours, or unreadable: the next run reports it
        if quarantined.sequence_number not in self.replayed:
            return
        error = quarantined.error or {}
        report.requarantined.append(
            RequarantinedRecord(
                message["MessageId"],
                quarantined.sequence_number,
                f"{error.get('type', 'error')}: {error.get('message', '')}".strip(),
            )
        )

    def scan(self, queue_url: str, started_ms: int, report: RedriveReport) -> None:
        """Look through the quarantine queue for messages sent during this run that quarantine
        a record it replayed; every message looked at is made visible again at once."""
        seen: dict[str, str] = {}
        try:
            while True:
                messages = self.sqs_client.receive_message(
                    QueueUrl=queue_url,
                    MaxNumberOfMessages=10,
                    WaitTimeSeconds=0,
                    VisibilityTimeout=self.visibility_timeout_seconds,
                    MessageSystemAttributeNames=["SentTimestamp"],
                ).get("Messages", [])
                fresh = [m for m in messages if m["MessageId"] not in seen]
                if not fresh:
                    break
                for message in fresh:
                    seen[message["MessageId"]] = message["ReceiptHandle"]
                    if int(message.get("Attributes", {}).get("SentTimestamp", 0)) > started_ms:
                        self.note(message, report)
        except (ClientError, BotoCoreError) as error:
            report.failed.append(
                FailedMessage(
                    "-",
                    f"could not look for re-quarantined records in {queue_url}: {error}",
                    RedriveCause.UNREADABLE,
                )
            )
        finally:
            release(self.sqs_client, queue_url, seen.values())
