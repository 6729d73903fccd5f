"""The quarantine queue as a failure source: each message carries a poison record whole (or, too
big for a message, points at the object that keeps it: read back, and deleted with the
message), replayed as it was delivered (not filtered again).

No change of an item is replayed ahead of an earlier one that stays: a record waits while an
earlier quarantined change of its item stayed in the queue in this run, or while the failed-batch
bucket holds an earlier change of its item (:mod:`~cdc_consumer.redrive.cross_source`). Records
this run quarantines again hold nothing (they are reported as re-quarantined).

Where: the queue's URL. The construct side is ``cdc_constructs.failure_kinds.quarantine``; the
consumer runtime writes it (:mod:`cdc_consumer.quarantine`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.environment_variables import QUARANTINE_QUEUE_ENV
from cdc_consumer.exceptions import ForeignMessageError, MalformedMessageError, RedriveSetupError
from cdc_consumer.redrive import parts
from cdc_consumer.redrive.access import check_stream_arn
from cdc_consumer.redrive.failure_source import Batch, Entry, Hold
from cdc_consumer.redrive.messages import (
    Source,
    fetch_stored_record,
    parse_quarantine_message,
)
from cdc_consumer.redrive.pending_changes import Change, change_of, item_key
from cdc_consumer.redrive.report import FailedMessage
from cdc_consumer.redrive.requarantine import RequarantineWatch
from cdc_consumer.redrive.sources.queue import QueueMessages, is_queue_url, receiving
from cdc_consumer.redrive_shapes import RedriveCause

__all__ = ["QUARANTINE", "QuarantineKind", "QuarantineSource"]


@dataclass
class QuarantineSource(QueueMessages):
    """The quarantine messages of ``consumers`` on ``stream_arn``; others are kept."""

    stream_arn: str = ""
    consumers: tuple[str, ...] = ()
    #: The S3 client for records kept in a bucket (made when first needed).
    s3: Callable[[], Any] | None = None
    watch: RequarantineWatch | None = None
    #: Why a record must wait for the bucket (None: it need not).
    bucket_hold: Callable[[Mapping[str, Any]], str | None] | None = None
    #: Item -> its earliest quarantined change held or failed in this run, and its message.
    _stalled: dict[str, tuple[Change, str]] = field(default_factory=dict, init=False)
    #: Message id -> the object holding its whole record, deleted with the message.
    _stored: dict[str, dict[str, str]] = field(default_factory=dict, init=False)

    def note_deferred(self, message: Mapping[str, Any]) -> None:
        """A message sent during the run may quarantine again a record it replayed."""
        if self.watch is not None:
            self.watch.note(message, self.report)

    def read(self, entry: Entry) -> Batch | None:
        try:
            quarantined = parse_quarantine_message(
                entry.handle["Body"],
                expected_stream_arn=self.stream_arn,
                expected_consumer=self.consumers,
            )
            if quarantined.record_location is not None:
                quarantined = self._fetch(quarantined)
        except ForeignMessageError as error:
            self.report.kept.append(FailedMessage(entry.id, str(error), RedriveCause.FOREIGN))
            return None
        except MalformedMessageError as error:
            self.report.failed.append(FailedMessage(entry.id, str(error), RedriveCause.UNREADABLE))
            return None
        except (ClientError, BotoCoreError) as error:
            reason = f"reading the quarantine bucket failed: {error}"
            self.report.failed.append(FailedMessage(entry.id, reason, RedriveCause.UNREADABLE))
            return None
        if quarantined.record_location is not None:
            self._stored[entry.id] = quarantined.record_location
        number = quarantined.sequence_number
        return Batch(
            [quarantined.record],
            quarantined.shard_id,
            number,
            number,
            quarantined.quarantined_at,
            filtered=False,
        )

    def _fetch(self, quarantined: Any) -> Any:
        if self.s3 is None:
            raise MalformedMessageError(
                "its record is kept in a bucket (too big for a queue message), and this"
                " redrive has no S3 client to read it"
            )
        return fetch_stored_record(
            self.s3(),
            quarantined,
            expected_stream_arn=self.stream_arn,
            expected_consumer=self.consumers,
        )

    def hold_records(self, entry: Entry, batch: Batch) -> Hold | None:
        """An earlier quarantined change of its item stayed in the queue in this run, or the
        bucket holds one."""
        record = batch.records[0]
        stalled = self._stalled.get(item_key(record))
        if stalled is not None and stalled[0] < change_of(record):
            return RedriveCause.EARLIER_CHANGE_OF_ITEM, (
                f"an earlier change of its item (message {stalled[1]}) stays in the queue, and"
                " this one must not overtake it"
            )
        reason = self.bucket_hold(record) if self.bucket_hold is not None else None
        return None if reason is None else (RedriveCause.EARLIER_CHANGE_IN_BUCKET, reason)

    def delete(self, entry: Entry) -> str | None:
        """The message, then the object that held its record, if any: a failure there is noted
        (the bucket's lifecycle expires it), never a reason to replay the record again."""
        super().delete(entry)
        location = self._stored.pop(entry.id, None)
        if location is None or self.s3 is None:
            return None
        try:
            self.s3().delete_object(Bucket=location["bucket"], Key=location["key"])
        except (ClientError, BotoCoreError) as error:
            self.report.notes.append(
                f"message {entry.id} was replayed and deleted, but its record's object"
                f" s3://{location['bucket']}/{location['key']} could not be deleted ({error});"
                " the bucket's lifecycle expires it"
            )
        return None

    def keep(self, entry: Entry, batch: Batch | None, *, blocking: bool = True) -> None:
        super().keep(entry, batch)
        if blocking and batch is not None:
            record = batch.records[0]
            key, change = item_key(record), change_of(record)
            if key not in self._stalled or change < self._stalled[key][0]:
                self._stalled[key] = (change, entry.id)


class QuarantineKind:
    """Finds and opens the quarantine queue source (its URL; ``QUARANTINE_QUEUE_URL``)."""

    role = Source.QUARANTINE
    shape = "the quarantine queue's URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)"

    def claims(self, where: str) -> bool:
        return is_queue_url(where)

    def located(self, environ: Mapping[str, str]) -> str | None:
        return environ.get(QUARANTINE_QUEUE_ENV) or None

    def check(self, redrive: Any, where: str) -> None:
        """As a queue's, and the consumer's name is known: only its messages are replayed."""
        check_stream_arn(redrive.stream_arn)
        if not redrive.consumer_name:
            raise RedriveSetupError(
                "a quarantine redrive needs the consumer's name (--consumer-name, or"
                " CDC_CONSUMER_NAME in the consumer's environment): it replays only that"
                " consumer's messages"
            )

    def open(self, run: parts.Run, where: str) -> QuarantineSource:
        redrive = run.redrive
        hold = parts.cross_source(redrive, where).record_hold(run.report)
        return QuarantineSource(
            **receiving(run, where),
            stream_arn=redrive.stream_arn,
            consumers=parts.consumers(redrive),
            s3=lambda: parts.s3(redrive),
            watch=parts.watch(redrive, run.replayer.replayed),
            bucket_hold=hold,
        )


QUARANTINE = QuarantineKind()
"""The quarantine queue source kind."""
