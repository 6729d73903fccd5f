"""The contract: every name and message shape the packages share, defined once.

The constructs (``cdc_constructs``) set these environment variables and alarm on these
metrics; the consumer runtime and redrive (``cdc_consumer``) read the variables, emit the
metrics and write or read the messages; the local pipeline (``cdc_local``) plays AWS's side of
them; CdcChecks (``cdc_constructs.nag``) checks against the service limits. Each of them
imports the names from here, so a renamed variable, metric or field changes in one place.

This module imports the standard library only (neither boto3 nor aws-cdk-lib), so a CDK app
can import it without the Lambda runtime's dependencies, and the runtime without the CDK.
It ships in the consumer runtime layer with the rest of ``cdc_consumer``.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

__all__ = [
    "ARCHIVE_BUCKET_ENV",
    "ARCHIVE_ENVIRONMENT",
    "ARCHIVE_PREFIX_ENV",
    "ARCHIVE_TABLE_ENV",
    "ARCHIVE_TTL_ATTRIBUTE_ENV",
    "BACKFILL_ENVIRONMENT",
    "BACKFILL_EVENT_KEY",
    "BACKFILL_EXECUTION_TIMEOUT_ENV",
    "BACKFILL_HANDLER",
    "BACKFILL_ID_MAX_LENGTH",
    "BACKFILL_ID_REFUSED_CHARACTERS",
    "BACKFILL_ITEMS",
    "BACKFILL_ITEMS_PER_SECOND_ENV",
    "BACKFILL_MAX_CONCURRENCY_ENV",
    "BACKFILL_METRICS",
    "BACKFILL_PAGES",
    "BACKFILL_PAGE_SIZE_ENV",
    "BACKFILL_PERMANENT_ERRORS",
    "BACKFILL_REFUSED_ERROR",
    "BACKFILL_RESERVE_SECONDS_ENV",
    "BACKFILL_SKEW_SECONDS_ENV",
    "BACKFILL_TABLE_ENV",
    "BACKFILL_THROTTLES",
    "BATCH_FAILURES",
    "BOOKKEEPING_METRICS",
    "CONSUMER_DIMENSION",
    "CONSUMER_ENVIRONMENT",
    "CONSUMER_FILTERS_ENV",
    "CONSUMER_FUNCTION_NAME_ENV",
    "CONSUMER_GROUP_ENV",
    "CONSUMER_METRICS",
    "CONSUMER_NAME_ENV",
    "CONSUMER_PROGRESS_ENV",
    "COUNT_METRICS",
    "DEFAULT_METRICS_NAMESPACE",
    "DUPLICATES_SKIPPED",
    "FOREIGN_MARKERS",
    "IDEMPOTENCY_TABLE_ENV",
    "ITERATOR_LAG_MS",
    "LEDGER_ENTRIES_WRITTEN",
    "LEDGER_RECORDS_LISTED",
    "LEDGER_TABLE_ENV",
    "MAPPING_UUID_ENV",
    "MARKERS_WRITTEN",
    "MARKER_LIFETIME_MARGIN_SECONDS",
    "MARKER_TTL_ENV",
    "MAX_DETAIL_TYPE_LENGTH",
    "MAX_PLANNED_SEGMENTS",
    "MAX_QUEUE_MESSAGE_BYTES",
    "MAX_STREAM_READERS",
    "MAX_STREAM_READERS_WITH_REPLICAS",
    "MAX_TOTAL_SEGMENTS",
    "MAX_TRANSACTION_ACTIONS",
    "MAX_TRANSACTION_BYTES",
    "METRICS_NAMESPACE_ENV",
    "MIN_TOTAL_SEGMENTS",
    "ON_FAILURE_BUCKET_ENV",
    "ON_FAILURE_CONDITIONS",
    "ON_FAILURE_MESSAGE_VERSION",
    "ON_FAILURE_PREFIX_ENV",
    "ON_FAILURE_QUEUE_ENV",
    "ON_FAILURE_S3_PREFIX",
    "OUTBOX_KEY_PREFIX",
    "QUARANTINE_BUCKET_ENV",
    "QUARANTINE_MESSAGE_VERSION",
    "QUARANTINE_QUEUE_ENV",
    "QUARANTINE_S3_PREFIX",
    "RECORDS_PROCESSED",
    "RECORDS_QUARANTINED",
    "RECORD_AGE_EXCEEDED",
    "RECORD_FILTERS_ENV",
    "REDRIVE_ENVIRONMENT",
    "REDRIVE_FAILED_MESSAGES",
    "REDRIVE_LOST_RECORDS",
    "REDRIVE_METRICS",
    "REDRIVE_RECORDS_REPLAYED",
    "REDRIVE_RESERVE_SECONDS_ENV",
    "REPLICATED_TABLE_ENV",
    "REPLICA_ENVIRONMENT",
    "RETRY_ATTEMPTS_EXHAUSTED",
    "S3_EXPIRY_ROUNDING_SECONDS",
    "SEGMENT_BYTES",
    "SNAPSHOT_EVENT_SOURCE",
    "STREAM_ARN_ENV",
    "STREAM_RETENTION_SECONDS",
    "TTL_ARCHIVE_HANDLER",
    "TTL_EXPIRIES",
    "UNLIMITED_RECORD_AGE",
    "BackfillPlan",
    "BackfillRefusal",
    "BackfillRequest",
    "ConsumerProgress",
    "ContractError",
    "ErrorDescription",
    "GroupMemberSpec",
    "Metric",
    "OnFailureMessage",
    "OnFailureRequestContext",
    "OnFailureResponseContext",
    "OutboxEventDetail",
    "OutboxItem",
    "QuarantineMessage",
    "RedriveCause",
    "ReplayWindows",
    "SegmentProgress",
    "SegmentResult",
    "SegmentTask",
    "SnapshotBatch",
    "StreamBatchInfo",
    "backfill_id",
    "minimum_marker_lifetime",
    "redrive_lease_key",
]


class ContractError(ValueError):
    """A message that does not have the contract's shape (``from_dict`` of any shape here)."""


# --- Environment variables -------------------------------------------------------------------
# Set by StreamConsumer / StreamRedrive, read by the runtime / redrive_handler, resolved to local
# resources by the local pipeline.

CONSUMER_NAME_ENV: Final = "CDC_CONSUMER_NAME"
"""The consumer's name: namespaces its idempotency markers (``{name}#{eventID}``) and is the
``Consumer`` metric dimension. Consumer and redrive functions."""

IDEMPOTENCY_TABLE_ENV: Final = "IDEMPOTENCY_TABLE_NAME"
"""The idempotency table (partition key ``id`` S, TTL attribute ``expiration`` N). Consumer
functions; redrive functions, for the consumer's redrive lease (:func:`redrive_lease_key`)."""

QUARANTINE_QUEUE_ENV: Final = "QUARANTINE_QUEUE_URL"
"""The queue poison records go to (:class:`QuarantineMessage`). Consumer and redrive functions."""

METRICS_NAMESPACE_ENV: Final = "CDC_METRICS_NAMESPACE"
"""The CloudWatch namespace of the embedded-metric-format metrics (default
:data:`DEFAULT_METRICS_NAMESPACE`). Consumer and redrive functions."""

QUARANTINE_BUCKET_ENV: Final = "QUARANTINE_BUCKET_NAME"
"""Where a poison record too big for a queue message is kept whole (under
:data:`QUARANTINE_S3_PREFIX`), its message pointing at it (``recordLocation``). Consumer
functions (the failed-batch bucket, or a bucket of its own when the destination is SQS or SNS)."""

MARKER_TTL_ENV: Final = "CDC_MARKER_TTL_SECONDS"
"""How long processed-markers and side-effect claims are kept, whole seconds: the consumer's
marker lifetime, which the constructs derive from its replay windows
(:func:`minimum_marker_lifetime`) or take from ``marker_lifetime`` when at least that. Unset
(a function these constructs did not make), the runtime keeps them for the rule applied to the
longest windows it cannot see (``cdc_consumer.defaults.marker_ttl_seconds``); CdcChecks
reports such a function."""

LEDGER_TABLE_ENV: Final = "CDC_LEDGER_TABLE_NAME"
"""The ledger table (partition key ``id`` S, sort key ``seq`` S, TTL attribute ``expiration``
N): one entry per committed transaction instead of a processed-marker per record
(``cdc_consumer.ledger``). Unset (an idempotency table these constructs did not make, so no
ledger table beside it), the runtime writes per-record markers as before."""

CONSUMER_FUNCTION_NAME_ENV: Final = "CONSUMER_FUNCTION_NAME"
"""Redrive: the consumer function it invokes synchronously."""

STREAM_ARN_ENV: Final = "STREAM_ARN"
"""Redrive: the consumer's stream; messages of other streams are refused."""

ON_FAILURE_QUEUE_ENV: Final = "ON_FAILURE_QUEUE_URL"
"""Redrive: the event source mapping's on-failure queue (:class:`OnFailureMessage`)."""

ON_FAILURE_BUCKET_ENV: Final = "ON_FAILURE_BUCKET_NAME"
"""Redrive: the mapping's S3 on-failure destination, instead of a queue (each object holds its
batch)."""

ON_FAILURE_PREFIX_ENV: Final = "ON_FAILURE_PREFIX"
"""Redrive: where the bucket's objects are (default :data:`ON_FAILURE_S3_PREFIX` + the
mapping's UUID)."""

MAPPING_UUID_ENV: Final = "EVENT_SOURCE_MAPPING_UUID"
"""Redrive: the consumer's event source mapping; objects of other mappings are kept."""

REDRIVE_RESERVE_SECONDS_ENV: Final = "REDRIVE_RESERVE_SECONDS"
"""Redrive: no message is started later than this many seconds before its deadline."""

CONSUMER_FILTERS_ENV: Final = "CONSUMER_FILTERS"
"""Redrive: the mapping's filter patterns, a JSON list (records they drop are not replayed)."""

CONSUMER_GROUP_ENV: Final = "CDC_CONSUMER_GROUP"
"""Several consumers behind one mapping (StreamConsumer ``members``): a JSON list of
:class:`GroupMemberSpec` objects, in dispatch order. Set on the consumer function, which builds
its ``ConsumerGroup`` from it, and on its redrive, which replays the quarantine messages of
every member."""

REPLICATED_TABLE_ENV: Final = "CDC_REPLICATED_TABLE"
"""``"true"`` when the stream is a global table replica's (a table with replicas): a TTL
deletion replicated from another region then arrives without the service identity, and the
runtime tells it by the item's own TTL attribute (:data:`TTL_ATTRIBUTE_ENV`) against the
record's creation time (``cdc_consumer.ttl.ExpiryRule``). Consumer and redrive functions."""

TTL_ATTRIBUTE_ENV: Final = "CDC_TTL_ATTRIBUTE"
"""The source table's TTL attribute (a Number of epoch seconds), set with
:data:`REPLICATED_TABLE_ENV`."""

RECORD_FILTERS_ENV: Final = "CDC_RECORD_FILTERS"
"""The consumer's filter patterns as written, a JSON list, set only where the mapping's filters
had to be widened for a table with replicas (a filter on the TTL service identity cannot see a
replicated TTL deletion): the runtime applies them to each record after recognising replicated
TTL deletions, and drops the records they do not match."""

REPLICA_ENVIRONMENT: Final = (REPLICATED_TABLE_ENV, TTL_ATTRIBUTE_ENV, RECORD_FILTERS_ENV)
"""The variables a consumer of a table with replicas also gets (docs/global-tables.md)."""

ARCHIVE_BUCKET_ENV: Final = "CDC_ARCHIVE_BUCKET"
"""The TTL archive (``cdc_consumer.ttl_archive``): the bucket each expired item is written to."""

ARCHIVE_PREFIX_ENV: Final = "CDC_ARCHIVE_PREFIX"
"""The TTL archive: the key prefix of its objects (may be empty; ends with ``/`` otherwise)."""

ARCHIVE_TABLE_ENV: Final = "CDC_ARCHIVE_TABLE"
"""The TTL archive: the source table's name, the first partition of every object's key (the
same in every region of a global table, so two regions' archives of one expiry meet)."""

ARCHIVE_TTL_ATTRIBUTE_ENV: Final = "CDC_ARCHIVE_TTL_ATTRIBUTE"
"""The TTL archive: the source table's TTL attribute (a Number of epoch seconds), read from
each expired item's old image: its value is part of the object's key."""

ARCHIVE_ENVIRONMENT: Final = (
    ARCHIVE_BUCKET_ENV,
    ARCHIVE_PREFIX_ENV,
    ARCHIVE_TABLE_ENV,
    ARCHIVE_TTL_ATTRIBUTE_ENV,
)
"""The variables the TtlArchive construct sets on its consumer function."""

TTL_ARCHIVE_HANDLER: Final = "cdc_consumer.ttl_archive.handler"
"""The TTL archive's Lambda handler, a module of the runtime layer (on ``sys.path`` as
/opt/python): the construct's function has no code of its own."""

CONSUMER_ENVIRONMENT: Final = (
    CONSUMER_NAME_ENV,
    IDEMPOTENCY_TABLE_ENV,
    QUARANTINE_QUEUE_ENV,
    QUARANTINE_BUCKET_ENV,
    METRICS_NAMESPACE_ENV,
)
"""Every variable a consumer function gets from StreamConsumer."""

REDRIVE_ENVIRONMENT: Final = (
    CONSUMER_FUNCTION_NAME_ENV,
    CONSUMER_NAME_ENV,
    STREAM_ARN_ENV,
    ON_FAILURE_QUEUE_ENV,
    ON_FAILURE_BUCKET_ENV,
    ON_FAILURE_PREFIX_ENV,
    MAPPING_UUID_ENV,
    QUARANTINE_QUEUE_ENV,
    METRICS_NAMESPACE_ENV,
    REDRIVE_RESERVE_SECONDS_ENV,
    CONSUMER_FILTERS_ENV,
    CONSUMER_GROUP_ENV,
    MARKER_TTL_ENV,
)
"""Every variable a redrive function may get from StreamRedrive (the on-failure queue or the
bucket, the quarantine queue, the filters and the group only when the consumer has them)."""


# --- Metrics ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    """An embedded-metric-format metric: its name and CloudWatch unit."""

    name: str
    unit: str = "Count"


DEFAULT_METRICS_NAMESPACE: Final = "CdcConstructs"
"""The namespace the runtime and redrive write to, and the constructs' alarms read, by default."""

CONSUMER_DIMENSION: Final = "Consumer"
"""The one dimension of every metric here: the consumer's name."""

RECORDS_PROCESSED: Final = Metric("RecordsProcessed")
DUPLICATES_SKIPPED: Final = Metric("DuplicatesSkipped")
RECORDS_QUARANTINED: Final = Metric("RecordsQuarantined")
TTL_EXPIRIES: Final = Metric("TtlExpiries")
BATCH_FAILURES: Final = Metric("BatchFailures")
FOREIGN_MARKERS: Final = Metric("ForeignMarkers")
"""Records whose marker was written by a consumer of another stream under the same name
(ForeignMarkerError): reported failed, never skipped."""
ITERATOR_LAG_MS: Final = Metric("IteratorLagMs", "Milliseconds")
"""Age of the newest record of the batch when it was handled (only when a record carried
its creation time)."""

COUNT_METRICS: Final = (
    RECORDS_PROCESSED,
    DUPLICATES_SKIPPED,
    RECORDS_QUARANTINED,
    TTL_EXPIRIES,
    BATCH_FAILURES,
    FOREIGN_MARKERS,
)
"""The runtime's per-batch counts of records, in the order of its EMF line."""

MARKERS_WRITTEN: Final = Metric("MarkersWritten")
"""Processed-markers committed (one per record that needs one: the Kinesis route, snapshot rows,
a consumer without a ledger table)."""
LEDGER_ENTRIES_WRITTEN: Final = Metric("LedgerEntriesWritten")
"""Ledger entries committed: one per transaction and stream (``cdc_consumer.ledger``)."""
LEDGER_RECORDS_LISTED: Final = Metric("LedgerRecordsListed")
"""Records those entries list (each in place of a marker): divided by
:data:`LEDGER_ENTRIES_WRITTEN`, the records an entry covers, the ledger's saving."""

BOOKKEEPING_METRICS: Final = (MARKERS_WRITTEN, LEDGER_ENTRIES_WRITTEN, LEDGER_RECORDS_LISTED)
"""The runtime's per-batch counts of what it wrote to know what it applied (markers and ledger
entries, which live as long: the replay windows rule), after :data:`COUNT_METRICS` in its EMF
line."""

LEDGER_MEETINGS: Final = Metric("LedgerMeetings")
"""Transactions that met another writer in a ledger lane (another delivery of the same shard
committed since the lookup): the lane is read again, nothing fails (``cdc_consumer.contention``)."""
TRANSACTION_CONFLICTS: Final = Metric("TransactionConflicts")
"""Transactions DynamoDB cancelled with ``TransactionConflict`` (another transaction on one of
their items at the same moment): retried after a backoff with jitter."""
CONTENTION_FAILURES: Final = Metric("ContentionFailures")
"""Batches stopped because meetings and conflicts outlasted the contention budget (the record is
reported and retried by Lambda); alarmed, since in ordinary load it stays 0."""

CONTENTION_METRICS: Final = (LEDGER_MEETINGS, TRANSACTION_CONFLICTS, CONTENTION_FAILURES)
"""The runtime's per-batch counts of other writers met on its items, after
:data:`BOOKKEEPING_METRICS` in its EMF line."""

CONSUMER_METRICS: Final = (
    *COUNT_METRICS,
    *BOOKKEEPING_METRICS,
    *CONTENTION_METRICS,
    ITERATOR_LAG_MS,
)
"""Every metric the consumer runtime emits, one EMF line per batch."""

REDRIVE_LOST_RECORDS: Final = Metric("RedriveLostRecords")
REDRIVE_RECORDS_REPLAYED: Final = Metric("RedriveRecordsReplayed")
REDRIVE_FAILED_MESSAGES: Final = Metric("RedriveFailedMessages")

REDRIVE_METRICS: Final = (REDRIVE_LOST_RECORDS, REDRIVE_RECORDS_REPLAYED, REDRIVE_FAILED_MESSAGES)
"""Every metric the redrive function emits, one EMF line per run."""


# --- Service limits --------------------------------------------------------------------------

STREAM_RETENTION_SECONDS: Final = 24 * 3600
"""DynamoDB Streams keep a record for 24 hours, fixed; then it is trimmed."""

MAX_STREAM_READERS: Final = 2
"""Concurrent readers (event source mappings, pipes) a DynamoDB stream's shard serves; a third is
throttled (``LimitExceededException``)."""

MAX_STREAM_READERS_WITH_REPLICAS: Final = 1
"""Readers AWS's Lambda guide asks for on the stream of a global table (a table with replicas)."""

MAX_TRANSACTION_ACTIONS: Final = 100
"""TransactWriteItems takes at most 100 actions."""

MAX_TRANSACTION_BYTES: Final = 4 * 1024 * 1024
"""TransactWriteItems takes at most 4 MB of items."""

MAX_QUEUE_MESSAGE_BYTES: Final = 262_144
"""SQS's default ``MaximumMessageSize`` (256 KiB) for a queue that sets none, as the quarantine
queues here: a larger SendMessage is refused. A DynamoDB item reaches 400 KB, a record carries
two images and binary travels as base64, so a quarantine message can be larger: the runtime then
keeps the record in a bucket and sends a pointer (:class:`QuarantineMessage`)."""

QUARANTINE_S3_PREFIX: Final = "cdc-quarantine/"
"""Where the runtime keeps quarantined records too big for a message:
``cdc-quarantine/<consumer>/<eventID>-<uuid>.json``, each the whole quarantine message."""

MAX_DETAIL_TYPE_LENGTH: Final = 128
"""EventBridge's limit on an event's detail-type (an outbox event's type becomes it)."""


# --- Tumbling windows: the shard a batch comes from ------------------------------------------

SHARD_ID_KEY: Final = "shardId"
"""The shard of every record of a stream event, in an event of a mapping with a tumbling window
(``TumblingWindowInSeconds``), and in a redrive's replay of a failed batch or a quarantined record
whose shard is known. The runtime keys its ledger lanes by it (``cdc_consumer.ledger``)."""

WINDOW_KEY: Final = "window"
"""``{"start": ISO-8601, "end": ISO-8601}``: the tumbling window of the event's records; present
in every invocation of a mapping with a window."""

WINDOW_STATE_KEY: Final = "state"
"""The window's state: passed in every windowed event, and required in every answer to one
(Lambda counts an answer without it as a failed invocation)."""

FINAL_INVOKE_KEY: Final = "isFinalInvokeForWindow"
"""True in the last invocation of a window (which may carry no records)."""

WINDOW_TERMINATED_EARLY_KEY: Final = "isWindowTerminatedEarly"
"""True when Lambda ended the window early (its state grew past 1 MB)."""

WINDOW_HANDLER: Final = "cdc_consumer.window_handler.handler"
"""The handler StreamConsumer gives a function it makes whose mapping has a tumbling window: it
runs the function's own handler (:data:`USER_HANDLER_ENV`) and adds the ``state`` an answer to a
windowed event must carry when that handler's answer lacks it."""

USER_HANDLER_ENV: Final = "CDC_HANDLER"
"""The function's own handler (``module.function``) behind :data:`WINDOW_HANDLER`."""


# --- Replay windows: how long a marker must live ------------------------------------------------
# The one rule (docs/design.md, "Markers outlive every replay window"): a processed-marker or a
# side-effect claim outlives every window in which its record can be delivered or replayed.
# The constructs derive each consumer's marker lifetime from it, StreamConsumer and
# KinesisConsumer refuse a ``marker_lifetime`` below it, and CdcChecks applies it to any
# template.

MARKER_LIFETIME_MARGIN_SECONDS: Final = 24 * 3600
"""Kept past the last moment a record can come back: a redrive started on a window's last day,
clocks of different hosts, a retention counted from a slightly later write. A day; DynamoDB's TTL
deletes late, never early, so the margin is never eaten from the other side."""

S3_EXPIRY_ROUNDING_SECONDS: Final = 24 * 3600
"""How much longer than its lifecycle rule's days S3 can keep an object: S3 adds the rule's days
to the object's creation time and rounds the result up to the next midnight UTC (AWS S3 User
Guide, "Lifecycle configuration elements": an object created 1/15 10:30 UTC under a 3-day rule
expires 1/19 00:00 UTC), so a failed batch written just after midnight lives almost a day more.
Then S3 queues the expired object and removes it asynchronously ("Expiring objects"): it can
still be read for a while, unbounded by any rule, which :data:`MARKER_LIFETIME_MARGIN_SECONDS`
absorbs in part and the redrive's own age check covers beyond that."""

UNLIMITED_RECORD_AGE: Final = -1
"""``MaximumRecordAgeInSeconds`` meaning "no limit": the stream's retention bounds it."""


@dataclass(frozen=True)
class ReplayWindows:
    """The windows in which a consumer's record can come back, whole seconds.

    ``stream_retention``: how long the stream holds a record (:data:`STREAM_RETENTION_SECONDS`
    for DynamoDB Streams; a Kinesis stream's ``RetentionPeriodHours``): a retry, a bisected
    half or a mapping re-created at TRIM_HORIZON delivers it again within it.
    ``max_record_age``: the mapping's ``MaximumRecordAgeInSeconds``
    (:data:`UNLIMITED_RECORD_AGE`: none): when it gives up on a record at the latest and sends
    its batch to the on-failure destination. ``failed_batch_retention``: how long the
    destination keeps that batch by its configuration (an S3 bucket's lifecycle expiration, in
    whole days); 0 for SQS or SNS, which keep a pointer into the stream only, so the stream's
    retention bounds its replay. S3 keeps an object up to a day past its rule
    (:attr:`failed_batch_kept`).
    ``quarantine_retention``: the quarantine queue's ``MessageRetentionPeriod``.
    """

    stream_retention: int
    max_record_age: int
    failed_batch_retention: int
    quarantine_retention: int

    @property
    def discarded_by(self) -> int:
        """The latest a failed batch reaches the on-failure destination, after the write."""
        age = self.max_record_age
        unlimited = age == UNLIMITED_RECORD_AGE or age >= self.stream_retention
        return self.stream_retention if unlimited else age

    @property
    def failed_batch_kept(self) -> int:
        """How long the destination can keep a failed batch: ``failed_batch_retention`` plus
        S3's rounding of an expiration up to the next midnight UTC
        (:data:`S3_EXPIRY_ROUNDING_SECONDS`); 0 for a pointer destination."""
        if not self.failed_batch_retention:
            return 0
        return self.failed_batch_retention + S3_EXPIRY_ROUNDING_SECONDS

    @property
    def replayable_until(self) -> int:
        """The latest a record can come back, after its write: from the stream; from the
        failed-batch bucket (written at :attr:`discarded_by`, kept :attr:`failed_batch_kept`);
        from the quarantine, where a record goes when it is delivered from either, and stays
        its retention."""
        bucket_until = self.discarded_by + self.failed_batch_kept
        quarantined_by = max(self.stream_retention, bucket_until)
        return max(bucket_until, quarantined_by + self.quarantine_retention)

    def describe(self) -> str:
        """The windows in words, for errors and findings."""
        age = (
            "no limit"
            if self.max_record_age == UNLIMITED_RECORD_AGE
            else f"{self.max_record_age} s"
        )
        rounding = (
            f" (kept up to {self.failed_batch_kept} s: S3 expires at the next midnight UTC)"
            if self.failed_batch_retention
            else ""
        )
        return (
            f"stream retention {self.stream_retention} s, maximum record age {age}, "
            f"failed-batch retention {self.failed_batch_retention} s{rounding}, quarantine "
            f"retention {self.quarantine_retention} s"
        )


def minimum_marker_lifetime(windows: ReplayWindows) -> int:
    """The shortest time a processed-marker or side-effect claim may be kept, whole seconds:
    :attr:`ReplayWindows.replayable_until` plus :data:`MARKER_LIFETIME_MARGIN_SECONDS`.

    A marker is written when its record is applied, never before the record was written, so a
    marker kept this long outlives every copy of its record: a late replay (a consumer group's
    failed batch always holds records its earlier members applied; a member's quarantined
    record is replayed through the group) finds it and skips. Kept shorter, the replay applies
    the record a second time.

    Not covered: a record quarantined again by a redrive of the quarantine starts a new
    quarantine window, and a redriven object restored from the bucket's noncurrent versions is a
    deliberate second replay.
    """
    return windows.replayable_until + MARKER_LIFETIME_MARGIN_SECONDS


def redrive_lease_key(consumer_name: str, stream_arn: str) -> str:
    """The ``id`` of a consumer's redrive lease in its idempotency table
    (``cdc_consumer.redrive.lease``; the redrive function's role may write this item only): in
    the consumer's namespace, and no marker or claim id has ``#redrive-lease#`` (theirs end in
    an event id)."""
    return f"{consumer_name}#redrive-lease#{stream_arn}"


# --- Typed reasons: what a caller decides on ---------------------------------------------------
# A report's or an error's sentence is for people; code that decides reads one of these instead,
# so rewording a sentence never changes what a run does.


class RedriveCause(enum.StrEnum):
    """Why a redrive left a message or object where it was (``FailedMessage.cause``)."""

    EARLIER_CHANGE_IN_QUARANTINE = "earlier-change-in-quarantine"
    """The quarantine queue holds an earlier change of one of its items (a second on-failure
    round may take it once the quarantine was replayed)."""
    EARLIER_CHANGE_IN_BUCKET = "earlier-change-in-bucket"
    """The failed-batch bucket holds an earlier change of its item (or an object whose items
    cannot be read)."""
    EARLIER_CHANGE_OF_ITEM = "earlier-change-of-item"
    """An earlier quarantined change of its item stayed in the queue in this run."""
    EARLIER_BATCH_OF_SHARD = "earlier-batch-of-shard"
    """An earlier object of its shard failed, was held or stays in the bucket."""
    ANCESTOR_SHARD_PENDING = "ancestor-shard-pending"
    """A shard it may descend from still has an object in the bucket."""
    OLDER_THAN_MARKERS = "older-than-markers"
    """It failed longer ago than the consumer's markers live: replaying it could apply records
    a second time."""
    OLDER_THAN_STREAM_RETENTION = "older-than-stream-retention"
    """It holds no records (a pointer) and its records arrived longer ago than the stream keeps
    them: they cannot be read back (they are reported lost too)."""
    REPLAY_FAILED = "replay-failed"
    """The consumer failed a record of it (or deleting it failed after its replay)."""
    UNREADABLE = "unreadable"
    """It could not be read, parsed or read back from the stream."""
    FOREIGN = "foreign"
    """Another consumer's, function's or stream's, or it names none."""
    REQUARANTINED = "requarantined"
    """A record of it was quarantined again by the replay."""


class BackfillRefusal(enum.StrEnum):
    """Why a backfill refused to start (``BackfillRefusedError.refusal``)."""

    NO_PROGRESS = "no-progress"
    """The consumer has recorded no progress yet: it may simply not have applied a change."""
    OTHER = "other"
    """Anything an operator must fix (the error's message says what)."""


# --- Shapes: helpers ---------------------------------------------------------------------------


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ContractError(f"{what} is {type(value).__name__}, not an object")
    return value


def _field(document: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in document:
        raise ContractError(f"{what} lacks {key!r} (keys: {sorted(document)})")
    return document[key]


def _shard(value: Any, what: str) -> str | None:
    if value is None or (isinstance(value, str) and value):
        return value
    raise ContractError(f"{what}'s {SHARD_ID_KEY} is {value!r}; expected a shard id or none")


# --- The quarantine message --------------------------------------------------------------------

QUARANTINE_MESSAGE_VERSION: Final = "1"


@dataclass(frozen=True)
class ErrorDescription:
    """An exception as logs and quarantine messages carry it."""

    type: str
    message: str

    @classmethod
    def of(cls, error: BaseException) -> ErrorDescription:
        return cls(type(error).__name__, str(error))

    def to_dict(self) -> dict[str, str]:
        return {"type": self.type, "message": self.message}

    @classmethod
    def from_dict(cls, document: Any) -> ErrorDescription:
        document = _object(document, "error")
        return cls(str(document.get("type", "")), str(document.get("message", "")))


@dataclass(frozen=True)
class QuarantineMessage:
    """The body of a quarantine-queue message: a poison record, whole, with its error.

    The runtime sends it; redrive reads it back and replays ``record`` (the stream record
    exactly as Lambda delivered it, binary values base64-encoded).

    ``record_location`` (``{"bucket": ..., "key": ...}``): the message is too big for a queue
    (:data:`MAX_QUEUE_MESSAGE_BYTES`), so the whole message is kept in that object and this one
    carries the record without its images (keys, sequence number, times: enough to order it)."""

    consumer: str | None
    source_arn: str | None
    error: ErrorDescription | None
    record: Any
    quarantined_at: str
    """ISO-8601 UTC, milliseconds."""
    version: str = QUARANTINE_MESSAGE_VERSION
    record_location: Mapping[str, str] | None = None
    shard_id: str | None = None
    """The shard the record was delivered from (:data:`SHARD_ID_KEY`), when its event said: the
    redrive replays it with it, so it is looked up in the ledger lane it would be committed in.
    None in messages written before shards were kept, and for records delivered without one."""

    RECORD_LOCATION: ClassVar[str] = "recordLocation"

    def to_dict(self) -> dict[str, Any]:
        document = {
            "version": self.version,
            "consumer": self.consumer,
            "sourceArn": self.source_arn,
            "error": self.error.to_dict() if self.error is not None else None,
            "record": self.record,
            "quarantinedAt": self.quarantined_at,
        }
        if self.record_location is not None:
            document[self.RECORD_LOCATION] = dict(self.record_location)
        if self.shard_id is not None:
            document[SHARD_ID_KEY] = self.shard_id
        return document

    @classmethod
    def from_dict(cls, document: Any) -> QuarantineMessage:
        """Raises :class:`ContractError` when ``record`` is missing or not an object."""
        what = "quarantine message"
        document = _object(document, what)
        record = _object(_field(document, "record", what), f"{what}'s record")
        error = document.get("error")
        location = document.get(cls.RECORD_LOCATION)
        if location is not None and not (
            isinstance(location, Mapping)
            and all(isinstance(location.get(k), str) and location.get(k) for k in ("bucket", "key"))
        ):
            raise ContractError(
                f"{what}'s {cls.RECORD_LOCATION} is {location!r}; expected"
                ' {"bucket": <name>, "key": <key>}'
            )
        return cls(
            consumer=document.get("consumer"),
            source_arn=document.get("sourceArn"),
            error=ErrorDescription.from_dict(error) if isinstance(error, Mapping) else None,
            record=dict(record),
            quarantined_at=str(document.get("quarantinedAt", "")),
            version=str(document.get("version", QUARANTINE_MESSAGE_VERSION)),
            record_location=dict(location) if location is not None else None,
            shard_id=_shard(document.get(SHARD_ID_KEY), what),
        )


# --- The on-failure message (AWS's invocation record for a discarded stream batch) ----------
# AWS Lambda developer guide, "Retain discarded records for a DynamoDB event source": SQS and
# SNS destinations get this record only; an S3 destination gets it with the batch as
# ``payload`` (the invocation event, JSON text).

RETRY_ATTEMPTS_EXHAUSTED: Final = "RetryAttemptsExhausted"
RECORD_AGE_EXCEEDED: Final = "RecordAgeExceeded"
ON_FAILURE_CONDITIONS: Final = (RETRY_ATTEMPTS_EXHAUSTED, RECORD_AGE_EXCEEDED)
"""The conditions Lambda writes in ``requestContext.condition`` for stream sources."""

ON_FAILURE_MESSAGE_VERSION: Final = "1.0"

ON_FAILURE_S3_PREFIX: Final = "aws/lambda/"
"""Where Lambda writes a stream mapping's discarded batches in an S3 on-failure destination:
``aws/lambda/<mapping UUID>/<shard id>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<random UUID>``."""


@dataclass(frozen=True)
class StreamBatchInfo:
    """``DDBStreamBatchInfo``: where the discarded batch lies in the stream."""

    shard_id: str
    start_sequence_number: str
    end_sequence_number: str
    stream_arn: str
    approximate_arrival_of_first_record: str | None = None
    approximate_arrival_of_last_record: str | None = None
    batch_size: int | None = None

    SHARD_ID: ClassVar[str] = SHARD_ID_KEY
    START_SEQUENCE_NUMBER: ClassVar[str] = "startSequenceNumber"
    END_SEQUENCE_NUMBER: ClassVar[str] = "endSequenceNumber"
    STREAM_ARN: ClassVar[str] = "streamArn"
    REQUIRED: ClassVar[tuple[str, ...]] = (
        SHARD_ID,
        START_SEQUENCE_NUMBER,
        END_SEQUENCE_NUMBER,
        STREAM_ARN,
    )
    """The fields redrive needs to read the batch back."""

    def to_dict(self) -> dict[str, Any]:
        return {
            self.SHARD_ID: self.shard_id,
            self.START_SEQUENCE_NUMBER: self.start_sequence_number,
            self.END_SEQUENCE_NUMBER: self.end_sequence_number,
            "approximateArrivalOfFirstRecord": self.approximate_arrival_of_first_record,
            "approximateArrivalOfLastRecord": self.approximate_arrival_of_last_record,
            "batchSize": self.batch_size,
            self.STREAM_ARN: self.stream_arn,
        }

    @classmethod
    def from_dict(cls, document: Any) -> StreamBatchInfo:
        what = "DDBStreamBatchInfo"
        document = _object(document, what)
        batch_size = document.get("batchSize")
        return cls(
            shard_id=str(_field(document, cls.SHARD_ID, what)),
            start_sequence_number=str(_field(document, cls.START_SEQUENCE_NUMBER, what)),
            end_sequence_number=str(_field(document, cls.END_SEQUENCE_NUMBER, what)),
            stream_arn=str(_field(document, cls.STREAM_ARN, what)),
            approximate_arrival_of_first_record=document.get("approximateArrivalOfFirstRecord"),
            approximate_arrival_of_last_record=document.get("approximateArrivalOfLastRecord"),
            batch_size=batch_size if isinstance(batch_size, int) else None,
        )


@dataclass(frozen=True)
class OnFailureRequestContext:
    request_id: str
    function_arn: str
    condition: str
    approximate_invoke_count: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "requestId": self.request_id,
            "functionArn": self.function_arn,
            "condition": self.condition,
            "approximateInvokeCount": self.approximate_invoke_count,
        }

    @classmethod
    def from_dict(cls, document: Any) -> OnFailureRequestContext:
        document = _object(document, "requestContext")
        return cls(
            request_id=str(document.get("requestId", "")),
            function_arn=str(document.get("functionArn", "")),
            condition=str(document.get("condition", "")),
            approximate_invoke_count=int(document.get("approximateInvokeCount") or 0),
        )


@dataclass(frozen=True)
class OnFailureResponseContext:
    status_code: int | None
    executed_version: str | None
    function_error: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "statusCode": self.status_code,
            "executedVersion": self.executed_version,
            "functionError": self.function_error,
        }

    @classmethod
    def from_dict(cls, document: Any) -> OnFailureResponseContext:
        document = _object(document, "responseContext")
        return cls(
            status_code=document.get("statusCode"),
            executed_version=document.get("executedVersion"),
            function_error=document.get("functionError"),
        )


@dataclass(frozen=True)
class OnFailureMessage:
    """The invocation record Lambda sends to a stream mapping's on-failure destination."""

    batch: StreamBatchInfo
    request_context: OnFailureRequestContext | None
    response_context: OnFailureResponseContext | None
    timestamp: str | None
    """``2019-11-14T00:38:06.021Z``"""
    version: str = ON_FAILURE_MESSAGE_VERSION
    payload: str | None = None
    """S3 destinations only: the invocation event (the batch itself), JSON text."""

    BATCH_INFO: ClassVar[str] = "DDBStreamBatchInfo"
    """Where a DynamoDB stream's batch is described."""
    KINESIS_BATCH_INFO: ClassVar[str] = "KinesisBatchInfo"
    """Where a Kinesis stream's batch is described (the same fields; AWS Lambda developer
    guide, "Retain discarded batch records for a Kinesis Data Streams event source")."""

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "requestContext": self.request_context.to_dict() if self.request_context else None,
            "responseContext": self.response_context.to_dict() if self.response_context else None,
            "version": self.version,
            "timestamp": self.timestamp,
            self.BATCH_INFO: self.batch.to_dict(),
        }
        if self.payload is not None:
            document["payload"] = self.payload
        return document

    @classmethod
    def from_dict(cls, document: Any, batch_info: str | None = None) -> OnFailureMessage:
        """Raises :class:`ContractError` when ``DDBStreamBatchInfo`` (``batch_info``: another
        key, e.g. :attr:`KINESIS_BATCH_INFO`) or one of its required fields
        (:attr:`StreamBatchInfo.REQUIRED`) is missing."""
        what = "on-failure message"
        document = _object(document, what)
        request = document.get("requestContext")
        response = document.get("responseContext")
        payload = document.get("payload")
        return cls(
            batch=StreamBatchInfo.from_dict(_field(document, batch_info or cls.BATCH_INFO, what)),
            request_context=(
                OnFailureRequestContext.from_dict(request) if isinstance(request, Mapping) else None
            ),
            response_context=(
                OnFailureResponseContext.from_dict(response)
                if isinstance(response, Mapping)
                else None
            ),
            timestamp=document.get("timestamp"),
            version=str(document.get("version", ON_FAILURE_MESSAGE_VERSION)),
            payload=payload if isinstance(payload, str) else None,
        )

    @staticmethod
    def batch_info(document: Mapping[str, Any]) -> Any:
        """The raw ``DDBStreamBatchInfo`` of a message document (None when absent), for readers
        that validate it field by field."""
        return document.get(OnFailureMessage.BATCH_INFO)


# --- The outbox item -----------------------------------------------------------------------------
# Written by cdc_consumer.sinks.outbox.Outbox in the application's transaction; read by the
# fan-out's pipe (StreamFanOut for an outbox), whose filter and input template name these
# attributes.

OUTBOX_KEY_PREFIX: Final = "OUTBOX#"
"""Key prefix that marks outbox items; the fan-out's filter lets only these INSERTs through."""


@dataclass(frozen=True)
class OutboxItem:
    """An outbox item's event attributes (the key and TTL attributes are the table's own)."""

    event_id: str
    event_type: str
    payload: str
    """JSON text."""
    occurred_at: str
    """ISO-8601 UTC."""

    EVENT_ID: ClassVar[str] = "eventId"
    EVENT_TYPE: ClassVar[str] = "eventType"
    PAYLOAD: ClassVar[str] = "payload"
    OCCURRED_AT: ClassVar[str] = "occurredAt"

    def to_dict(self) -> dict[str, str]:
        return {
            self.EVENT_ID: self.event_id,
            self.EVENT_TYPE: self.event_type,
            self.PAYLOAD: self.payload,
            self.OCCURRED_AT: self.occurred_at,
        }

    @classmethod
    def from_dict(cls, document: Any) -> OutboxItem:
        what = "outbox item"
        document = _object(document, what)
        return cls(
            event_id=str(_field(document, cls.EVENT_ID, what)),
            event_type=str(_field(document, cls.EVENT_TYPE, what)),
            payload=str(_field(document, cls.PAYLOAD, what)),
            occurred_at=str(_field(document, cls.OCCURRED_AT, what)),
        )

    @classmethod
    def attributes(cls) -> tuple[str, ...]:
        """The attribute names, in item order."""
        return (cls.EVENT_ID, cls.EVENT_TYPE, cls.PAYLOAD, cls.OCCURRED_AT)


@dataclass(frozen=True)
class OutboxEventDetail:
    """The ``detail`` of the event the outbox's pipe publishes for one outbox item: the item's
    event attributes, plus where the item's INSERT was in the stream."""

    item: OutboxItem
    stream_event_id: str
    sequence_number: str

    STREAM_EVENT_ID: ClassVar[str] = "streamEventId"
    SEQUENCE_NUMBER: ClassVar[str] = "sequenceNumber"

    def to_dict(self) -> dict[str, str]:
        return {
            **self.item.to_dict(),
            self.STREAM_EVENT_ID: self.stream_event_id,
            self.SEQUENCE_NUMBER: self.sequence_number,
        }

    @classmethod
    def from_dict(cls, document: Any) -> OutboxEventDetail:
        what = "outbox event detail"
        document = _object(document, what)
        return cls(
            item=OutboxItem.from_dict(document),
            stream_event_id=str(_field(document, cls.STREAM_EVENT_ID, what)),
            sequence_number=str(_field(document, cls.SEQUENCE_NUMBER, what)),
        )


@dataclass(frozen=True)
class GroupMemberSpec:
    """One member of a consumer group as the constructs declare it (:data:`CONSUMER_GROUP_ENV`):
    its consumer name (its markers' namespace, ``Consumer`` metric dimension and quarantine
    messages' ``consumer``) and the Lambda filter patterns of the records it consumes (none:
    every record the mapping delivers)."""

    name: str
    filters: tuple[Mapping[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "filters": [dict(f) for f in self.filters]}

    @classmethod
    def from_dict(cls, data: Any) -> GroupMemberSpec:
        name = data.get("name") if isinstance(data, Mapping) else None
        filters = data.get("filters", []) if isinstance(data, Mapping) else None
        if not isinstance(name, str) or not name or not isinstance(filters, list):
            raise ContractError(
                f"a consumer group member is {{'name': str, 'filters': [pattern, ...]}}, "
                f"got {data!r}"
            )
        if not all(isinstance(f, Mapping) for f in filters):
            raise ContractError(f"member {name!r}: each filter is a JSON object, got {filters!r}")
        return cls(name, tuple(filters))

    @staticmethod
    def encode(members: Sequence[GroupMemberSpec]) -> str:
        """The :data:`CONSUMER_GROUP_ENV` value for ``members``."""
        return json.dumps([member.to_dict() for member in members], separators=(",", ":"))

    @classmethod
    def decode(cls, value: str) -> tuple[GroupMemberSpec, ...]:
        """The members a :data:`CONSUMER_GROUP_ENV` value declares."""
        try:
            data = json.loads(value)
        except ValueError as error:
            raise ContractError(f"{CONSUMER_GROUP_ENV} is not JSON ({error}): {value!r}") from None
        if not isinstance(data, list) or not data:
            raise ContractError(f"{CONSUMER_GROUP_ENV} is a non-empty JSON list, got {value!r}")
        return tuple(cls.from_dict(item) for item in data)


# --- Backfill (docs/backfill.md) ------------------------------------------------------------------
# ViewBackfill (cdc_constructs) provisions a state machine: a start step, then a Distributed Map
# over the table's parallel-scan segments, each segment one or more invocations of the segment
# function, which scans its segment and hands each item to the consumer function as a snapshot
# change (:class:`SnapshotBatch`). One function serves both steps: BACKFILL_HANDLER, in the
# runtime layer. The local pipeline runs the same handler in-process.

BACKFILL_HANDLER: Final = "cdc_consumer.backfill.handler.handler"
"""The segment function's handler (runtime layer). Its input is a :class:`BackfillRequest` (the
start step: validates, decides the horizon, returns a :class:`BackfillPlan`) or a
:class:`SegmentTask` (one segment invocation: returns a :class:`SegmentResult`)."""

BACKFILL_TABLE_ENV: Final = "CDC_BACKFILL_TABLE_NAME"
"""Segment function: the source table it scans (Scan, DescribeTable)."""

BACKFILL_ITEMS_PER_SECOND_ENV: Final = "CDC_BACKFILL_ITEMS_PER_SECOND"
"""Segment function: the rate limit of ONE segment invocation, items per second (a positive
number; unset: no limit). The construct divides the backfill's rate by the Map's maximum
concurrency."""

BACKFILL_PAGE_SIZE_ENV: Final = "CDC_BACKFILL_PAGE_SIZE"
"""Segment function: Scan's ``Limit`` per page (default 1,000: one consumer invocation per page)."""

BACKFILL_SKEW_SECONDS_ENV: Final = "CDC_BACKFILL_SKEW_SECONDS"
"""Segment function: the clock-skew margin subtracted from the start time to make the default
horizon, whole seconds (default: the runtime's, see cdc_consumer.backfill)."""

BACKFILL_MAX_CONCURRENCY_ENV: Final = "CDC_BACKFILL_MAX_CONCURRENCY"
"""Segment function: how many segments run at once (the Map's ``MaxConcurrency``); the start
step plans at least that many segments while the table has a page of items for each."""

BACKFILL_EXECUTION_TIMEOUT_ENV: Final = "CDC_BACKFILL_EXECUTION_TIMEOUT_SECONDS"
"""Segment function: how long the state machine lets an execution run; the start step refuses
a backfill that the table's item count and the rate say cannot finish in it."""

BACKFILL_RESERVE_SECONDS_ENV: Final = "CDC_BACKFILL_RESERVE_SECONDS"
"""Segment function: no page is started later than this many seconds before the invocation's
deadline; the segment returns ``done: false`` with its resume point instead."""

CONSUMER_PROGRESS_ENV: Final = "CDC_RECORD_PROGRESS"
"""Consumer function: ``"1"`` makes the runtime record how far it has applied the stream
(:class:`ConsumerProgress`), which the start step checks against the horizon. ViewBackfill sets
it on the consumer it backfills; unset (the default) the streaming path writes nothing more."""

BACKFILL_ENVIRONMENT: Final = (
    BACKFILL_TABLE_ENV,
    STREAM_ARN_ENV,
    CONSUMER_FUNCTION_NAME_ENV,
    CONSUMER_NAME_ENV,
    IDEMPOTENCY_TABLE_ENV,
    METRICS_NAMESPACE_ENV,
    BACKFILL_ITEMS_PER_SECOND_ENV,
    BACKFILL_PAGE_SIZE_ENV,
    BACKFILL_SKEW_SECONDS_ENV,
    BACKFILL_RESERVE_SECONDS_ENV,
    BACKFILL_MAX_CONCURRENCY_ENV,
    BACKFILL_EXECUTION_TIMEOUT_ENV,
    CONSUMER_FILTERS_ENV,
)
"""Every variable the segment function may get from ViewBackfill (the first five required:
the table, its stream, the consumer function, the consumer's name (whose progress the start
step checks and the only member of a group its snapshot batches reach), the idempotency table
(progress records)). ``CONSUMER_FILTERS_ENV``: the mapping's filter patterns; a row no pattern
matches is not handed over (the mapping would not deliver its INSERT)."""

MIN_TOTAL_SEGMENTS: Final = 1
MAX_TOTAL_SEGMENTS: Final = 1_000_000
"""Scan's ``TotalSegments`` range (DynamoDB API reference)."""

MAX_PLANNED_SEGMENTS: Final = 10_000
"""The most segments one backfill plans: the plan's ``segments`` list passes through the state
machine's 256 KB payload (10,000 numbers take about 50 KB)."""

SEGMENT_BYTES: Final = 2 * 1024**3
"""A request without ``totalSegments`` gets one segment per this many bytes of the table
(``TableSizeBytes``; DynamoDB's parallel-scan guidance), within 1..MAX_PLANNED_SEGMENTS."""

SNAPSHOT_EVENT_SOURCE: Final = "cdc-constructs:backfill"
"""The ``eventSource`` of a snapshot record (a stream record's is ``aws:dynamodb``)."""

BACKFILL_EVENT_KEY: Final = "cdcBackfill"
"""The key of a consumer event that carries snapshot records (:class:`SnapshotBatch`); an
event source mapping's events never have it, so the runtime tells the two apart once per
batch."""

BACKFILL_ITEMS: Final = Metric("BackfillItems")
BACKFILL_PAGES: Final = Metric("BackfillPages")
BACKFILL_THROTTLES: Final = Metric("BackfillRetries")
"""Consumer invocations of a page the segment retried (throttled or failed records)."""

BACKFILL_METRICS: Final = (BACKFILL_ITEMS, BACKFILL_PAGES, BACKFILL_THROTTLES)
"""Every metric the segment function emits (dimension ``Consumer``), one EMF line per
invocation."""

BACKFILL_REFUSED_ERROR: Final = "BackfillRefusedError"
"""The ``errorType`` of the segment function's refusals (bad input, a horizon the consumer has
not reached, a projection that cannot take snapshot rows): the name of the runtime's exception
class, which Step Functions matches to fail the backfill at once instead of retrying it."""

BACKFILL_PERMANENT_ERRORS: Final = (
    BACKFILL_REFUSED_ERROR,
    "AccessDeniedError",
    "ConfigurationError",
)
"""The segment function's ``errorType`` values no retry can fix, which the state machine never
retries: a refusal; a call its role may not make (``AccessDeniedError``); a function without
its settings (``ConfigurationError``). The names of the runtime's exception classes."""


def _int(document: Mapping[str, Any], key: str, what: str, default: Any = ...) -> Any:
    value = document.get(key, default) if default is not ... else _field(document, key, what)
    if value is None and default is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ContractError(f"{what}: {key} must be an integer, got {value!r}")
    return value


def _text(document: Mapping[str, Any], key: str, what: str) -> str:
    value = _field(document, key, what)
    if not isinstance(value, str) or not value:
        raise ContractError(f"{what}: {key} must be a non-empty string, got {value!r}")
    return value


@dataclass(frozen=True)
class BackfillRequest:
    """The execution input of a backfill (and the start step's input).

    ``backfill_id``: names the run; its progress records and its snapshot records' ids derive
    from it, so starting the same id again resumes it (and is a no-op for what was done).
    ``horizon``: epoch seconds; None lets the start step decide (the start time less the skew
    margin, or the consumer's recorded progress if that is earlier); a backfill id keeps the
    horizon it was first planned with. ``total_segments``: None lets the start step decide
    from the table's size when the backfill starts (:data:`SEGMENT_BYTES`)."""

    backfill_id: str
    total_segments: int | None
    horizon: int | None = None
    execution: str | None = None
    state_machine: str | None = None

    BACKFILL_ID: ClassVar[str] = "backfillId"
    TOTAL_SEGMENTS: ClassVar[str] = "totalSegments"
    HORIZON: ClassVar[str] = "horizon"
    EXECUTION: ClassVar[str] = "execution"
    """The execution's ARN (``$$.Execution.Id``), set by the state machine: the start step
    refuses a second execution of a backfill while another one runs it."""
    STATE_MACHINE: ClassVar[str] = "stateMachine"
    """The state machine's ARN (``$$.StateMachine.Id``): whose running executions are listed."""

    def to_dict(self) -> dict[str, Any]:
        document = {
            self.BACKFILL_ID: self.backfill_id,
            self.TOTAL_SEGMENTS: self.total_segments,
            self.HORIZON: self.horizon,
        }
        if self.execution is not None:
            document[self.EXECUTION] = self.execution
        if self.state_machine is not None:
            document[self.STATE_MACHINE] = self.state_machine
        return document

    @classmethod
    def from_dict(cls, document: Any) -> BackfillRequest:
        what = "backfill request"
        document = _object(document, what)
        return cls(
            backfill_id=backfill_id(_text(document, cls.BACKFILL_ID, what)),
            total_segments=_int(document, cls.TOTAL_SEGMENTS, what, None),
            horizon=_int(document, cls.HORIZON, what, None),
            execution=_optional_text(document, cls.EXECUTION, what),
            state_machine=_optional_text(document, cls.STATE_MACHINE, what),
        )


BACKFILL_ID_MAX_LENGTH: Final = 80
"""A backfill id is at most 80 characters: a Step Functions execution name's limit (the default
id is the execution's name)."""

BACKFILL_ID_REFUSED_CHARACTERS: Final = frozenset(' <>{}[]?*"#%\\^|~`$&,;:/')
"""Characters Step Functions refuses in an execution name (besides whitespace and control
characters), refused in a backfill id too: the id names executions, progress records and
snapshot records' ids."""


def backfill_id(value: str) -> str:
    """``value`` if it is a backfill id Step Functions would accept as an execution name
    (1..80 characters, none of :data:`BACKFILL_ID_REFUSED_CHARACTERS`, no whitespace or control
    characters); else :class:`ContractError` naming the problem."""
    refused = sorted(
        {c for c in value if c in BACKFILL_ID_REFUSED_CHARACTERS or c.isspace() or ord(c) < 32}
        | {c for c in value if 0x7F <= ord(c) <= 0x9F}
    )
    if refused or not 0 < len(value) <= BACKFILL_ID_MAX_LENGTH:
        raise ContractError(
            f"backfill id {value!r} is not one Step Functions accepts as an execution name: "
            f"1..{BACKFILL_ID_MAX_LENGTH} characters, got {len(value)}"
            + (f", with {''.join(refused)!r} refused" if refused else "")
            + "; use letters, digits, '-' and '_'"
        )
    return value


def _optional_text(document: Mapping[str, Any], key: str, what: str) -> str | None:
    value = document.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ContractError(f"{what}: {key} must be a non-empty string or null, got {value!r}")
    return value


@dataclass(frozen=True)
class BackfillPlan:
    """The start step's output: what every segment runs with. ``segments``: 0..total-1, the
    Distributed Map's items (:meth:`tasks` builds their inputs)."""

    backfill_id: str
    total_segments: int
    horizon: int
    consumer: str
    table: str

    SEGMENTS: ClassVar[str] = "segments"

    def to_dict(self) -> dict[str, Any]:
        return {
            BackfillRequest.BACKFILL_ID: self.backfill_id,
            BackfillRequest.TOTAL_SEGMENTS: self.total_segments,
            BackfillRequest.HORIZON: self.horizon,
            "consumer": self.consumer,
            "table": self.table,
            self.SEGMENTS: list(range(self.total_segments)),
        }

    @classmethod
    def from_dict(cls, document: Any) -> BackfillPlan:
        what = "backfill plan"
        document = _object(document, what)
        return cls(
            backfill_id=_text(document, BackfillRequest.BACKFILL_ID, what),
            total_segments=_int(document, BackfillRequest.TOTAL_SEGMENTS, what),
            horizon=_int(document, BackfillRequest.HORIZON, what),
            consumer=_text(document, "consumer", what),
            table=_text(document, "table", what),
        )

    def tasks(self) -> list[SegmentTask]:
        """Each segment's first invocation input."""
        return [
            SegmentTask(self.backfill_id, segment, self.total_segments, self.horizon)
            for segment in range(self.total_segments)
        ]


@dataclass(frozen=True)
class SegmentTask:
    """One segment invocation's input: the Map's item selector builds it from the plan and
    ``$$.Map.Item.Value``; a segment that returned ``done: false`` is invoked again with its
    :class:`SegmentResult` (a valid SegmentTask). ``resume_key``: the Scan's
    ``ExclusiveStartKey`` (DynamoDB JSON); None: the progress record says (or the start)."""

    backfill_id: str
    segment: int
    total_segments: int
    horizon: int
    resume_key: Mapping[str, Any] | None = None

    SEGMENT: ClassVar[str] = "segment"
    RESUME_KEY: ClassVar[str] = "resumeKey"

    def to_dict(self) -> dict[str, Any]:
        return {
            BackfillRequest.BACKFILL_ID: self.backfill_id,
            self.SEGMENT: self.segment,
            BackfillRequest.TOTAL_SEGMENTS: self.total_segments,
            BackfillRequest.HORIZON: self.horizon,
            self.RESUME_KEY: dict(self.resume_key) if self.resume_key is not None else None,
        }

    @classmethod
    def from_dict(cls, document: Any) -> SegmentTask:
        what = "segment task"
        document = _object(document, what)
        resume = document.get(cls.RESUME_KEY)
        if resume is not None and not isinstance(resume, Mapping):
            raise ContractError(f"{what}: {cls.RESUME_KEY} must be an object or null")
        return cls(
            backfill_id=_text(document, BackfillRequest.BACKFILL_ID, what),
            segment=_int(document, cls.SEGMENT, what),
            total_segments=_int(document, BackfillRequest.TOTAL_SEGMENTS, what),
            horizon=_int(document, BackfillRequest.HORIZON, what),
            resume_key=resume,
        )

    @staticmethod
    def is_task(document: Any) -> bool:
        """Whether an input is a segment task (else a :class:`BackfillRequest`)."""
        return isinstance(document, Mapping) and SegmentTask.SEGMENT in document


@dataclass(frozen=True)
class SegmentResult:
    """One segment invocation's output. ``done``: the segment is scanned to its end; else
    invoke again with this document (it is a :class:`SegmentTask`). ``items`` / ``pages`` /
    ``quarantined``: the segment's totals so far (all its invocations)."""

    task: SegmentTask
    done: bool
    items: int
    pages: int
    quarantined: int = 0

    DONE: ClassVar[str] = "done"
    ITEMS: ClassVar[str] = "items"
    PAGES: ClassVar[str] = "pages"
    QUARANTINED: ClassVar[str] = "quarantined"

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.task.to_dict(),
            self.DONE: self.done,
            self.ITEMS: self.items,
            self.PAGES: self.pages,
            self.QUARANTINED: self.quarantined,
        }

    @classmethod
    def from_dict(cls, document: Any) -> SegmentResult:
        what = "segment result"
        document = _object(document, what)
        done = _field(document, cls.DONE, what)
        if not isinstance(done, bool):
            raise ContractError(f"{what}: {cls.DONE} must be true or false, got {done!r}")
        return cls(
            task=SegmentTask.from_dict(document),
            done=done,
            items=_int(document, cls.ITEMS, what),
            pages=_int(document, cls.PAGES, what),
            quarantined=_int(document, cls.QUARANTINED, what, 0),
        )


@dataclass(frozen=True)
class SegmentProgress:
    """A segment's progress record in the idempotency table (id :meth:`record_id`), written
    after each page the consumer applied, so a failed or timed-out invocation resumes after the
    last applied page. ``expiration``: the markers' lifetime (docs/backfill.md)."""

    resume_key: Mapping[str, Any] | None
    done: bool
    items: int
    pages: int
    quarantined: int = 0

    RESUME_KEY: ClassVar[str] = "resumeKey"
    """Attribute: the next page's ExclusiveStartKey, JSON text of DynamoDB JSON (absent: start)."""

    @staticmethod
    def record_id(consumer: str, backfill_id: str, segment: int, total_segments: int) -> str:
        return f"{consumer}#backfill#{backfill_id}#{segment}/{total_segments}"


@dataclass(frozen=True)
class ConsumerProgress:
    """How far a consumer has applied its stream (with :data:`CONSUMER_PROGRESS_ENV`): the
    idempotency-table item :meth:`record_id`, attribute :attr:`APPLIED_UNTIL` the newest
    ``ApproximateCreationDateTime`` (epoch microseconds) among the records it has settled.
    Written at most once per :attr:`INTERVAL_SECONDS` per container, only forward."""

    consumer: str
    applied_until_us: int
    first_applied_us: int | None = None
    """The oldest creation time among the first records it recorded (None: recorded before
    this attribute existed): a horizon before it asks for changes the consumer never read."""

    APPLIED_UNTIL: ClassVar[str] = "appliedUntilUs"
    FIRST_APPLIED: ClassVar[str] = "firstAppliedUs"
    INTERVAL_SECONDS: ClassVar[int] = 5

    @staticmethod
    def record_id(consumer: str) -> str:
        return f"{consumer}#progress"


@dataclass(frozen=True)
class SnapshotBatch:
    """The ``cdcBackfill`` part of a consumer event carrying snapshot records (the event's
    ``Records`` are then snapshot records: ``eventName`` INSERT, no ``userIdentity``,
    ``eventSource`` :data:`SNAPSHOT_EVENT_SOURCE`). ``consumer``: the consumer backfilled; a
    consumer group hands the batch to that member only. ``probe``: no records; the consumer
    answers whether its projections take snapshot rows (raising ``SnapshotRefusedError`` when
    one does not) and writes nothing."""

    backfill_id: str
    horizon: int
    segment: int | None = None
    probe: bool = False
    consumer: str | None = None

    CONSUMER: ClassVar[str] = "consumer"

    def to_dict(self) -> dict[str, Any]:
        return {
            BackfillRequest.BACKFILL_ID: self.backfill_id,
            BackfillRequest.HORIZON: self.horizon,
            SegmentTask.SEGMENT: self.segment,
            "probe": self.probe,
            self.CONSUMER: self.consumer,
        }

    @classmethod
    def from_dict(cls, document: Any) -> SnapshotBatch:
        what = f"{BACKFILL_EVENT_KEY} of a consumer event"
        document = _object(document, what)
        consumer = document.get(cls.CONSUMER)
        return cls(
            backfill_id=_text(document, BackfillRequest.BACKFILL_ID, what),
            horizon=_int(document, BackfillRequest.HORIZON, what),
            segment=_int(document, SegmentTask.SEGMENT, what, None),
            probe=bool(document.get("probe", False)),
            consumer=consumer if isinstance(consumer, str) and consumer else None,
        )

    @staticmethod
    def of(event: Any) -> SnapshotBatch | None:
        """The snapshot part of a consumer event; None for a stream event (one dict lookup)."""
        part = event.get(BACKFILL_EVENT_KEY) if isinstance(event, Mapping) else None
        return None if part is None else SnapshotBatch.from_dict(part)
