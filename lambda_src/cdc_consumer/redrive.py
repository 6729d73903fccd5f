"""Redrive: replay what a stream consumer failed on, from its on-failure queue or its quarantine.

The on-failure queue holds *pointers* (CONTRACTS §5: shard id, start and end sequence numbers),
not records. For each message, redrive reads the records of that range back from the stream
(GetShardIterator AT_SEQUENCE_NUMBER, then GetRecords page by page), replays them in order
through the consumer's handler contract (``{"Records": [...]}`` in, ``batchItemFailures`` out)
and deletes the message only after every record succeeded. A quarantine message (CONTRACTS §4)
carries the whole record, which is replayed the same way.

What redrive never does:

- skip a record silently. Records the stream no longer holds (trimmed after 24 h, shard gone,
  iterator expired, or simply not there) are reported as *lost* with their sequence numbers, and
  the message stays in the queue. A message with any lost record is not replayed at all: replaying
  around the gap would hide it, so the operator reconciles it by hand (README: "When the DLQ
  alarm fires").
- delete a message it could not replay: malformed messages, another stream's messages and
  messages whose replay failed stay in the queue (made visible again at the end of the run) and
  are reported with the reason.

Replaying twice changes nothing: the consumer runtime's processed-markers make replays of
already-applied records no-ops, and deleted messages are gone.

Run it as a command line (``python -m cdc_consumer.redrive --help``) or as the provisioned
redrive function (``cdc_consumer.redrive_handler.handler``). boto3 only: it ships in the runtime
layer.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import enum
import importlib
import json
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.filter_patterns import (
    FilterCriteria,
    check_filter_pattern,
    matches_filter_pattern,
)

__all__ = [
    "DEFAULT_INVOKE_MAX_BYTES",
    "DEFAULT_INVOKE_MAX_RECORDS",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_MAX_EMPTY_PAGES",
    "DEFAULT_RECEIVE_WAIT_SECONDS",
    "DEFAULT_VISIBILITY_TIMEOUT_SECONDS",
    "DEFAULT_WINDOW",
    "CallableInvoker",
    "FailedMessage",
    "InvocationError",
    "Invoker",
    "LambdaInvoker",
    "LocalContext",
    "LostRange",
    "MalformedMessageError",
    "OnFailureBatch",
    "PlannedMessage",
    "QuarantinedRecord",
    "RecordsLostError",
    "Redrive",
    "RedriveError",
    "RedriveReport",
    "Source",
    "StreamRangeReader",
    "check_filter_pattern",
    "main",
    "matches_filter_pattern",
    "parse_on_failure_message",
    "parse_quarantine_message",
    "to_lambda_record",
]

# --- Defaults, each with its reason -------------------------------------------------------------

#: Records per replay invocation: the StreamConsumer's default batch size, so the consumer sees
#: batches of the size it was built and timed for.
DEFAULT_INVOKE_MAX_RECORDS = 100
#: Serialized event size per replay invocation: below the 6 MB limit of a synchronous Lambda
#: invoke payload, with headroom for the JSON envelope.
DEFAULT_INVOKE_MAX_BYTES = 5_000_000
#: Invocations of the same first record without progress before the message is given up (and
#: kept): enough to ride out a throttle or a cold dependency, few enough that a still-broken
#: consumer does not hold the redrive for long.
DEFAULT_MAX_ATTEMPTS = 3
#: Consecutive empty GetRecords pages before the rest of the range counts as not found. DynamoDB
#: Streams may need several calls to get past a part of a shard without records, and an open
#: shard returns empty pages forever once the reader is past its newest record.
DEFAULT_MAX_EMPTY_PAGES = 10
#: GetRecords page size: the API's maximum, fewest calls (each shard allows 5 calls/s, shared
#: with the event source mapping that is reading it too).
DEFAULT_PAGE_LIMIT = 1000
#: Long-poll wait when receiving: short polling samples only some SQS servers and can come back
#: empty while messages remain; one second keeps the final (empty) receive cheap.
DEFAULT_RECEIVE_WAIT_SECONDS = 1
#: How long a received message stays invisible while redrive works on it: longer than reading a
#: range and replaying it takes, short enough that a crashed redrive's messages reappear soon.
DEFAULT_VISIBILITY_TIMEOUT_SECONDS = 900
#: Messages received and sorted by stream position before they are redriven: SQS standard queues
#: do not keep order, and a window this size is redriven well within the visibility timeout.
DEFAULT_WINDOW = 50
#: Read timeout of the Lambda client: a synchronous invoke lasts as long as the consumer runs (up
#: to Lambda's 15 minute maximum); botocore's 60 s default would time out and invoke again.
LAMBDA_READ_TIMEOUT_SECONDS = 905
#: Error codes that mean the records of a range can no longer be read.
LOST_ERROR_CODES = frozenset(
    {"TrimmedDataAccessException", "ResourceNotFoundException", "ExpiredIteratorException"}
)
#: The on-failure message fields redrive needs (CONTRACTS §5).
REQUIRED_BATCH_FIELDS = ("shardId", "startSequenceNumber", "endSequenceNumber", "streamArn")


# --- Errors --------------------------------------------------------------------------------------


class RedriveError(Exception):
    """Base class of the errors redrive raises."""


class MalformedMessageError(RedriveError):
    """A queue message redrive cannot use: not JSON, fields missing, or another stream's."""


class RecordsLostError(RedriveError):
    """Records of a range can no longer be read from the stream."""

    def __init__(self, shard_id: str, first: str, last: str, reason: str) -> None:
        super().__init__(f"records {first}..{last} of shard {shard_id} are lost: {reason}")
        self.shard_id = shard_id
        self.first = first
        self.last = last
        self.reason = reason


class InvocationError(RedriveError):
    """The consumer failed the whole invocation (a function error or an exception)."""


# --- Messages ------------------------------------------------------------------------------------


class Source(enum.StrEnum):
    """Which queue a redrive reads."""

    ON_FAILURE = "on-failure"
    QUARANTINE = "quarantine"


@dataclass(frozen=True)
class OnFailureBatch:
    """The part of an on-failure message (CONTRACTS §5) that locates the failed records."""

    shard_id: str
    start_sequence_number: str
    end_sequence_number: str
    stream_arn: str
    batch_size: int | None
    condition: str | None


@dataclass(frozen=True)
class QuarantinedRecord:
    """A quarantine message (CONTRACTS §4): the record exactly as Lambda delivered it."""

    record: dict[str, Any]
    consumer: str | None
    error: dict[str, Any] | None

    @property
    def sequence_number(self) -> str:
        return str(self.record["dynamodb"]["SequenceNumber"])


def _load_json_object(body: str, what: str) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except (TypeError, ValueError) as error:
        raise MalformedMessageError(
            f"{what} body is not JSON ({error}): {_clip(body)!r}; expected a JSON object"
        ) from None
    if not isinstance(document, dict):
        raise MalformedMessageError(
            f"{what} body is JSON {type(document).__name__}, not an object: {_clip(body)!r}"
        )
    return document


def _sequence_number(value: Any, name: str) -> str:
    text = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if not text.isdigit():
        raise MalformedMessageError(
            f"on-failure message field DDBStreamBatchInfo.{name} is {value!r}; expected a"
            " sequence number (a string of digits)"
        )
    return text


def parse_on_failure_message(body: str, expected_stream_arn: str) -> OnFailureBatch:
    """Validate an on-failure message body and return the batch it points at.

    Raises :class:`MalformedMessageError` naming what was wrong when the body is not JSON, lacks
    one of ``DDBStreamBatchInfo.{shardId, startSequenceNumber, endSequenceNumber, streamArn}``,
    has a start after its end, or points at another stream than ``expected_stream_arn``.
    """
    document = _load_json_object(body, "on-failure message")
    info = document.get("DDBStreamBatchInfo")
    if not isinstance(info, dict):
        raise MalformedMessageError(
            "on-failure message has no DDBStreamBatchInfo object (keys:"
            f" {sorted(document)}); expected Lambda's on-failure record for a DynamoDB stream"
        )
    missing = [name for name in REQUIRED_BATCH_FIELDS if info.get(name) in (None, "")]
    if missing:
        raise MalformedMessageError(
            f"on-failure message lacks DDBStreamBatchInfo.{', DDBStreamBatchInfo.'.join(missing)};"
            f" expected all of {', '.join(REQUIRED_BATCH_FIELDS)}"
        )
    start = _sequence_number(info["startSequenceNumber"], "startSequenceNumber")
    end = _sequence_number(info["endSequenceNumber"], "endSequenceNumber")
    if int(start) > int(end):
        raise MalformedMessageError(
            f"on-failure message has startSequenceNumber {start} after endSequenceNumber {end};"
            " expected start <= end"
        )
    if info["streamArn"] != expected_stream_arn:
        raise MalformedMessageError(
            f"on-failure message is for stream {info['streamArn']!r}, not the configured stream"
            f" {expected_stream_arn!r}; redrive it with the consumer of that stream"
        )
    batch_size = info.get("batchSize")
    context = document.get("requestContext")
    return OnFailureBatch(
        shard_id=str(info["shardId"]),
        start_sequence_number=start,
        end_sequence_number=end,
        stream_arn=str(info["streamArn"]),
        batch_size=batch_size if isinstance(batch_size, int) else None,
        condition=context.get("condition") if isinstance(context, dict) else None,
    )


def parse_quarantine_message(
    body: str,
    *,
    expected_stream_arn: str | None = None,
    expected_consumer: str | None = None,
) -> QuarantinedRecord:
    """Validate a quarantine message body (CONTRACTS §4) and return its record.

    Raises :class:`MalformedMessageError` when the body is not JSON, has no ``record`` object with
    ``eventID`` and ``dynamodb.SequenceNumber``, or names another consumer or stream than the
    configured ones (each check only when the expected value is given).
    """
    document = _load_json_object(body, "quarantine message")
    record = document.get("record")
    if not isinstance(record, dict):
        raise MalformedMessageError(
            f"quarantine message has no 'record' object (keys: {sorted(document)}); expected"
            " the stream record as the consumer received it"
        )
    dynamodb = record.get("dynamodb")
    if not record.get("eventID") or not isinstance(dynamodb, dict):
        raise MalformedMessageError(
            "quarantine message's record lacks eventID or the dynamodb object; expected a"
            " DynamoDB stream record"
        )
    if not str(dynamodb.get("SequenceNumber", "")).isdigit():
        raise MalformedMessageError(
            "quarantine message's record has dynamodb.SequenceNumber"
            f" {dynamodb.get('SequenceNumber')!r}; expected a string of digits"
        )
    consumer = document.get("consumer")
    if expected_consumer is not None and consumer not in (None, expected_consumer):
        raise MalformedMessageError(
            f"quarantine message is from consumer {consumer!r}, not the configured consumer"
            f" {expected_consumer!r}; redrive it with that consumer"
        )
    source_arn = document.get("sourceArn") or record.get("eventSourceARN")
    if expected_stream_arn is not None and source_arn not in (None, expected_stream_arn):
        raise MalformedMessageError(
            f"quarantine message is for stream {source_arn!r}, not the configured stream"
            f" {expected_stream_arn!r}; redrive it with the consumer of that stream"
        )
    error = document.get("error")
    return QuarantinedRecord(
        record=record, consumer=consumer, error=error if isinstance(error, dict) else None
    )


# --- Reading a range back from the stream --------------------------------------------------------


def to_lambda_record(record: Mapping[str, Any], stream_arn: str) -> dict[str, Any]:
    """A GetRecords record in the shape Lambda delivers it to a consumer.

    Lambda's event differs from the GetRecords response in three ways: it adds
    ``eventSourceARN``, ``dynamodb.ApproximateCreationDateTime`` is epoch seconds (boto3 parses
    it to a datetime), and ``userIdentity`` has lower-case keys (``type``, ``principalId``), which
    is what TTL filters and the runtime's TTL detection look at.
    """
    converted: dict[str, Any] = {key: value for key, value in record.items()}
    dynamodb = dict(record["dynamodb"])
    created = dynamodb.get("ApproximateCreationDateTime")
    if isinstance(created, _dt.datetime):
        dynamodb["ApproximateCreationDateTime"] = int(created.timestamp())
    converted["dynamodb"] = dynamodb
    identity = record.get("userIdentity")
    if isinstance(identity, Mapping):
        converted["userIdentity"] = {
            "type": identity.get("Type", identity.get("type")),
            "principalId": identity.get("PrincipalId", identity.get("principalId")),
        }
    converted["eventSourceARN"] = stream_arn
    return converted


def _seq(record: Mapping[str, Any]) -> int:
    return int(record["dynamodb"]["SequenceNumber"])


@dataclass
class StreamRangeReader:
    """Reads the records between two sequence numbers of one shard (both included).

    Sequence numbers are compared as integers (they are decimal strings of varying length).
    Reading stops at the first record past the end, at the end of a closed shard (no
    ``NextShardIterator``), or after ``max_empty_pages`` empty pages in a row. Raises
    :class:`RecordsLostError` when the stream no longer holds the range (trimmed, shard not
    found, iterator expired) or when the records that come back do not start at the start
    sequence number or do not reach the end one.
    """

    streams_client: Any
    stream_arn: str
    max_empty_pages: int = DEFAULT_MAX_EMPTY_PAGES
    page_limit: int = DEFAULT_PAGE_LIMIT

    def read(self, shard_id: str, start: str, end: str) -> list[dict[str, Any]]:
        first, last = int(start), int(end)

        def lost(reason: str) -> RecordsLostError:
            return RecordsLostError(shard_id, start, end, reason)

        try:
            iterator: str | None = self.streams_client.get_shard_iterator(
                StreamArn=self.stream_arn,
                ShardId=shard_id,
                ShardIteratorType="AT_SEQUENCE_NUMBER",
                SequenceNumber=start,
            )["ShardIterator"]
            records: list[dict[str, Any]] = []
            empty_pages = 0
            while iterator is not None:
                page = self.streams_client.get_records(
                    ShardIterator=iterator, Limit=self.page_limit
                )
                iterator = page.get("NextShardIterator")
                if not page["Records"]:
                    empty_pages += 1
                    if empty_pages >= self.max_empty_pages:
                        break
                    continue
                empty_pages = 0
                records.extend(r for r in page["Records"] if first <= _seq(r) <= last)
                if _seq(page["Records"][-1]) >= last:
                    break
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code in LOST_ERROR_CODES:
                raise lost(f"{code}: {error.response['Error'].get('Message', '')}") from error
            raise
        if not records or _seq(records[0]) != first:
            found = f"the first record read is {_seq(records[0])}" if records else "none was read"
            raise lost(f"the start sequence number {start} is not in the shard ({found})")
        if _seq(records[-1]) != last:
            raise lost(
                f"the end sequence number {end} is not in the shard (the last record read is"
                f" {_seq(records[-1])})"
            )
        return [to_lambda_record(r, self.stream_arn) for r in records]


# --- Invokers ------------------------------------------------------------------------------------


class Invoker(Protocol):
    """Delivers one stream-shaped event to the consumer (CONTRACTS §9) and returns its response.

    Raises :class:`InvocationError` when the whole invocation failed.
    """

    def invoke(self, event: dict[str, Any]) -> dict[str, Any] | None: ...


@dataclass
class LambdaInvoker:
    """Invokes the consumer function synchronously (``RequestResponse``).

    A response with ``FunctionError`` (the handler raised or timed out) raises
    :class:`InvocationError`. ``lambda_client`` defaults to one with a read timeout longer than
    Lambda's 15 minute maximum, so a long invocation is not cut off and invoked a second time.
    """

    function_name: str
    lambda_client: Any = None

    def __post_init__(self) -> None:
        if self.lambda_client is None:
            self.lambda_client = boto3.client(
                "lambda", config=Config(read_timeout=LAMBDA_READ_TIMEOUT_SECONDS)
            )

    def invoke(self, event: dict[str, Any]) -> dict[str, Any] | None:
        response = self.lambda_client.invoke(
            FunctionName=self.function_name,
            InvocationType="RequestResponse",
            Payload=json.dumps(event).encode(),
        )
        raw = response["Payload"].read()
        payload = json.loads(raw) if raw else None
        if response.get("FunctionError"):
            detail = (
                payload
                if not isinstance(payload, dict)
                else (f"{payload.get('errorType', '')}: {payload.get('errorMessage', '')}")
            )
            raise InvocationError(
                f"function {self.function_name} failed ({response['FunctionError']}): {detail}"
            )
        return payload


@dataclass
class LocalContext:
    """A Lambda context for handlers run in-process: the attributes handlers commonly read.

    ``timeout_seconds`` defaults to 300, a typical consumer timeout, so a runtime that stops near
    its deadline behaves as it would in Lambda.
    """

    function_name: str = "local-consumer"
    timeout_seconds: float = 300.0
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    _started: float = field(default_factory=time.monotonic, repr=False)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:local:000000000000:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        elapsed = time.monotonic() - self._started
        return max(0, int((self.timeout_seconds - elapsed) * 1000))


@dataclass
class CallableInvoker:
    """Calls a handler ``handler(event, context)`` in this process (the local pipeline, tests).

    The event goes through JSON first, as it would over the Lambda API, so the handler cannot
    change redrive's copy and gets only what JSON carries. An exception from the handler raises
    :class:`InvocationError`, as a function error would.
    """

    handler: Callable[[dict[str, Any], Any], Any]
    timeout_seconds: float = 300.0
    function_name: str = "local-consumer"

    def invoke(self, event: dict[str, Any]) -> dict[str, Any] | None:
        context = LocalContext(
            function_name=self.function_name, timeout_seconds=self.timeout_seconds
        )
        try:
            response = self.handler(json.loads(json.dumps(event)), context)
        except Exception as error:
            raise InvocationError(
                f"handler {getattr(self.handler, '__name__', self.handler)!s} raised"
                f" {type(error).__name__}: {error}"
            ) from error
        return json.loads(json.dumps(response)) if response is not None else None


# --- Report --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LostRange:
    """Records that can no longer be read: ``first..last`` of ``shard_id`` (both included)."""

    message_id: str
    shard_id: str
    first_sequence_number: str
    last_sequence_number: str
    record_count: int | None
    reason: str


@dataclass(frozen=True)
class FailedMessage:
    """A message redrive left in the queue, and why."""

    message_id: str
    reason: str


@dataclass(frozen=True)
class PlannedMessage:
    """What a dry run would replay for one message."""

    message_id: str
    shard_id: str | None
    first_sequence_number: str
    last_sequence_number: str
    record_count: int


@dataclass
class RedriveReport:
    """The outcome of one redrive run."""

    source: str
    queue_url: str
    dry_run: bool = False
    messages_received: int = 0
    messages_deleted: int = 0
    #: Messages sent after the run started (e.g. re-quarantined by this replay): left for the
    #: next run so a run always ends.
    messages_deferred: int = 0
    records_replayed: int = 0
    #: Records of on-failure ranges that the mapping's filters exclude (not replayed).
    records_filtered: int = 0
    invocations: int = 0
    lost: list[LostRange] = field(default_factory=list)
    failed: list[FailedMessage] = field(default_factory=list)
    planned: list[PlannedMessage] = field(default_factory=list)

    @property
    def lost_record_count(self) -> int:
        """Records lost: each range counts its batch size, or 1 when that is unknown."""
        return sum(lost.record_count or 1 for lost in self.lost)

    @property
    def ok(self) -> bool:
        """True when nothing was lost and nothing failed."""
        return not self.lost and not self.failed

    def to_log(self) -> dict[str, Any]:
        """The report as one structured log record."""
        document = asdict(self)
        document.update(event="redrive", ok=self.ok, lost_record_count=self.lost_record_count)
        return document

    def summary(self) -> str:
        """A few lines for a person."""
        verb = "would replay" if self.dry_run else "replayed"
        count = sum(p.record_count for p in self.planned) if self.dry_run else self.records_replayed
        lines = [
            f"redrive {self.source} {self.queue_url}: {self.messages_received} message(s),"
            f" {verb} {count} record(s) in {self.invocations} invocation(s),"
            f" filtered out {self.records_filtered},"
            f" deleted {self.messages_deleted}, deferred {self.messages_deferred},"
            f" lost {self.lost_record_count} record(s), failed {len(self.failed)} message(s)"
        ]
        lines += [
            f"  planned {p.message_id}: shard {p.shard_id or '-'} sequence numbers"
            f" {p.first_sequence_number}..{p.last_sequence_number}, {p.record_count} record(s)"
            for p in self.planned
        ]
        lines += [
            f"  LOST {x.message_id}: shard {x.shard_id} sequence numbers"
            f" {x.first_sequence_number}..{x.last_sequence_number}: {x.reason}"
            for x in self.lost
        ]
        lines += [f"  FAILED {f.message_id}: {f.reason}" for f in self.failed]
        return "\n".join(lines)


# --- Replay --------------------------------------------------------------------------------------


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


def _first_failed_index(response: Any, chunk: Sequence[dict[str, Any]]) -> tuple[int | None, str]:
    """Index in ``chunk`` of the first failed record (None: all succeeded) and the reason.

    Like the event source mapping, redrive resumes from the lowest failed sequence number; a
    failure naming no record of the batch fails the whole batch.
    """
    if response is None:
        return None, ""
    if not isinstance(response, dict):
        return None, ""  # Lambda treats any response without batchItemFailures as success.
    failures = response.get("batchItemFailures") or []
    if not failures:
        return None, ""
    positions = {str(r["dynamodb"]["SequenceNumber"]): i for i, r in enumerate(chunk)}
    indexes = []
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if identifier is None or str(identifier) not in positions:
            return 0, f"batchItemFailures names {identifier!r}, no record of the batch"
        indexes.append(positions[str(identifier)])
    index = min(indexes)
    return (
        index,
        f"the consumer reported record {chunk[index]['dynamodb']['SequenceNumber']} failed",
    )


def _stream_position(message: Mapping[str, Any]) -> tuple[str, int]:
    """Where a message's records are in the stream, for ordering; unreadable bodies first."""
    try:
        document = json.loads(message["Body"])
        info = document.get("DDBStreamBatchInfo")
        if isinstance(info, dict):
            return str(info["shardId"]), int(info["startSequenceNumber"])
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
        consumer_name: when given, quarantine messages from another consumer are refused.
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
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    invoke_max_records: int = DEFAULT_INVOKE_MAX_RECORDS
    invoke_max_bytes: int = DEFAULT_INVOKE_MAX_BYTES
    receive_wait_seconds: int = DEFAULT_RECEIVE_WAIT_SECONDS
    visibility_timeout_seconds: int = DEFAULT_VISIBILITY_TIMEOUT_SECONDS
    max_empty_pages: int = DEFAULT_MAX_EMPTY_PAGES
    window: int = DEFAULT_WINDOW
    filters: Sequence[Mapping[str, Any]] = ()

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
        """
        source = Source(source)
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
            for receipt_handle in keep.values():
                self.sqs_client.change_message_visibility(
                    QueueUrl=queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=0
                )
        return report

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
                batch = parse_on_failure_message(message["Body"], self.stream_arn)
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
                delivered = [r for r in records if self._criteria.matches(r)]
                report.records_filtered += len(records) - len(delivered)
                records = delivered
            else:
                quarantined = parse_quarantine_message(
                    message["Body"],
                    expected_stream_arn=self.stream_arn,
                    expected_consumer=self.consumer_name,
                )
                records = [quarantined.record]
                shard_id = None
                first = last = quarantined.sequence_number
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

    def _replay(self, records: Sequence[dict[str, Any]], report: RedriveReport) -> str | None:
        """Replay ``records`` in order; None when all succeeded, else why not."""
        position, attempts = 0, 0
        while position < len(records):
            stop = _chunk_stop(records, position, self.invoke_max_records, self.invoke_max_bytes)
            chunk = list(records[position:stop])
            report.invocations += 1
            try:
                failed_index, reason = _first_failed_index(
                    self.invoker.invoke({"Records": chunk}), chunk
                )
            except InvocationError as error:
                failed_index, reason = 0, str(error)
            except (ClientError, BotoCoreError) as error:
                failed_index, reason = 0, f"invoking the consumer failed: {error}"
            if failed_index is None:
                report.records_replayed += len(chunk)
                position += len(chunk)
                attempts = 0
                continue
            report.records_replayed += failed_index
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


# --- Command line --------------------------------------------------------------------------------


def _clip(text: Any, limit: int = 120) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _load_handler(spec: str, paths: Sequence[str]) -> Callable[[dict[str, Any], Any], Any]:
    """Import ``module:function`` (``module.function`` also works) after adding ``paths``."""
    for path in reversed(paths):
        if path not in sys.path:
            sys.path.insert(0, path)
    module_name, sep, attribute = spec.partition(":")
    if not sep:
        module_name, _, attribute = spec.rpartition(".")
    if not module_name or not attribute:
        raise SystemExit(f"--handler {spec!r} is not module:function (e.g. order_stats:handler)")
    handler = getattr(importlib.import_module(module_name), attribute, None)
    if not callable(handler):
        raise SystemExit(f"--handler {spec!r}: {module_name} has no callable {attribute!r}")
    return handler


def _progress_printer(total: int | None) -> Callable[[int, RedriveReport], None]:
    def show(done: int, report: RedriveReport) -> None:
        width = 30
        if total:
            filled = min(width, width * done // max(total, 1))
            bar = f"[{'#' * filled}{'.' * (width - filled)}] {done}/~{total}"
        else:
            bar = f"{done} message(s)"
        sys.stderr.write(
            f"\r{bar} replayed {report.records_replayed} lost {report.lost_record_count}"
            f" failed {len(report.failed)}"
        )
        sys.stderr.flush()

    return show


def _queue_depth(sqs_client: Any, queue_url: str) -> int | None:
    try:
        attributes = sqs_client.get_queue_attributes(
            QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"])
    except (ClientError, KeyError, ValueError):
        return None  # only the progress bar's total; not worth failing the redrive over


def _json_pattern(text: str) -> dict[str, Any]:
    try:
        pattern = json.loads(text)
        check_filter_pattern(pattern)
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"{_clip(text)!r} is not a filter pattern: {error}"
        ) from None
    return pattern


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m cdc_consumer.redrive",
        description=(
            "Replay what a DynamoDB stream consumer failed on: the batches its on-failure queue"
            " points at (read back from the stream) or the records in its quarantine queue."
            " Deletes a message only after all its records succeeded; reports records the stream"
            " no longer holds as lost. Exit status 1 when anything was lost or failed."
        ),
    )
    parser.add_argument("--queue-url", required=True, help="the on-failure or quarantine queue")
    parser.add_argument(
        "--source",
        choices=[s.value for s in Source],
        default=Source.ON_FAILURE.value,
        help="what the queue holds (default: on-failure)",
    )
    parser.add_argument(
        "--quarantine",
        dest="source",
        action="store_const",
        const=Source.QUARANTINE.value,
        help="same as --source quarantine",
    )
    parser.add_argument("--stream-arn", required=True, help="the consumer's stream")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--function-name", help="invoke this Lambda function synchronously")
    target.add_argument(
        "--handler",
        help="call this handler in-process instead, as module:function (local pipeline)",
    )
    parser.add_argument(
        "--path",
        action="append",
        default=[],
        metavar="DIR",
        help="directory to import --handler from (repeatable)",
    )
    parser.add_argument("--consumer-name", help="refuse quarantine messages of other consumers")
    parser.add_argument(
        "--filter",
        dest="filters",
        action="append",
        default=[],
        type=_json_pattern,
        metavar="PATTERN",
        help="the event source mapping's filter pattern, as JSON (repeatable): records of a"
        " range that match none are not replayed",
    )
    parser.add_argument("--max-messages", type=int, help="stop after this many messages")
    parser.add_argument(
        "--max-attempts",
        type=int,
        default=DEFAULT_MAX_ATTEMPTS,
        help="invocations without progress before a message is kept"
        f" (default {DEFAULT_MAX_ATTEMPTS})",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="list what would be replayed (message, shard, sequence range, record count)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    return parser


def main(argv: Sequence[str] | None = None, *, session: Any = None) -> int:
    """The command line. ``session`` (a boto3 Session) is for tests and embedding."""
    args = build_parser().parse_args(argv)
    session = session or boto3.session.Session()
    if args.handler:
        invoker: Invoker = CallableInvoker(_load_handler(args.handler, args.path))
    else:
        invoker = LambdaInvoker(
            args.function_name,
            session.client("lambda", config=Config(read_timeout=LAMBDA_READ_TIMEOUT_SECONDS)),
        )
    sqs_client = session.client("sqs")
    redrive = Redrive(
        invoker=invoker,
        stream_arn=args.stream_arn,
        sqs_client=sqs_client,
        streams_client=session.client(
            "dynamodbstreams", config=Config(retries={"mode": "standard", "max_attempts": 5})
        ),
        consumer_name=args.consumer_name,
        max_attempts=args.max_attempts,
        filters=args.filters,
    )
    total = _queue_depth(sqs_client, args.queue_url)
    if args.max_messages is not None and total is not None:
        total = min(total, args.max_messages)
    report = redrive.run(
        args.queue_url,
        args.source,
        dry_run=args.dry_run,
        max_messages=args.max_messages,
        progress=_progress_printer(total),
    )
    sys.stderr.write("\n" if report.messages_received else "")
    sys.stderr.write(report.summary() + "\n")
    if args.json:
        sys.stdout.write(json.dumps(report.to_log(), default=str) + "\n")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
