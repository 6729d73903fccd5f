"""An SQS on-failure queue as a failure source: each message is a pointer (shard, first and last
sequence numbers) whose records are read back from the stream (GetShardIterator
AT_SEQUENCE_NUMBER, then GetRecords page by page); records the stream no longer holds are
reported *lost* by sequence number and the message kept.

:class:`QueueMessages` is how any queue source is received (shared with
:mod:`~cdc_consumer.redrive.sources.quarantine`): a window of messages at a time, each window
sorted by where its records are in the stream; messages sent after the run started are the next
run's (so a run always ends); a message is deleted only after its records were replayed, every
other one is made visible again at the end.

Where: the queue's URL. The construct side is ``cdc_constructs.failure_kinds.queue``; the local
pipeline writes it with ``cdc_local.destinations.queue``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.environment_variables import ON_FAILURE_QUEUE_ENV
from cdc_consumer.exceptions import ForeignMessageError, MalformedMessageError, RecordsLostError
from cdc_consumer.redrive import parts
from cdc_consumer.redrive.access import MISSING_QUEUE_CODES, check_access, check_stream_arn
from cdc_consumer.redrive.failure_source import Batch, Entry, Hold
from cdc_consumer.redrive.marker_age import failure_time
from cdc_consumer.redrive.messages import OnFailureBatch, Source, parse_on_failure_message
from cdc_consumer.redrive.report import FailedMessage, LostRange, RedriveReport
from cdc_consumer.redrive.requarantine import release
from cdc_consumer.redrive.stream_reader import StreamRangeReader
from cdc_consumer.redrive_shapes import OnFailureMessage, RedriveCause
from cdc_consumer.routes.replay import ReplayRoute, failure_batch_info, sequence_number

__all__ = [
    "QUEUE",
    "QueueKind",
    "QueueMessages",
    "QueueSource",
    "check_queue",
    "is_queue_url",
    "stream_position",
]

#: An SQS queue URL: ``https://sqs.<region>.amazonaws.com/<account>/<name>``, or any endpoint's
#: (``http://localhost:4566/<account>/<name>``): an HTTP(S) URL.
_QUEUE_URL = re.compile(r"^https?://[^/\s]+/\S*$")


def is_queue_url(where: str) -> bool:
    """Whether ``where`` is an SQS queue's URL."""
    return bool(_QUEUE_URL.match(where))


def stream_position(message: Mapping[str, Any]) -> tuple[str, int]:
    """Where a message's records are in the stream, for ordering; unreadable bodies first."""
    try:
        document = json.loads(message["Body"])
        found = failure_batch_info(document)
        if found is not None:
            batch = OnFailureMessage.from_dict(document, batch_info=found[0].batch_info).batch
            return batch.shard_id, int(batch.start_sequence_number)
        return "", int(sequence_number(document["record"]) or -1)
    except (TypeError, ValueError, KeyError, AttributeError):
        return "", -1


@dataclass
class QueueMessages:
    """Receiving one queue for a run (see the module docstring)."""

    sqs_client: Any
    queue_url: str
    report: RedriveReport
    started_ms: int
    window: int
    receive_wait_seconds: int
    visibility_timeout_seconds: int
    _seen: set[str] = field(default_factory=set, init=False)
    #: Message id -> receipt handle of the messages kept, released at the end.
    _keep: dict[str, str] = field(default_factory=dict, init=False)
    _window: list[dict[str, Any]] = field(default_factory=list, init=False)

    def entries(self, limit: int | None) -> Iterator[Entry]:
        """Up to ``limit`` messages (all by default), window by window."""
        while limit is None or len(self._seen) < limit:
            wanted = self.window if limit is None else limit - len(self._seen)
            self._window = self._receive_window(min(wanted, self.window))
            if not self._window:
                return
            while self._window:
                message = self._window.pop(0)
                if self._deferred(message):
                    continue
                self.report.messages_received += 1
                yield Entry(message["MessageId"], message)

    def _deferred(self, message: Mapping[str, Any]) -> bool:
        """Sent after the run started: the next run's."""
        sent = int(message.get("Attributes", {}).get("SentTimestamp", 0))
        if sent <= self.started_ms:
            return False
        self.report.messages_deferred += 1
        self._keep[message["MessageId"]] = message["ReceiptHandle"]
        self.note_deferred(message)
        return True

    def note_deferred(self, message: Mapping[str, Any]) -> None:
        """A source's look at a deferred message (none here)."""

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

    def hold(self, entry: Entry) -> Hold | None:
        return None

    def hold_records(self, entry: Entry, batch: Batch) -> Hold | None:
        return None

    def delete(self, entry: Entry) -> str | None:
        self.sqs_client.delete_message(
            QueueUrl=self.queue_url, ReceiptHandle=entry.handle["ReceiptHandle"]
        )
        return None

    def keep(self, entry: Entry, batch: Batch | None, *, blocking: bool = True) -> None:
        self._keep[entry.id] = entry.handle["ReceiptHandle"]

    def interrupt(self, entry: Entry) -> None:
        """Out of time: this message and the rest of its window were received; kept."""
        for message in [entry.handle, *self._window]:
            self._keep[message["MessageId"]] = message["ReceiptHandle"]
        self._window = []

    def close(self) -> None:
        release(self.sqs_client, self.queue_url, self._keep.values())


@dataclass
class QueueSource(QueueMessages):
    """An on-failure queue's pointers, read back from ``stream_arn`` (its ``route``'s stream);
    messages another function's mapping wrote (``function_name``) are kept. A pointer whose
    records arrived longer ago than the stream keeps them (when its route says how long:
    :meth:`~cdc_consumer.routes.replay.ReplayRoute.retention_seconds`) is refused and its
    records reported lost without asking the stream; a shard's later pointers wait behind one
    that stays."""

    stream_arn: str = ""
    streams_client: Any = None
    max_empty_pages: int = 0
    function_name: str | None = None
    route: ReplayRoute | None = None
    clock: Callable[[], float] = time.time
    _retention: int | None = field(default=None, init=False)
    #: Shard -> the first message of it that stayed after it was read.
    _stalled: dict[str, str] = field(default_factory=dict, init=False)

    def read(self, entry: Entry) -> Batch | None:
        message = entry.handle
        try:
            batch = parse_on_failure_message(message["Body"], self.stream_arn, self.function_name)
            first, last = batch.start_sequence_number, batch.end_sequence_number
            expired = self._expired(batch)
            if expired is not None:
                self._lost(entry, RecordsLostError(batch.shard_id, first, last, expired), batch)
                cause = RedriveCause.OLDER_THAN_STREAM_RETENTION
                self.report.refused.append(FailedMessage(entry.id, expired, cause))
                return None
            reader = StreamRangeReader(
                self.streams_client, self.stream_arn, self.max_empty_pages, route=self.route
            )
            records = reader.read(batch.shard_id, first, last)
        except RecordsLostError as lost:
            self._lost(entry, lost, batch)
        except ForeignMessageError as error:
            self.report.kept.append(FailedMessage(entry.id, str(error), RedriveCause.FOREIGN))
        except MalformedMessageError as error:
            self.report.failed.append(FailedMessage(entry.id, str(error), RedriveCause.UNREADABLE))
        except (ClientError, BotoCoreError) as error:
            # Not a sign of lost records (those raise RecordsLostError): keep it for another run.
            reason = f"reading the stream failed: {error}"
            self.report.failed.append(FailedMessage(entry.id, reason, RedriveCause.UNREADABLE))
        else:
            return Batch(records, batch.shard_id, first, last, _earliest(batch))
        return None

    def _lost(self, entry: Entry, lost: RecordsLostError, batch: OnFailureBatch) -> None:
        self.report.lost.append(
            LostRange(entry.id, lost.shard_id, lost.first, lost.last, batch.batch_size, lost.reason)
        )

    def _expired(self, batch: OnFailureBatch) -> str | None:
        """Why the stream no longer holds the batch's records (they arrived longer ago than its
        retention), or None (also when the route does not say)."""
        earliest = failure_time(_earliest(batch))
        if earliest is None:
            return None
        if self._retention is None:
            assert self.route is not None
            self._retention = self.route.retention_seconds(self.streams_client, self.stream_arn)
            if self._retention is None:
                self._retention = -1
        age = self.clock() - earliest
        if self._retention < 0 or age < self._retention:
            return None
        return (
            f"its records arrived {age / 3600:.1f} h ago and the stream keeps a record"
            f" {self._retention / 3600:g} h: they are gone; not replayed, not deleted"
            " (reconcile them by hand)"
        )

    def hold_records(self, entry: Entry, batch: Batch) -> Hold | None:
        shard = batch.shard_id
        if shard is None or shard not in self._stalled:
            return None
        return RedriveCause.EARLIER_BATCH_OF_SHARD, (
            f"an earlier batch of shard {shard} ({self._stalled[shard]}) was not replayed, and"
            " this one must not overtake it"
        )

    def keep(self, entry: Entry, batch: Batch | None, *, blocking: bool = True) -> None:
        """Kept; a batch that was read and stays (held, refused, failed) holds its shard's later
        ones (a lost or unreadable one is the operator's to reconcile: the rest go on)."""
        super().keep(entry, batch, blocking=blocking)
        if blocking and batch is not None and batch.shard_id is not None:
            self._stalled.setdefault(batch.shard_id, entry.id)


def _earliest(batch: OnFailureBatch) -> str | None:
    """The failure record's earliest stated time, as written (the driver's age check reads it
    with the records')."""
    stated = [t for t in (batch.first_arrival, batch.timestamp) if failure_time(t) is not None]
    return min(stated, key=lambda t: failure_time(t) or 0.0, default=None)


def check_queue(redrive: Any, queue_url: str) -> None:
    """A stream ARN that is one; a queue that exists and these credentials may read."""
    check_stream_arn(redrive.stream_arn)
    check_access(
        lambda: redrive.sqs_client.get_queue_attributes(
            QueueUrl=queue_url, AttributeNames=["QueueArn"]
        ),
        f"read queue {queue_url}",
        MISSING_QUEUE_CODES,
        "check --queue-url (the queue does not exist in this account and region)",
        "check --queue-url and that these credentials may read it",
    )


def receiving(run: parts.Run, where: str) -> dict[str, Any]:
    """The :class:`QueueMessages` settings of ``run`` for the queue ``where``."""
    redrive = run.redrive
    return {
        "sqs_client": redrive.sqs_client,
        "queue_url": where,
        "report": run.report,
        "started_ms": run.started_ms,
        "window": redrive.window,
        "receive_wait_seconds": redrive.receive_wait_seconds,
        "visibility_timeout_seconds": redrive.visibility_timeout_seconds,
    }


class QueueKind:
    """Finds and opens an on-failure queue source (a queue URL; ``ON_FAILURE_QUEUE_URL``)."""

    role = Source.ON_FAILURE

    shape = "an on-failure queue's URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)"

    def claims(self, where: str) -> bool:
        return is_queue_url(where)

    def located(self, environ: Mapping[str, str]) -> str | None:
        return environ.get(ON_FAILURE_QUEUE_ENV) or None

    def check(self, redrive: Any, where: str) -> None:
        check_queue(redrive, where)

    def open(self, run: parts.Run, where: str) -> QueueSource:
        redrive = run.redrive
        return QueueSource(
            **receiving(run, where),
            stream_arn=redrive.stream_arn,
            streams_client=parts.streams(redrive),
            max_empty_pages=redrive.max_empty_pages,
            function_name=redrive.function_name,
            route=run.route,
            clock=redrive.clock,
        )


QUEUE = QueueKind()
"""The on-failure queue source kind."""
