"""Redrive on the Kinesis route: replay what a KinesisConsumer's mapping gave up on.

A run collects this consumer's failure records from the on-failure destination
(:mod:`~cdc_consumer.redrive.kinesis_sources`: an S3 bucket's objects hold their batch, an SQS
queue's messages point at it), orders them by shard and first sequence number, and for each:

1. refuses it when it is older than the consumer's markers cover (cause ``older-than-markers``:
   a replay could apply records a second time; :mod:`~cdc_consumer.redrive.marker_age`);
2. takes its records from the object, or reads them back from the Kinesis stream
   (:mod:`~cdc_consumer.redrive.kinesis_reader`); a pointer whose records arrived longer ago
   than the stream keeps them is refused (cause ``older-than-stream-retention``) and its
   records reported lost, without asking the stream;
3. replays the records the mapping's filters deliver through the consumer, in order, in bounded
   invocations (:class:`~cdc_consumer.redrive.replayer.Replayer`);
4. deletes it only after every record succeeded.

Nothing refused, lost, failed or held is deleted, and the run is not ok. After a batch of a
shard stays, the shard's later batches are held (cause ``earlier-batch-of-shard``), so the
consumer never sees a shard's records out of order; a batch is held while the quarantine queue
holds an earlier change of one of its items (``earlier-change-in-quarantine``).

With ``source`` quarantine, a run drains the consumer's quarantine queue as the stream route
does (:mod:`~cdc_consumer.redrive.kinesis_quarantine`): each message a Kinesis record, replayed
unfiltered, refused when older than the markers, held behind an earlier change of its item in
the queue or in the failed-batch bucket, deleted after success; what the consumer quarantines
again is reported. The steps are the one driver's
(:class:`~cdc_consumer.redrive.driver.Driver`, as on the stream route) over
:class:`KinesisBatches`. The run has the same entry points as
:class:`~cdc_consumer.redrive.replay.Redrive` (``run_bucket``, ``run``), so the redrive function
and the command line drive either route.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.exceptions import (
    ForeignMessageError,
    MalformedMessageError,
    RecordsLostError,
)
from cdc_consumer.filter_patterns import FilterCriteria
from cdc_consumer.redrive import parts
from cdc_consumer.redrive.access import MISSING_BUCKET_CODES, MISSING_QUEUE_CODES, check_access
from cdc_consumer.redrive.defaults import (
    DEFAULT_INVOKE_MAX_BYTES,
    DEFAULT_INVOKE_MAX_RECORDS,
    DEFAULT_LEASE_POLL_SECONDS,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_OBJECTS,
    DEFAULT_RECEIVE_WAIT_SECONDS,
    DEFAULT_VISIBILITY_TIMEOUT_SECONDS,
    DEFAULT_WINDOW,
)
from cdc_consumer.redrive.driver import Driver
from cdc_consumer.redrive.failure_source import Batch, Entry, Hold
from cdc_consumer.redrive.invokers import Invoker
from cdc_consumer.redrive.kinesis_failures import KinesisFailure, check_kinesis_stream_arn
from cdc_consumer.redrive.kinesis_quarantine import (
    check_quarantine,
    open_quarantine,
    quarantine_changes,
)
from cdc_consumer.redrive.kinesis_reader import KinesisRangeReader
from cdc_consumer.redrive.kinesis_sources import KinesisBucket, KinesisQueue
from cdc_consumer.redrive.lease import LeasedInvoker, RedriveLease, stop_when_lost, under_lease
from cdc_consumer.redrive.marker_age import MarkerAge, failure_time
from cdc_consumer.redrive.messages import Source
from cdc_consumer.redrive.pending_changes import PendingChanges, change_of, item_key
from cdc_consumer.redrive.report import FailedMessage, LostRange, RedriveReport
from cdc_consumer.redrive.sources import bucket_of
from cdc_consumer.redrive_shapes import ON_FAILURE_S3_PREFIX, RedriveCause

__all__ = ["KinesisRedrive"]

#: ``progress(done, report)``: told after each batch, with the count deleted so far.
Progress = Callable[[int, RedriveReport], None]


class KinesisStore(Protocol):
    """What a run needs of where the failure records wait (:mod:`kinesis_sources`)."""

    stalled: dict[str, str]

    @property
    def location(self) -> str: ...
    def collect(self, limit: int, report: RedriveReport) -> list[KinesisFailure]: ...
    def load(self, failure: KinesisFailure) -> KinesisFailure: ...
    def delete(self, failure: KinesisFailure) -> None: ...
    def release(self) -> None: ...


@dataclass
class KinesisRedrive:
    """Replays a Kinesis consumer's failed batches (see the module docstring).

    Parameters: ``invoker`` delivers events to the consumer; ``stream_arn`` the Kinesis stream
    it reads (records of another stream are kept); ``function_name`` and ``mapping_uuid``, when
    known, keep other functions' and mappings' records; ``filters`` the mapping's filter
    patterns (records they exclude are not replayed); ``marker_ttl_seconds`` the consumer's
    marker lifetime (None: no age check against it); ``consumer_name`` and ``member_names``
    whose quarantine messages are this consumer's (a quarantine run needs the name);
    ``quarantine_queue_url`` and ``on_failure_bucket``/``on_failure_prefix``, when known, the
    other source each run looks at for an earlier change of an item
    (:mod:`~cdc_consumer.redrive.kinesis_quarantine`); clients default to plain boto3 clients
    (``AWS_ENDPOINT_URL`` works locally); ``consumer_name`` and ``lease_table`` (the consumer's
    idempotency table) name the consumer's redrive lease, taken before each run so two runs
    never split a queue's batches of one shard between them
    (:mod:`~cdc_consumer.redrive.lease`; no table: no lease, noted); the rest as
    :class:`Redrive`'s.
    """

    invoker: Invoker
    stream_arn: str
    kinesis_client: Any = None
    sqs_client: Any = None
    s3_client: Any = None
    function_name: str | None = None
    mapping_uuid: str | None = None
    filters: Sequence[Mapping[str, Any]] = ()
    marker_ttl_seconds: int | None = None
    consumer_name: str | None = None
    member_names: Sequence[str] = ()
    quarantine_queue_url: str | None = None
    on_failure_bucket: str | None = None
    on_failure_prefix: str = ON_FAILURE_S3_PREFIX
    set_aside_since_ms: int | None = None
    clock: Callable[[], float] = time.time
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    invoke_max_records: int = DEFAULT_INVOKE_MAX_RECORDS
    invoke_max_bytes: int = DEFAULT_INVOKE_MAX_BYTES
    receive_wait_seconds: int = DEFAULT_RECEIVE_WAIT_SECONDS
    visibility_timeout_seconds: int = DEFAULT_VISIBILITY_TIMEOUT_SECONDS
    window: int = DEFAULT_WINDOW
    lease_table: str | None = None
    dynamodb_client: Any = None
    lease_wait_seconds: float = 0.0
    lease_poll_seconds: float = DEFAULT_LEASE_POLL_SECONDS
    _criteria: FilterCriteria = field(init=False, repr=False)

    def __post_init__(self) -> None:
        check_kinesis_stream_arn(self.stream_arn)
        self.kinesis_client = self.kinesis_client or boto3.client("kinesis")
        self._criteria = FilterCriteria(self.filters, where="filters")
        if self.marker_ttl_seconds is not None:
            MarkerAge(self.marker_ttl_seconds)  # checks it

    def run_bucket(
        self,
        bucket: str,
        prefix: str = ON_FAILURE_S3_PREFIX,
        *,
        dry_run: bool = False,
        max_objects: int | None = None,
        should_stop: Callable[[], bool] | None = None,
        progress: Progress | None = None,
    ) -> RedriveReport:
        """Redrive the on-failure objects under ``s3://bucket/prefix`` (at most
        ``max_objects``, default :data:`DEFAULT_MAX_OBJECTS`); ``progress(done, report)`` is
        told after each one deleted."""
        self.s3_client = self.s3_client or boto3.client("s3")
        source = KinesisBucket(
            self.s3_client, bucket, prefix, self.stream_arn, self.function_name, self.mapping_uuid
        )
        limit = DEFAULT_MAX_OBJECTS if max_objects is None else max_objects
        return self._run(source, limit, dry_run, should_stop, progress)

    def run(
        self,
        queue_url: str,
        source: Source | str = Source.ON_FAILURE,
        *,
        dry_run: bool = False,
        max_messages: int | None = None,
        should_stop: Callable[[], bool] | None = None,
        progress: Progress | None = None,
    ) -> RedriveReport:
        """Redrive the on-failure messages of ``queue_url`` (at most ``max_messages``, default
        :data:`DEFAULT_MAX_OBJECTS`), the objects of ``s3://bucket/prefix`` (as
        :meth:`Redrive.run`: one entry for the redrive function), or with ``source``
        quarantine the quarantine queue's records
        (:mod:`~cdc_consumer.redrive.kinesis_quarantine`)."""
        self.sqs_client = self.sqs_client or boto3.client("sqs")
        if Source(source) is Source.QUARANTINE:
            return self._run_quarantine(queue_url, dry_run, max_messages, should_stop, progress)
        in_bucket = bucket_of(queue_url)
        if in_bucket is not None:
            return self.run_bucket(
                *in_bucket,
                dry_run=dry_run,
                max_objects=max_messages,
                should_stop=should_stop,
                progress=progress,
            )
        queue = KinesisQueue(
            self.sqs_client,
            queue_url,
            self.stream_arn,
            self.function_name,
            self.visibility_timeout_seconds,
            self.receive_wait_seconds,
        )
        limit = DEFAULT_MAX_OBJECTS if max_messages is None else max_messages
        return self._run(queue, limit, dry_run, should_stop, progress)

    def check_bucket(self, bucket: str, prefix: str = ON_FAILURE_S3_PREFIX) -> None:
        """Raise :class:`RedriveSetupError` for a bucket that does not exist or these
        credentials may not list (nothing is read or deleted)."""
        self.s3_client = self.s3_client or boto3.client("s3")
        s3 = self.s3_client
        check_access(
            lambda: s3.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1),
            f"list bucket {bucket}",
            MISSING_BUCKET_CODES,
            "check --bucket (no such bucket in this account)",
            "check --bucket and that these credentials may list and read it",
        )

    def check(self, queue_url: str, source: Source | str = Source.ON_FAILURE) -> None:
        """Raise :class:`RedriveSetupError` for a queue that does not exist or cannot be read
        (a bucket, for an ``s3://bucket/prefix`` location: :meth:`check_bucket`), a bucket as
        the quarantine, or a quarantine run without the consumer's name."""
        self.sqs_client = self.sqs_client or boto3.client("sqs")
        in_bucket = bucket_of(queue_url)
        if Source(source) is Source.QUARANTINE:
            check_quarantine(self, queue_url)
            return
        if in_bucket is not None:
            self.check_bucket(*in_bucket)
            return
        sqs = self.sqs_client
        check_access(
            lambda: sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"]),
            f"read queue {queue_url}",
            MISSING_QUEUE_CODES,
            "check --queue-url (the queue does not exist in this account and region)",
            "check --queue-url and that these credentials may read it",
        )

    def _run(
        self,
        source: KinesisStore,
        limit: int,
        dry_run: bool,
        should_stop: Callable[[], bool] | None,
        progress: Progress | None,
    ) -> RedriveReport:
        report = RedriveReport(Source.ON_FAILURE.value, source.location, dry_run=dry_run)

        def drive(lease: RedriveLease | None) -> None:
            replayer = parts.replayer(self)
            if lease is not None:  # renewed before each invocation: nothing after it is lost
                replayer.invoker = LeasedInvoker(self.invoker, lease)
            started_ms = int(time.time() * 1000)
            age = parts.age(self)
            reader = KinesisRangeReader(self.kinesis_client, self.stream_arn)
            pending = quarantine_changes(self, report)
            batches = KinesisBatches(source, report, reader, age, self.clock, pending)
            stop = stop_when_lost(lease, should_stop)
            Driver(batches, replayer, report, age, dry_run, stop, progress).run(limit)
            if self.quarantine_queue_url and replayer.replayed:
                watch = parts.watch(self, replayer.replayed)
                watch.scan(self.quarantine_queue_url, started_ms, report)

        return under_lease(self, report, drive)

    def _run_quarantine(
        self,
        queue_url: str,
        dry_run: bool,
        max_messages: int | None,
        should_stop: Callable[[], bool] | None,
        progress: Progress | None,
    ) -> RedriveReport:
        """The quarantine queue's records, as the stream route replays them (under the lease)."""
        self.check(queue_url, Source.QUARANTINE)
        report = RedriveReport(Source.QUARANTINE.value, queue_url, dry_run=dry_run)

        def drive(lease: RedriveLease | None) -> None:
            replayer = parts.replayer(self)
            if lease is not None:
                replayer.invoker = LeasedInvoker(self.invoker, lease)
            run = parts.Run(self, replayer, report, int(time.time() * 1000))
            source = open_quarantine(run, queue_url)
            stop = stop_when_lost(lease, should_stop)
            Driver(source, replayer, report, parts.age(self), dry_run, stop, progress).run(
                max_messages
            )

        return under_lease(self, report, drive)


@dataclass
class KinesisBatches:
    """The failure records of a :class:`KinesisStore` as a failure source for the one driver
    (:class:`~cdc_consumer.redrive.driver.Driver`): in stream order, a shard's later batches
    held behind one that stays, each refused before it is read when older than the markers
    cover, its records taken from the object or read back from the stream while its retention
    holds them."""

    store: KinesisStore
    report: RedriveReport
    reader: KinesisRangeReader
    age: MarkerAge | None
    clock: Callable[[], float]
    #: The quarantine's pending changes (None: not known, nothing is held for it).
    quarantine: PendingChanges | None = None
    _failures: list[KinesisFailure] = field(default_factory=list, init=False)
    _index: int = field(default=0, init=False)
    _retention: int | None = field(default=None, init=False)

    def entries(self, limit: int | None) -> Iterator[Entry]:
        collected = self.store.collect(DEFAULT_MAX_OBJECTS if limit is None else limit, self.report)
        self._failures = sorted(collected, key=lambda f: f.position)
        for index, failure in enumerate(self._failures):
            self._index = index
            yield Entry(failure.where, failure)

    def hold(self, entry: Entry) -> Hold | None:
        shard, stalled = entry.handle.shard_id, self.store.stalled
        if shard not in stalled:
            return None
        return RedriveCause.EARLIER_BATCH_OF_SHARD, (
            f"an earlier batch of shard {shard} ({stalled[shard]}) was not replayed, and this"
            " one must not overtake it"
        )

    def read(self, entry: Entry) -> Batch | None:
        """The batch's records, or None when it stays (reported)."""
        failure: KinesisFailure = entry.handle
        too_old = self.age.refusal((), failure.earliest()) if self.age else None
        if too_old is not None:
            self._stays(failure, RedriveCause.OLDER_THAN_MARKERS, too_old)
            return None
        try:
            loaded = self.store.load(failure)
        except (ForeignMessageError, MalformedMessageError) as error:
            self._stays(failure, RedriveCause.UNREADABLE, f"{error} (read again to replay it)")
            return None
        records = list(loaded.records) if loaded.records is not None else self._read_back(loaded)
        if records is None:
            return None
        return Batch(records, failure.shard_id, failure.start, failure.end, _earliest(loaded))

    def _read_back(self, failure: KinesisFailure) -> list[dict[str, Any]] | None:
        """A pointer's records, read from the stream while its retention holds them."""
        expired = self._expired(failure)
        try:
            if expired is not None:
                raise RecordsLostError(failure.shard_id, failure.start, failure.end, expired)
            return self.reader.read(failure.shard_id, failure.start, failure.end)
        except RecordsLostError as error:
            self.report.lost.append(
                LostRange(
                    failure.where,
                    failure.shard_id,
                    failure.start,
                    failure.end,
                    failure.batch_size,
                    error.reason,
                )
            )
            if expired is not None:
                self._stays(failure, RedriveCause.OLDER_THAN_STREAM_RETENTION, str(error))
            return None

    def _expired(self, failure: KinesisFailure) -> str | None:
        """Why the stream no longer holds the batch's records (they arrived longer ago than its
        retention), or None."""
        earliest = failure.earliest()
        if earliest is None:
            return None
        if self._retention is None:
            self._retention = self.reader.retention_seconds()
        age = self.clock() - earliest
        if age < self._retention:
            return None
        return (
            f"its records arrived {age / 3600:.1f} h ago and the stream keeps a record"
            f" {self._retention / 3600:g} h: they are gone; not replayed, not deleted"
            " (reconcile them by hand)"
        )

    def hold_records(self, entry: Entry, batch: Batch) -> Hold | None:
        """The quarantine holds an earlier change of one of its items (or could not be read)."""
        pending = self.quarantine
        if pending is None:
            return None
        for record in batch.records:
            reason = pending.before(item_key(record), change_of(record), unknown_holds=False)
            if reason is not None:
                return RedriveCause.EARLIER_CHANGE_IN_QUARANTINE, reason
        if pending.unknown:
            return RedriveCause.EARLIER_CHANGE_IN_QUARANTINE, (
                f"the quarantine queue could not be looked at ({pending.unknown[0]}), so it may"
                " hold an earlier change of one of this batch's items"
            )
        return None

    def delete(self, entry: Entry) -> str | None:
        try:
            self.store.delete(entry.handle)
        except (ClientError, BotoCoreError) as error:
            return (
                f"all its records were replayed, but deleting it failed ({error}); a second run"
                " replays it again as no-ops (the consumer's markers) and deletes it"
            )
        return None

    def keep(self, entry: Entry, batch: Batch | None, *, blocking: bool = True) -> None:
        if blocking:
            self.store.stalled.setdefault(entry.handle.shard_id, entry.id)

    def interrupt(self, entry: Entry) -> None:
        self.report.messages_deferred += len(self._failures) - self._index

    def close(self) -> None:
        self.store.release()

    def _stays(self, failure: KinesisFailure, cause: RedriveCause, reason: str) -> None:
        refusals = (RedriveCause.OLDER_THAN_MARKERS, RedriveCause.OLDER_THAN_STREAM_RETENTION)
        into = self.report.refused if cause in refusals else self.report.failed
        into.append(FailedMessage(failure.where, reason, cause))


def _earliest(failure: KinesisFailure) -> str | None:
    """The failure record's earliest stated time, as written (the driver's age check reads it
    with the records')."""
    stated = [t for t in (failure.first_arrival, failure.timestamp) if failure_time(t) is not None]
    return min(stated, key=lambda t: failure_time(t) or 0.0, default=None)
