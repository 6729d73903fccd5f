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
consumer never sees a shard's records out of order. The run has the same entry points as
:class:`~cdc_consumer.redrive.replay.Redrive` (``run_bucket``, ``run``), so the redrive function
and the command line drive either route.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.contract import ON_FAILURE_S3_PREFIX, RedriveCause
from cdc_consumer.exceptions import (
    ForeignMessageError,
    MalformedMessageError,
    RecordsLostError,
    RedriveSetupError,
)
from cdc_consumer.filter_patterns import FilterCriteria
from cdc_consumer.redrive.access import MISSING_BUCKET_CODES, MISSING_QUEUE_CODES, check_access
from cdc_consumer.redrive.defaults import (
    DEFAULT_INVOKE_MAX_BYTES,
    DEFAULT_INVOKE_MAX_RECORDS,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_OBJECTS,
    DEFAULT_RECEIVE_WAIT_SECONDS,
    DEFAULT_VISIBILITY_TIMEOUT_SECONDS,
)
from cdc_consumer.redrive.invokers import Invoker
from cdc_consumer.redrive.kinesis_failures import KinesisFailure, check_kinesis_stream_arn
from cdc_consumer.redrive.kinesis_reader import KinesisRangeReader
from cdc_consumer.redrive.kinesis_sources import KinesisBucket, KinesisQueue
from cdc_consumer.redrive.marker_age import MarkerAge
from cdc_consumer.redrive.messages import Source
from cdc_consumer.redrive.replayer import Replayer
from cdc_consumer.redrive.report import FailedMessage, LostRange, PlannedMessage, RedriveReport
from cdc_consumer.redrive.sources import bucket_of

__all__ = ["KinesisRedrive"]

#: ``progress(done, report)``: told after each batch, with the count deleted so far.
Progress = Callable[[int, RedriveReport], None]


class FailureSource(Protocol):
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
    marker lifetime (None: no age check against it); clients default to plain boto3 clients
    (``AWS_ENDPOINT_URL`` works locally); the rest as :class:`Redrive`'s.
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
    clock: Callable[[], float] = time.time
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    invoke_max_records: int = DEFAULT_INVOKE_MAX_RECORDS
    invoke_max_bytes: int = DEFAULT_INVOKE_MAX_BYTES
    receive_wait_seconds: int = DEFAULT_RECEIVE_WAIT_SECONDS
    visibility_timeout_seconds: int = DEFAULT_VISIBILITY_TIMEOUT_SECONDS
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
        :data:`DEFAULT_MAX_OBJECTS`), or the objects of ``s3://bucket/prefix`` (as
        :meth:`Redrive.run`: one entry for the redrive function). Raises
        :class:`RedriveSetupError` for the quarantine queue: the Kinesis route's quarantined
        records are not replayed by this run."""
        in_bucket = bucket_of(queue_url)
        if in_bucket is not None:
            return self.run_bucket(
                *in_bucket,
                dry_run=dry_run,
                max_objects=max_messages,
                should_stop=should_stop,
                progress=progress,
            )
        _on_failure_only(source)
        self.sqs_client = self.sqs_client or boto3.client("sqs")
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
        """Raise :class:`RedriveSetupError` for the quarantine queue (not redriven on this
        route), or a queue that does not exist or cannot be read (a bucket, for an
        ``s3://bucket/prefix`` location: :meth:`check_bucket`)."""
        in_bucket = bucket_of(queue_url)
        if in_bucket is not None:
            _on_failure_only(source)
            self.check_bucket(*in_bucket)
            return
        _on_failure_only(source)
        self.sqs_client = self.sqs_client or boto3.client("sqs")
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
        source: FailureSource,
        limit: int,
        dry_run: bool,
        should_stop: Callable[[], bool] | None,
        progress: Progress | None,
    ) -> RedriveReport:
        report = RedriveReport(Source.ON_FAILURE.value, source.location, dry_run=dry_run)
        replay = _KinesisReplay(self, source, report, dry_run)
        try:
            failures = sorted(source.collect(limit, report), key=lambda f: f.position)
            for index, failure in enumerate(failures):
                if should_stop is not None and should_stop():
                    report.messages_deferred += len(failures) - index
                    break
                replay.one(failure)
                if progress is not None:
                    progress(report.messages_deleted, report)
        finally:
            source.release()
        return report


def _on_failure_only(source: Source | str) -> None:
    """The Kinesis route redrives its on-failure destination only."""
    if Source(source) is not Source.ON_FAILURE:
        raise RedriveSetupError(
            f"source {Source(source).value!r} on the Kinesis route: only the on-failure"
            " destination is redriven here; replay quarantined Kinesis records by hand"
            " (docs/operations.md, 'Redrive')"
        )


@dataclass
class _KinesisReplay:
    """One run's replay of failure records, in order (see the module docstring)."""

    redrive: KinesisRedrive
    source: FailureSource
    report: RedriveReport
    dry_run: bool
    _replayer: Replayer = field(init=False)
    _reader: KinesisRangeReader = field(init=False)
    _age: MarkerAge | None = field(init=False)
    _retention: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        redrive = self.redrive
        self._replayer = Replayer(
            invoker=redrive.invoker,
            criteria=redrive._criteria,
            max_attempts=redrive.max_attempts,
            max_records=redrive.invoke_max_records,
            max_bytes=redrive.invoke_max_bytes,
        )
        self._reader = KinesisRangeReader(redrive.kinesis_client, redrive.stream_arn)
        ttl = redrive.marker_ttl_seconds
        self._age = MarkerAge(ttl, redrive.clock) if ttl is not None else None

    def one(self, failure: KinesisFailure) -> None:
        """Replay ``failure``, or report why it stays; a batch that stays holds its shard."""
        stalled = self.source.stalled
        if failure.shard_id in stalled:
            self.report.held.append(
                FailedMessage(
                    failure.where,
                    f"an earlier batch of shard {failure.shard_id} ({stalled[failure.shard_id]})"
                    " was not replayed, and this one must not overtake it",
                    RedriveCause.EARLIER_BATCH_OF_SHARD,
                )
            )
        elif not self._replayed(failure):
            stalled.setdefault(failure.shard_id, failure.where)

    def _replayed(self, failure: KinesisFailure) -> bool:
        """Whether the batch was replayed and deleted (or, dry, planned)."""
        records = self._records(failure)
        if records is None:
            return False
        delivered = self._replayer.delivered(records, self.report)
        if self.dry_run:
            self.report.planned.append(
                PlannedMessage(
                    failure.where, failure.shard_id, failure.start, failure.end, len(delivered)
                )
            )
            return True
        why = self._replayer.replay(delivered, self.report)
        if why is None:
            why = self._delete(failure)
        if why is not None:
            self._stays(failure, RedriveCause.REPLAY_FAILED, why)
            return False
        self.report.messages_deleted += 1
        return True

    def _records(self, failure: KinesisFailure) -> list[dict[str, Any]] | None:
        """The batch's records, or None when it stays (reported)."""
        too_old = self._age.refusal((), failure.earliest()) if self._age else None
        if too_old is not None:
            self._stays(failure, RedriveCause.OLDER_THAN_MARKERS, too_old)
            return None
        try:
            loaded = self.source.load(failure)
        except (ForeignMessageError, MalformedMessageError) as error:
            self._stays(failure, RedriveCause.UNREADABLE, f"{error} (read again to replay it)")
            return None
        if loaded.records is not None:
            records = list(loaded.records)
        else:
            read = self._read_back(loaded)
            if read is None:
                return None
            records = read
        too_old = self._age.refusal(records, loaded.earliest()) if self._age else None
        if too_old is not None:
            self._stays(failure, RedriveCause.OLDER_THAN_MARKERS, too_old)
            return None
        return records

    def _read_back(self, failure: KinesisFailure) -> list[dict[str, Any]] | None:
        """A pointer's records, read from the stream while its retention holds them."""
        expired = self._expired(failure)
        try:
            if expired is not None:
                raise RecordsLostError(failure.shard_id, failure.start, failure.end, expired)
            return self._reader.read(failure.shard_id, failure.start, failure.end)
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
            self._retention = self._reader.retention_seconds()
        age = self.redrive.clock() - earliest
        if age < self._retention:
            return None
        return (
            f"its records arrived {age / 3600:.1f} h ago and the stream keeps a record"
            f" {self._retention / 3600:g} h: they are gone; not replayed, not deleted"
            " (reconcile them by hand)"
        )

    def _delete(self, failure: KinesisFailure) -> str | None:
        try:
            self.source.delete(failure)
        except (ClientError, BotoCoreError) as error:
            return (
                f"all its records were replayed, but deleting it failed ({error}); a second run"
                " replays it again as no-ops (the consumer's markers) and deletes it"
            )
        return None

    def _stays(self, failure: KinesisFailure, cause: RedriveCause, reason: str) -> None:
        refusals = (RedriveCause.OLDER_THAN_MARKERS, RedriveCause.OLDER_THAN_STREAM_RETENTION)
        into = self.report.refused if cause in refusals else self.report.failed
        into.append(FailedMessage(failure.where, reason, cause))
