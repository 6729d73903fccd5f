"""What one queue message asks to replay: an on-failure pointer's range, read back from the
stream (and filtered as the mapping filters), or a quarantine message's record."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.contract import RedriveCause
from cdc_consumer.exceptions import ForeignMessageError, MalformedMessageError, RecordsLostError
from cdc_consumer.redrive.messages import (
    Source,
    fetch_stored_record,
    parse_on_failure_message,
    parse_quarantine_message,
)
from cdc_consumer.redrive.replayer import Replayer
from cdc_consumer.redrive.report import FailedMessage, LostRange, RedriveReport
from cdc_consumer.redrive.stream_reader import StreamRangeReader

__all__ = ["MessageRecords", "QueueMessageReader"]


@dataclass(frozen=True)
class MessageRecords:
    """The records a message asks to replay, and where they are in the stream."""

    records: list[dict[str, Any]]
    shard_id: str | None
    first: str
    last: str
    #: The failure's own timestamp (the invocation record's, the quarantine message's).
    failed_at: str | None = None
    #: ``{"bucket", "key"}``: the whole quarantine message was kept there (too big for the
    #: queue); deleted with the message.
    stored_at: dict[str, str] | None = None


@dataclass
class QueueMessageReader:
    """Reads the records of ``source`` queue messages for the consumer(s) ``consumers`` (a
    quarantine message) or the function ``function_name`` (an on-failure message)."""

    source: Source
    stream_arn: str
    streams_client: Any
    max_empty_pages: int
    function_name: str | None
    consumers: Sequence[str]
    replayer: Replayer
    #: The S3 client for quarantined records kept in a bucket (made when first needed).
    s3: Callable[[], Any] | None = None

    def read(self, message: Mapping[str, Any], report: RedriveReport) -> MessageRecords | None:
        """The message's records; None (the message is kept) when it is another's, malformed,
        or its records are lost or could not be read, each reported with the reason."""
        message_id = message["MessageId"]
        try:
            if self.source is Source.ON_FAILURE:
                return self._on_failure(message, report)
            return self._quarantined(message)
        except ForeignMessageError as error:
            report.kept.append(FailedMessage(message_id, str(error), RedriveCause.FOREIGN))
        except MalformedMessageError as error:
            report.failed.append(FailedMessage(message_id, str(error), RedriveCause.UNREADABLE))
        except (ClientError, BotoCoreError) as error:
            # Not a sign of lost records (those raise RecordsLostError): keep it for another run.
            what = "the stream" if self.source is Source.ON_FAILURE else "the quarantine bucket"
            reason = f"reading {what} failed: {error}"
            report.failed.append(FailedMessage(message_id, reason, RedriveCause.UNREADABLE))
        return None

    def _on_failure(
        self, message: Mapping[str, Any], report: RedriveReport
    ) -> MessageRecords | None:
        batch = parse_on_failure_message(message["Body"], self.stream_arn, self.function_name)
        first, last = batch.start_sequence_number, batch.end_sequence_number
        try:
            records = StreamRangeReader(
                self.streams_client, self.stream_arn, self.max_empty_pages
            ).read(batch.shard_id, first, last)
        except RecordsLostError as lost:
            report.lost.append(
                LostRange(
                    message["MessageId"],
                    lost.shard_id,
                    lost.first,
                    lost.last,
                    batch.batch_size,
                    lost.reason,
                )
            )
            return None
        delivered = self.replayer.delivered(records, report)
        return MessageRecords(delivered, batch.shard_id, first, last, batch.timestamp)

    def _quarantined(self, message: Mapping[str, Any]) -> MessageRecords:
        quarantined = parse_quarantine_message(
            message["Body"], expected_stream_arn=self.stream_arn, expected_consumer=self.consumers
        )
        if quarantined.record_location is not None:
            if self.s3 is None:
                raise MalformedMessageError(
                    "its record is kept in a bucket (too big for a queue message), and this"
                    " redrive has no S3 client to read it"
                )
            quarantined = fetch_stored_record(
                self.s3(),
                quarantined,
                expected_stream_arn=self.stream_arn,
                expected_consumer=self.consumers,
            )
        sequence_number = quarantined.sequence_number
        return MessageRecords(
            [quarantined.record],
            None,
            sequence_number,
            sequence_number,
            quarantined.quarantined_at,
            quarantined.record_location,
        )
