"""The replay: drain one queue (or bucket) into one consumer, in stream order, deleting only after
success.

:class:`Redrive` is the facade; the work is done by
:class:`~cdc_consumer.redrive.queue_drain.QueueDrain` (a queue),
:class:`~cdc_consumer.redrive.bucket_replay.BucketReplay` (an S3 destination),
:class:`~cdc_consumer.redrive.queue_messages.QueueMessageReader` (a message's records),
:class:`~cdc_consumer.redrive.replayer.Replayer` (invoking the consumer),
:class:`~cdc_consumer.redrive.requarantine.RequarantineWatch` (records quarantined again) and
:mod:`~cdc_consumer.redrive.access` (the checks before a run).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import boto3
from botocore.config import Config

from cdc_consumer.contract import ON_FAILURE_S3_PREFIX
from cdc_consumer.exceptions import RedriveSetupError
from cdc_consumer.filter_patterns import FilterCriteria
from cdc_consumer.redrive.access import (
    MISSING_BUCKET_CODES,
    MISSING_QUEUE_CODES,
    check_access,
    check_stream_arn,
)
from cdc_consumer.redrive.bucket_plan import ObjectReader
from cdc_consumer.redrive.bucket_replay import BucketReplay
from cdc_consumer.redrive.cross_source import CrossSource
from cdc_consumer.redrive.defaults import (
    DEFAULT_INVOKE_MAX_BYTES,
    DEFAULT_INVOKE_MAX_RECORDS,
    DEFAULT_LEASE_POLL_SECONDS,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_EMPTY_PAGES,
    DEFAULT_MAX_OBJECTS,
    DEFAULT_RECEIVE_WAIT_SECONDS,
    DEFAULT_VISIBILITY_TIMEOUT_SECONDS,
    DEFAULT_WINDOW,
)
from cdc_consumer.redrive.invokers import Invoker
from cdc_consumer.redrive.lease import LeasedInvoker, RedriveLease
from cdc_consumer.redrive.marker_age import MarkerAge
from cdc_consumer.redrive.messages import Source
from cdc_consumer.redrive.queue_drain import QueueDrain
from cdc_consumer.redrive.queue_messages import QueueMessageReader
from cdc_consumer.redrive.replayer import Replayer
from cdc_consumer.redrive.report import RedriveReport
from cdc_consumer.redrive.requarantine import RequarantineWatch

__all__ = ["Redrive", "check_stream_arn"]


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
            (``CDC_CONSUMER_GROUP``): quarantine messages naming any of them are replayed too
            (members that applied a record already skip it as a duplicate).
        function_name: the consumer function's name or ARN, when known: on-failure records that
            another function's mapping wrote are kept, never replayed.
        s3_client: boto3 S3 client for an S3 on-failure destination (default: plain
            ``boto3.client("s3")``, made when first needed).
        mapping_uuid: the consumer's event source mapping UUID, when known: S3 objects another
            mapping wrote (their key names its UUID) are kept, never replayed.
        quarantine_queue_url: the consumer's quarantine queue, when known: an on-failure run
            looks there for records it replayed that were quarantined again, and a bucket run
            holds an object while it holds an earlier change of one of the object's items.
        on_failure_bucket, on_failure_prefix: the S3 on-failure destination, when known: a
            quarantine run holds a record while it holds an earlier change of its item.
        set_aside_since_ms: quarantine messages sent since then (epoch ms) were quarantined
            again by this redrive: poison by the consumer's judgement, they hold nothing.
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
        marker_ttl_seconds, clock: the consumer's marker lifetime (``CDC_MARKER_TTL_SECONDS``)
            and the time: older failures are refused (:mod:`~cdc_consumer.redrive.marker_age`).
            Default None: no age check.
        lease_table: the consumer's idempotency table (``IDEMPOTENCY_TABLE_NAME``), where each
            run takes the consumer's lease first, so two redrives of one consumer never overlap
            (:mod:`~cdc_consumer.redrive.lease`). Default None: no lease (the report notes it).
        dynamodb_client: boto3 DynamoDB client for the lease (default: plain
            ``boto3.client("dynamodb")``, made when first needed).
        lease_wait_seconds, lease_poll_seconds: how long a run waits for a lease another
            redrive holds, trying again every ``lease_poll_seconds`` (default 0: it does not
            wait, its report says who holds it, ``busy``, and it touches nothing).
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
    on_failure_bucket: str | None = None
    on_failure_prefix: str = ON_FAILURE_S3_PREFIX
    set_aside_since_ms: int | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    invoke_max_records: int = DEFAULT_INVOKE_MAX_RECORDS
    invoke_max_bytes: int = DEFAULT_INVOKE_MAX_BYTES
    receive_wait_seconds: int = DEFAULT_RECEIVE_WAIT_SECONDS
    visibility_timeout_seconds: int = DEFAULT_VISIBILITY_TIMEOUT_SECONDS
    max_empty_pages: int = DEFAULT_MAX_EMPTY_PAGES
    window: int = DEFAULT_WINDOW
    filters: Sequence[Mapping[str, Any]] = ()
    marker_ttl_seconds: int | None = None
    clock: Callable[[], float] = time.time
    lease_table: str | None = None
    dynamodb_client: Any = None
    lease_wait_seconds: float = 0.0
    lease_poll_seconds: float = DEFAULT_LEASE_POLL_SECONDS
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
        _age(self)  # checks marker_ttl_seconds
        self._criteria = FilterCriteria(self.filters, where="filters")

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
        report = RedriveReport(source=source.value, queue_url=queue_url, dry_run=dry_run)

        run = _QueueRun(queue_url, source, dry_run, max_messages, should_stop, progress)
        return _leased(self, report, lambda lease: _drain_queue(self, report, lease, run))

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
        every record of it succeeded (deleted, not moved: the versioned bucket keeps it as a
        noncurrent version, and the redrive needs no write permission).

        No change of an item is applied ahead of an earlier pending one: after an object of a
        shard fails, cannot be read or is malformed, the shard's later objects are held, and a
        child shard's objects wait for its parent's (the lineage from ``DescribeStream``;
        conservative when it is unknown, and the report says so). Held objects are reported
        with the reason and make the run not ok. Objects are read one at a time. Objects not in
        AWS's shape, another consumer's or stream's, or too old, are kept and reported.
        """
        self.check_bucket(bucket, prefix)
        report = RedriveReport(
            source=Source.ON_FAILURE.value, queue_url=f"s3://{bucket}/{prefix}", dry_run=dry_run
        )

        run = _BucketRun(bucket, prefix, dry_run, max_objects, should_stop, progress)
        return _leased(self, report, lambda lease: _replay_bucket(self, report, lease, run))


# The run's parts, made from a Redrive's settings for each run --------------------------------


def _consumers(redrive: Redrive) -> tuple[str, ...]:
    """The consumer names whose quarantine messages are this consumer's."""
    return (str(redrive.consumer_name), *redrive.member_names)


def _age(redrive: Redrive) -> MarkerAge | None:
    if redrive.marker_ttl_seconds is None:
        return None
    return MarkerAge(redrive.marker_ttl_seconds, redrive.clock)


def _replayer(redrive: Redrive, lease: RedriveLease | None) -> Replayer:
    return Replayer(
        invoker=redrive.invoker if lease is None else LeasedInvoker(redrive.invoker, lease),
        criteria=redrive._criteria,
        max_attempts=redrive.max_attempts,
        max_records=redrive.invoke_max_records,
        max_bytes=redrive.invoke_max_bytes,
    )


@dataclass(frozen=True)
class _QueueRun:
    """What :meth:`Redrive.run` was asked."""

    queue_url: str
    source: Source
    dry_run: bool
    max_messages: int | None
    should_stop: Callable[[], bool] | None
    progress: Callable[[int, RedriveReport], None] | None


@dataclass(frozen=True)
class _BucketRun:
    """What :meth:`Redrive.run_bucket` was asked."""

    bucket: str
    prefix: str
    dry_run: bool
    max_objects: int | None
    should_stop: Callable[[], bool] | None
    progress: Callable[[int, RedriveReport], None] | None


def _drain_queue(
    redrive: Redrive, report: RedriveReport, lease: RedriveLease | None, run: _QueueRun
) -> None:
    started_ms = int(time.time() * 1000)
    replayer = _replayer(redrive, lease)
    drain = _drain(redrive, run.queue_url, run.source, replayer, report, started_ms)
    drain.dry_run, drain.progress = run.dry_run, run.progress
    drain.should_stop = _stop_when_lost(lease, run.should_stop)
    if not drain.drain(run.max_messages):
        return  # out of time within a window
    if run.source is Source.ON_FAILURE and redrive.quarantine_queue_url and replayer.replayed:
        _watch(redrive, replayer).scan(redrive.quarantine_queue_url, started_ms, report)


def _replay_bucket(
    redrive: Redrive, report: RedriveReport, lease: RedriveLease | None, run: _BucketRun
) -> None:
    started_ms = int(time.time() * 1000)
    replayer = _replayer(redrive, lease)
    watched, hold = _cross_source(redrive, redrive.quarantine_queue_url).object_hold(report)
    BucketReplay(
        reader=replace(_object_reader(redrive, run.bucket), watched_items=watched),
        prefix=run.prefix,
        hold=hold,
        streams_client=redrive.streams_client,
        replayer=replayer,
        report=report,
        dry_run=run.dry_run,
        should_stop=_stop_when_lost(lease, run.should_stop),
        progress=run.progress,
        age=_age(redrive),
    ).replay(DEFAULT_MAX_OBJECTS if run.max_objects is None else run.max_objects)
    if redrive.quarantine_queue_url and replayer.replayed:
        _watch(redrive, replayer).scan(redrive.quarantine_queue_url, started_ms, report)


def _leased(
    redrive: Redrive, report: RedriveReport, body: Callable[[RedriveLease | None], None]
) -> RedriveReport:
    """``body`` run under the consumer's lease (:mod:`~cdc_consumer.redrive.lease`), taken
    waiting up to ``lease_wait_seconds`` and given back after; not run at all when another
    redrive holds it (``report.busy`` says who). Without a lease table, run without (noted)."""
    name = redrive.consumer_name or redrive.function_name
    if not redrive.lease_table or not name:
        report.notes.append(
            "no redrive lease (no idempotency table, or no consumer name): another redrive"
            " of this consumer at the same time could hide a quarantined change this one"
            " must wait for"
        )
        body(None)
        return report
    if redrive.dynamodb_client is None:
        redrive.dynamodb_client = boto3.client("dynamodb")
    lease = RedriveLease(redrive.dynamodb_client, redrive.lease_table, name, redrive.stream_arn)
    report.busy = lease.wait(redrive.lease_wait_seconds, redrive.lease_poll_seconds, time.sleep)
    if report.busy is not None:
        return report
    try:
        body(lease)
    finally:
        if lease.held is not None:
            report.busy = lease.held  # lost midway: another redrive took it over
        else:
            lease.release()
    return report


def _stop_when_lost(
    lease: RedriveLease | None, should_stop: Callable[[], bool] | None
) -> Callable[[], bool] | None:
    """``should_stop``, and stop once the lease was lost (another redrive took it)."""
    if lease is None:
        return should_stop
    return lambda: lease.held is not None or bool(should_stop and should_stop())


def _object_reader(redrive: Redrive, bucket: str) -> ObjectReader:
    return ObjectReader(
        s3_client=redrive.s3_client,
        bucket=bucket,
        stream_arn=redrive.stream_arn,
        function_name=redrive.function_name,
        mapping_uuid=redrive.mapping_uuid,
    )


def _drain(
    redrive: Redrive,
    queue_url: str,
    source: Source,
    replayer: Replayer,
    report: RedriveReport,
    started_ms: int,
) -> QueueDrain:
    return QueueDrain(
        sqs_client=redrive.sqs_client,
        queue_url=queue_url,
        reader=_reader(redrive, source, replayer),
        replayer=replayer,
        watch=_watch(redrive, replayer),
        report=report,
        started_ms=started_ms,
        window=redrive.window,
        receive_wait_seconds=redrive.receive_wait_seconds,
        visibility_timeout_seconds=redrive.visibility_timeout_seconds,
        hold=(
            _cross_source(redrive, queue_url).record_hold(report)
            if source is Source.QUARANTINE
            else None
        ),
        age=_age(redrive),
    )


def _cross_source(redrive: Redrive, quarantine_queue_url: str | None) -> CrossSource:
    if redrive.on_failure_bucket and redrive.s3_client is None:
        redrive.s3_client = boto3.client("s3")
    return CrossSource(
        sqs_client=redrive.sqs_client,
        streams_client=redrive.streams_client,
        stream_arn=redrive.stream_arn,
        consumers=_consumers(redrive),
        visibility_timeout_seconds=redrive.visibility_timeout_seconds,
        quarantine_queue_url=quarantine_queue_url,
        bucket_reader=(
            _object_reader(redrive, redrive.on_failure_bucket)
            if redrive.on_failure_bucket
            else None
        ),
        bucket_prefix=redrive.on_failure_prefix,
        set_aside_since_ms=redrive.set_aside_since_ms,
    )


def _reader(redrive: Redrive, source: Source, replayer: Replayer) -> QueueMessageReader:
    return QueueMessageReader(
        source=source,
        stream_arn=redrive.stream_arn,
        streams_client=redrive.streams_client,
        max_empty_pages=redrive.max_empty_pages,
        function_name=redrive.function_name,
        consumers=_consumers(redrive),
        replayer=replayer,
        s3=lambda: _s3(redrive),
    )


def _s3(redrive: Redrive) -> Any:
    """The redrive's S3 client, made when first needed."""
    if redrive.s3_client is None:
        redrive.s3_client = boto3.client("s3")
    return redrive.s3_client


def _watch(redrive: Redrive, replayer: Replayer) -> RequarantineWatch:
    return RequarantineWatch(
        sqs_client=redrive.sqs_client,
        stream_arn=redrive.stream_arn,
        consumers=_consumers(redrive),
        visibility_timeout_seconds=redrive.visibility_timeout_seconds,
        replayed=replayer.replayed,
    )
