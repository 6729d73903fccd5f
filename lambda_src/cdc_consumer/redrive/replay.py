"""The replay: drain one queue into one consumer, in stream order, deleting only after success."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from cdc_consumer.batch_response import first_failed_index
from cdc_consumer.contract import ON_FAILURE_S3_PREFIX, OnFailureMessage
from cdc_consumer.exceptions import (
    ForeignMessageError,
    InvocationError,
    MalformedMessageError,
    RecordsLostError,
    RedriveSetupError,
)
from cdc_consumer.filter_patterns import FilterCriteria
from cdc_consumer.redrive.defaults import (
    DEFAULT_INVOKE_MAX_BYTES,
    DEFAULT_INVOKE_MAX_RECORDS,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_EMPTY_PAGES,
    DEFAULT_MAX_OBJECTS,
    DEFAULT_RECEIVE_WAIT_SECONDS,
    DEFAULT_VISIBILITY_TIMEOUT_SECONDS,
    DEFAULT_WINDOW,
)
from cdc_consumer.redrive.invokers import Invoker
from cdc_consumer.redrive.messages import (
    OnFailureObject,
    Source,
    parse_on_failure_message,
    parse_on_failure_object,
    parse_quarantine_message,
)
from cdc_consumer.redrive.report import (
    FailedMessage,
    LostRange,
    PlannedMessage,
    RedriveReport,
    RequarantinedRecord,
)
from cdc_consumer.redrive.stream_reader import StreamRangeReader

__all__ = ["Redrive", "check_stream_arn"]

#: A DynamoDB stream ARN: ``arn:<partition>:dynamodb:<region>:<account>:table/<t>/stream/<label>``.
STREAM_ARN = re.compile(r"^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:\d{12}:table/[^/]+/stream/[^/]+$")
#: SQS error codes for a queue that does not exist (query and JSON protocols).
MISSING_QUEUE_CODES = frozenset({"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"})
#: S3 error codes for a bucket that does not exist.
MISSING_BUCKET_CODES = frozenset({"NoSuchBucket", "404"})


def check_stream_arn(stream_arn: str) -> None:
    """Raise :class:`RedriveSetupError` unless ``stream_arn`` is a DynamoDB stream ARN."""
    if not STREAM_ARN.match(stream_arn or ""):
        raise RedriveSetupError(
            f"stream ARN {stream_arn!r} is not a DynamoDB stream ARN"
            " (arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE/stream/LABEL): pass the consumer's"
            " stream, e.g. the table's LatestStreamArn"
        )


def setup_error(error: Exception, what: str, fix: str) -> RedriveSetupError:
    """The one-line operator error for an AWS call that could not even start."""
    if isinstance(error, NoCredentialsError):
        return RedriveSetupError(
            f"no AWS credentials to {what}: set AWS_PROFILE or AWS_ACCESS_KEY_ID/"
            "AWS_SECRET_ACCESS_KEY (or run where a role is attached)"
        )
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        message = error.response.get("Error", {}).get("Message", "")
        return RedriveSetupError(f"cannot {what} ({code}: {message}): {fix}")
    return RedriveSetupError(f"cannot {what} ({error}): {fix}")


def check_access(
    read: Callable[[], object], what: str, missing_codes: frozenset[str], missing: str, fix: str
) -> None:
    """Make one cheap ``read`` of a queue or bucket; if AWS refuses it, raise the one-line
    :func:`setup_error` with the fix ``missing`` (the error code says it does not exist) or
    ``fix`` (anything else)."""
    try:
        read()
    except (ClientError, BotoCoreError) as error:
        code = getattr(error, "response", {}).get("Error", {}).get("Code", "")
        raise setup_error(error, what, missing if code in missing_codes else fix) from None


def _chunk_stop(
    records: Sequence[dict[str, Any]], start: int, max_records: int, max_bytes: int
) -> int:
    """End index of the invocation that starts at ``start``: at most ``max_records`` records and
    ``max_bytes`` of JSON, but always at least one record."""
    stop, size = start, 0
    while stop < len(records) and stop - start < max_records:
        size += len(json.dumps(records[stop])) + 2
        if size > max_bytes and stop > start:
            break
        stop += 1
    return stop


def _stream_position(message: Mapping[str, Any]) -> tuple[str, int]:
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
class Redrive:
    """Drains one queue into one consumer.

    Parameters:
        invoker: delivers events to the consumer (:class:`LambdaInvoker`, :class:`CallableInvoker`).
        stream_arn: the consumer's stream; messages for another stream are refused.
        sqs_client, streams_client: boto3 clients (default: plain ``boto3.client(...)``, so
            ``AWS_ENDPOINT_URL`` works locally).
        consumer_name: the consumer's name. Quarantine messages that name another consumer (or
            none) are kept, never replayed; a quarantine run without it cannot start.
        member_names: the members of a consumer group behind the consumer's function
            (``CDC_CONSUMER_GROUP``): quarantine messages naming any of them are replayed too;
            the group hands each record to its members, and those that applied it already
            skip it as a duplicate.
        function_name: the consumer function's name or ARN, when known: on-failure records that
            another function's mapping wrote are kept, never replayed.
        s3_client: boto3 S3 client for an S3 on-failure destination (default: plain
            ``boto3.client("s3")``, made when first needed).
        mapping_uuid: the consumer's event source mapping UUID, when known: S3 objects another
            mapping wrote (their key names its UUID) are kept, never replayed.
        quarantine_queue_url: the consumer's quarantine queue, when known: an on-failure run
            looks there at the end for records it replayed that the consumer quarantined again
            (a quarantine run sees them in the queue it reads).
        max_attempts: invocations without progress before a message is given up (default
            :data:`DEFAULT_MAX_ATTEMPTS`).
        invoke_max_records, invoke_max_bytes: the size of one replay invocation (defaults
            :data:`DEFAULT_INVOKE_MAX_RECORDS`, :data:`DEFAULT_INVOKE_MAX_BYTES`).
        receive_wait_seconds, visibility_timeout_seconds: SQS receive settings (defaults
            :data:`DEFAULT_RECEIVE_WAIT_SECONDS`, :data:`DEFAULT_VISIBILITY_TIMEOUT_SECONDS`).
        max_empty_pages: see :class:`StreamRangeReader`.
        window: messages received, sorted by stream position and then redriven, at a time
            (default :data:`DEFAULT_WINDOW`).
        filters: the event source mapping's filter patterns (default none): records of an
            on-failure range that match none of them are not replayed, as the mapping did not
            deliver them. Quarantined records were delivered, so they are not filtered.
    """

    invoker: Invoker
    stream_arn: str
    sqs_client: Any = None
    streams_client: Any = None
    consumer_name: str | None = None
    member_names: Sequence[str] = ()
    function_name: str | None = None
    quarantine_queue_url: str | None = None
    s3_client: Any = None
    mapping_uuid: str | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    invoke_max_records: int = DEFAULT_INVOKE_MAX_RECORDS
    invoke_max_bytes: int = DEFAULT_INVOKE_MAX_BYTES
    receive_wait_seconds: int = DEFAULT_RECEIVE_WAIT_SECONDS
    visibility_timeout_seconds: int = DEFAULT_VISIBILITY_TIMEOUT_SECONDS
    max_empty_pages: int = DEFAULT_MAX_EMPTY_PAGES
    window: int = DEFAULT_WINDOW
    filters: Sequence[Mapping[str, Any]] = ()
    _criteria: FilterCriteria = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.sqs_client is None:
            self.sqs_client = boto3.client("sqs")
        if self.streams_client is None:
            self.streams_client = boto3.client(
                "dynamodbstreams", config=Config(retries={"mode": "standard", "max_attempts": 5})
            )
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts is {self.max_attempts}; expected 1 or more")
        self._criteria = FilterCriteria(self.filters, where="filters")
        self._replayed: set[str] = set()

    def check(self, queue_url: str, source: Source | str = Source.ON_FAILURE) -> None:
        """Raise :class:`RedriveSetupError` for an operator mistake: a stream ARN that is not
        one, a quarantine run without the consumer's name, a queue that does not exist or cannot
        be read, no credentials. (A well-formed stream that no longer exists is not a mistake:
        its records are reported lost, message by message.)"""
        check_stream_arn(self.stream_arn)
        if Source(source) is Source.QUARANTINE and not self.consumer_name:
            raise RedriveSetupError(
                "a quarantine redrive needs the consumer's name (--consumer-name, or"
                " CDC_CONSUMER_NAME in the consumer's environment): it replays only that"
                " consumer's messages"
            )
        check_access(
            lambda: self.sqs_client.get_queue_attributes(
                QueueUrl=queue_url, AttributeNames=["QueueArn"]
            ),
            f"read queue {queue_url}",
            MISSING_QUEUE_CODES,
            "check --queue-url (the queue does not exist in this account and region)",
            "check --queue-url and that these credentials may read it",
        )

    # The run loop ---------------------------------------------------------------------------

    def run(
        self,
        queue_url: str,
        source: Source | str = Source.ON_FAILURE,
        *,
        dry_run: bool = False,
        max_messages: int | None = None,
        should_stop: Callable[[], bool] | None = None,
        progress: Callable[[int, RedriveReport], None] | None = None,
    ) -> RedriveReport:
        """Redrive the messages of ``queue_url`` (at most ``max_messages``; all by default).

        ``dry_run`` reads and reports what would be replayed without invoking or deleting.
        ``should_stop`` is asked before each message (e.g. near a Lambda deadline).
        ``progress(messages_done, report)`` is called after each message. Messages redrive keeps
        are made visible again at the end, so the next run (or a person) sees them at once.

        Raises :class:`RedriveSetupError` (see :meth:`check`) before touching any message.
        """
        source = Source(source)
        self.check(queue_url, source)
        self._replayed = set()
        report = RedriveReport(source=source.value, queue_url=queue_url, dry_run=dry_run)
        started_ms = int(time.time() * 1000)
        seen: set[str] = set()
        keep: dict[str, str] = {}  # message id -> receipt handle, to release at the end
        try:
            while max_messages is None or len(seen) < max_messages:
                if should_stop is not None and should_stop():
                    break
                limit = self.window if max_messages is None else max_messages - len(seen)
                window = self._receive_window(queue_url, min(limit, self.window), seen)
                if not window:
                    break
                for index, message in enumerate(window):
                    if index and should_stop is not None and should_stop():
                        # Out of time: the rest were received, so they are released below.
                        keep.update((m["MessageId"], m["ReceiptHandle"]) for m in window[index:])
                        return report
                    sent = int(message.get("Attributes", {}).get("SentTimestamp", 0))
                    if sent > started_ms:
                        report.messages_deferred += 1
                        keep[message["MessageId"]] = message["ReceiptHandle"]
                        if source is Source.QUARANTINE:
                            self._note_requarantined(message, report)
                        continue
                    report.messages_received += 1
                    if self._handle(source, message, report, dry_run):
                        self.sqs_client.delete_message(
                            QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"]
                        )
                        report.messages_deleted += 1
                    else:
                        keep[message["MessageId"]] = message["ReceiptHandle"]
                    if progress is not None:
                        progress(report.messages_received, report)
        finally:
            self._release(queue_url, keep.values())
        if source is Source.ON_FAILURE and self.quarantine_queue_url and self._replayed:
            self._scan_requarantined(self.quarantine_queue_url, started_ms, report)
        return report

    # S3 on-failure destinations ------------------------------------------------------------

    def check_bucket(self, bucket: str, prefix: str = ON_FAILURE_S3_PREFIX) -> None:
        """Raise :class:`RedriveSetupError` for a stream ARN that is not one, or a bucket that
        does not exist or these credentials may not list (nothing is read or deleted)."""
        check_stream_arn(self.stream_arn)
        if self.s3_client is None:
            self.s3_client = boto3.client("s3")
        check_access(
            lambda: self.s3_client.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1),
            f"list bucket {bucket}",
            MISSING_BUCKET_CODES,
            "check --bucket (no such bucket in this account)",
            "check --bucket and that these credentials may list and read it",
        )

    def run_bucket(
        self,
        bucket: str,
        prefix: str = ON_FAILURE_S3_PREFIX,
        *,
        dry_run: bool = False,
        max_objects: int | None = None,
        should_stop: Callable[[], bool] | None = None,
        progress: Callable[[int, RedriveReport], None] | None = None,
    ) -> RedriveReport:
        """Redrive the on-failure objects under ``s3://bucket/prefix`` (at most ``max_objects``,
        default :data:`DEFAULT_MAX_OBJECTS`).

        Each object holds its batch (``payload``), so nothing is read from the stream: a batch is
        replayed whether or not the stream still holds its records. Objects are replayed in
        stream order (shard, then first sequence number) and an object is deleted only after
        every record of it succeeded. Deleted, not moved: the bucket is versioned, so the object
        stays recoverable as a noncurrent version for the bucket's lifecycle, while the prefix
        lists exactly what is still to do and the redrive needs no write permission. After a
        batch of a shard fails, the shard's later objects are kept too (replaying them would
        apply newer changes of an item ahead of older ones). Objects that are not in AWS's
        shape, or another consumer's or stream's, are kept and reported.
        """
        self.check_bucket(bucket, prefix)
        self._replayed = set()
        report = RedriveReport(
            source=Source.ON_FAILURE.value, queue_url=f"s3://{bucket}/{prefix}", dry_run=dry_run
        )
        started_ms = int(time.time() * 1000)
        limit = DEFAULT_MAX_OBJECTS if max_objects is None else max_objects
        keys: list[str] = []
        for page in self.s3_client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix
        ):
            keys += [item["Key"] for item in page.get("Contents", [])]
        objects = self._read_objects(bucket, sorted(keys)[:limit], report)
        objects.sort(key=lambda o: (o.batch.shard_id, int(o.batch.start_sequence_number)))
        blocked: dict[str, str] = {}  # shard id -> the key of its first failed object
        for index, item in enumerate(objects):
            if should_stop is not None and should_stop():
                report.messages_deferred += len(objects) - index
                break
            shard = item.batch.shard_id
            if shard in blocked:
                report.failed.append(
                    FailedMessage(
                        item.key,
                        f"kept: an earlier batch of shard {shard} ({blocked[shard]}) was not"
                        " replayed, and this one must not overtake it",
                    )
                )
                continue
            records = self._delivered(item.records, report)
            if dry_run:
                report.planned.append(
                    PlannedMessage(
                        item.key,
                        shard,
                        item.batch.start_sequence_number,
                        item.batch.end_sequence_number,
                        len(records),
                    )
                )
                continue
            failure = self._replay(records, report)
            if failure is None:
                failure = self._delete_object(bucket, item.key)
            if failure is not None:
                report.failed.append(FailedMessage(item.key, failure))
                blocked[shard] = item.key
                continue
            report.messages_deleted += 1
            if progress is not None:
                progress(index + 1, report)
        if self.quarantine_queue_url and self._replayed:
            self._scan_requarantined(self.quarantine_queue_url, started_ms, report)
        return report

    def _read_objects(
        self, bucket: str, keys: Sequence[str], report: RedriveReport
    ) -> list[OnFailureObject]:
        objects: list[OnFailureObject] = []
        for key in keys:
            report.messages_received += 1
            try:
                body = self.s3_client.get_object(Bucket=bucket, Key=key)["Body"].read()
            except (ClientError, BotoCoreError) as error:
                detail = getattr(error, "response", {}).get("Error", {})
                reason = f"{detail.get('Code')}: {detail.get('Message')}" if detail else error
                report.failed.append(FailedMessage(key, f"cannot read the object ({reason}); kept"))
                continue
            try:
                objects.append(
                    parse_on_failure_object(
                        key, body, self.stream_arn, self.function_name, self.mapping_uuid
                    )
                )
            except ForeignMessageError as error:
                report.kept.append(FailedMessage(key, str(error)))
            except MalformedMessageError as error:
                report.failed.append(FailedMessage(key, f"{error} (kept)"))
        return objects

    def _delete_object(self, bucket: str, key: str) -> str | None:
        try:
            self.s3_client.delete_object(Bucket=bucket, Key=key)
        except (ClientError, BotoCoreError) as error:
            return (
                f"all its records were replayed, but deleting it failed ({error}); a second run"
                " replays it again as no-ops (the consumer's markers) and deletes it"
            )
        return None

    def _release(self, queue_url: str, receipt_handles: Any) -> None:
        for receipt_handle in receipt_handles:
            self.sqs_client.change_message_visibility(
                QueueUrl=queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=0
            )

    def _note_requarantined(self, message: Mapping[str, Any], report: RedriveReport) -> None:
        """Report ``message`` when it quarantines again a record this run replayed."""
        try:
            quarantined = parse_quarantine_message(
                message["Body"],
                expected_stream_arn=self.stream_arn,
                expected_consumer=(str(self.consumer_name), *self.member_names),
            )
        except MalformedMessageError:
            return  # not ours, or unreadable: the next run reports it
        if quarantined.sequence_number not in self._replayed:
            return
        error = quarantined.error or {}
        report.requarantined.append(
            RequarantinedRecord(
                message["MessageId"],
                quarantined.sequence_number,
                f"{error.get('type', 'error')}: {error.get('message', '')}".strip(),
            )
        )

    def _scan_requarantined(self, queue_url: str, started_ms: int, report: RedriveReport) -> None:
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
                        self._note_requarantined(message, report)
        except (ClientError, BotoCoreError) as error:
            report.failed.append(
                FailedMessage(
                    "-",
                    f"could not look for re-quarantined records in {queue_url}: {error}",
                )
            )
        finally:
            self._release(queue_url, seen.values())

    def _receive_window(self, queue_url: str, limit: int, seen: set[str]) -> list[dict[str, Any]]:
        """Up to ``limit`` messages not seen before, oldest records first.

        A standard queue does not keep order, so each window is sorted by where its records are
        in the stream (shard id, whose number is the shard's creation time, then sequence number).
        Order across windows is not guaranteed.
        """
        window: list[dict[str, Any]] = []
        while len(window) < limit:
            wanted = min(10, limit - len(window))  # SQS returns at most 10 per call
            messages = self.sqs_client.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=wanted,
                WaitTimeSeconds=self.receive_wait_seconds,
                VisibilityTimeout=self.visibility_timeout_seconds,
                MessageSystemAttributeNames=["SentTimestamp"],
            ).get("Messages", [])
            fresh = [m for m in messages if m["MessageId"] not in seen]
            seen.update(m["MessageId"] for m in fresh)
            window.extend(fresh)
            if len(messages) < wanted or not fresh:
                break  # the queue has no more for now; the next window asks again
        return sorted(window, key=_stream_position)

    def _handle(
        self,
        source: Source,
        message: Mapping[str, Any],
        report: RedriveReport,
        dry_run: bool,
    ) -> bool:
        """Redrive one message; True when it may be deleted."""
        message_id = message["MessageId"]
        try:
            if source is Source.ON_FAILURE:
                batch = parse_on_failure_message(
                    message["Body"], self.stream_arn, self.function_name
                )
                shard_id: str | None = batch.shard_id
                first, last = batch.start_sequence_number, batch.end_sequence_number
                try:
                    records = StreamRangeReader(
                        self.streams_client, self.stream_arn, self.max_empty_pages
                    ).read(batch.shard_id, first, last)
                except RecordsLostError as lost:
                    report.lost.append(
                        LostRange(
                            message_id,
                            lost.shard_id,
                            lost.first,
                            lost.last,
                            batch.batch_size,
                            lost.reason,
                        )
                    )
                    return False
                records = self._delivered(records, report)
            else:
                quarantined = parse_quarantine_message(
                    message["Body"],
                    expected_stream_arn=self.stream_arn,
                    expected_consumer=(str(self.consumer_name), *self.member_names),
                )
                records = [quarantined.record]
                shard_id = None
                first = last = quarantined.sequence_number
        except ForeignMessageError as error:
            report.kept.append(FailedMessage(message_id, str(error)))
            return False
        except MalformedMessageError as error:
            report.failed.append(FailedMessage(message_id, str(error)))
            return False
        except (ClientError, BotoCoreError) as error:
            # Not a sign of lost records (those raise RecordsLostError): keep it for another run.
            report.failed.append(FailedMessage(message_id, f"reading the stream failed: {error}"))
            return False
        if dry_run:
            report.planned.append(PlannedMessage(message_id, shard_id, first, last, len(records)))
            return False
        failure = self._replay(records, report)
        if failure is not None:
            report.failed.append(FailedMessage(message_id, failure))
            return False
        return True

    def _delivered(
        self, records: Sequence[dict[str, Any]], report: RedriveReport
    ) -> list[dict[str, Any]]:
        """The on-failure ``records`` the mapping's filters deliver (the rest are counted as
        filtered: the mapping never delivered them, so they are not replayed)."""
        delivered = [r for r in records if self._criteria.matches(r)]
        report.records_filtered += len(records) - len(delivered)
        return delivered

    def _replay(self, records: Sequence[dict[str, Any]], report: RedriveReport) -> str | None:
        """Replay ``records`` in order; None when all succeeded, else why not."""
        position, attempts = 0, 0
        while position < len(records):
            stop = _chunk_stop(records, position, self.invoke_max_records, self.invoke_max_bytes)
            chunk = list(records[position:stop])
            report.invocations += 1
            try:
                failed_index, reason = first_failed_index(
                    self.invoker.invoke({"Records": chunk}),
                    [record["dynamodb"]["SequenceNumber"] for record in chunk],
                )
            except InvocationError as error:
                failed_index, reason = 0, str(error)
            except (ClientError, BotoCoreError) as error:
                failed_index, reason = 0, f"invoking the consumer failed: {error}"
            if failed_index is None:
                self._replayed.update(str(r["dynamodb"]["SequenceNumber"]) for r in chunk)
                report.records_replayed += len(chunk)
                position += len(chunk)
                attempts = 0
                continue
            report.records_replayed += failed_index
            done = chunk[:failed_index]
            self._replayed.update(str(r["dynamodb"]["SequenceNumber"]) for r in done)
            if failed_index > 0:
                position += failed_index
                attempts = 1
            else:
                attempts += 1
            if attempts >= self.max_attempts:
                sequence_number = records[position]["dynamodb"]["SequenceNumber"]
                return (
                    f"record {sequence_number} still failed after {attempts} attempt(s): {reason};"
                    f" {position} of {len(records)} record(s) were replayed, the message is kept"
                )
        return None
