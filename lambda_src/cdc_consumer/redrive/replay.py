"""The replay: drain one failure source (a queue, or a bucket) into one consumer, in stream
order, deleting only after success.

:class:`Redrive` is the facade: :meth:`Redrive.run` finds the source's kind by what it is given
(:mod:`~cdc_consumer.redrive.sources`: a bucket, an on-failure queue, the quarantine), checks it,
and replays it with the one driver (:class:`~cdc_consumer.redrive.driver.Driver`, invoking the
consumer through :class:`~cdc_consumer.redrive.replayer.Replayer`); then it looks for records
it replayed that were quarantined again (:class:`~cdc_consumer.redrive.requarantine.
RequarantineWatch`). The checks before a run are in :mod:`~cdc_consumer.redrive.access`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import boto3

from cdc_consumer.filter_patterns import FilterCriteria
from cdc_consumer.redrive import parts
from cdc_consumer.redrive.access import check_stream_arn
from cdc_consumer.redrive.defaults import (
    DEFAULT_INVOKE_MAX_BYTES,
    DEFAULT_INVOKE_MAX_RECORDS,
    DEFAULT_LEASE_POLL_SECONDS,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_EMPTY_PAGES,
    DEFAULT_RECEIVE_WAIT_SECONDS,
    DEFAULT_VISIBILITY_TIMEOUT_SECONDS,
    DEFAULT_WINDOW,
)
from cdc_consumer.redrive.driver import Driver
from cdc_consumer.redrive.invokers import Invoker
from cdc_consumer.redrive.lease import LeasedInvoker, RedriveLease, stop_when_lost, under_lease
from cdc_consumer.redrive.messages import Source
from cdc_consumer.redrive.report import RedriveReport
from cdc_consumer.redrive.sources import bucket_where, kind_for
from cdc_consumer.redrive_shapes import ON_FAILURE_S3_PREFIX
from cdc_consumer.routes.replay import ReplayRoute, route_of_stream

__all__ = ["Redrive", "check_stream_arn"]


@dataclass
class Redrive:
    """Drains one queue into one consumer.

    Parameters:
        invoker: delivers events to the consumer (:class:`LambdaInvoker`, :class:`CallableInvoker`).
        stream_arn: the consumer's stream, of either route (a DynamoDB stream, or a Kinesis
            data stream: :func:`~cdc_consumer.routes.replay.route_of_stream`); messages for
            another stream are refused.
        sqs_client, streams_client: boto3 clients (default: plain ``boto3.client(...)``, so
            ``AWS_ENDPOINT_URL`` works locally; ``streams_client`` reads the stream, its route's
            client, made when first needed).
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
        lease_table, dynamodb_client: the consumer's idempotency table
            (``IDEMPOTENCY_TABLE_NAME``; client default ``boto3.client("dynamodb")``), where
            each run takes the consumer's lease first, so redrives of one consumer never overlap
            (:mod:`~cdc_consumer.redrive.lease`). Default None: no lease (the report notes it).
        lease_wait_seconds, lease_poll_seconds: how long a run waits for a lease another
            redrive holds, trying every ``lease_poll_seconds`` (default 0: it does not wait;
            its report says who holds it, ``busy``, and it touches nothing).
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
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts is {self.max_attempts}; expected 1 or more")
        parts.age(self)  # checks marker_ttl_seconds
        self._criteria = FilterCriteria(self.filters, where="filters")

    @property
    def route(self) -> ReplayRoute:
        """The route of :attr:`stream_arn`; :class:`RedriveSetupError` when it names none."""
        return route_of_stream(self.stream_arn)

    def check(self, where: str, source: Source | str = Source.ON_FAILURE) -> None:
        """Raise :class:`RedriveSetupError` for an operator mistake: a stream ARN that is not
        one, a quarantine run without the consumer's name, a queue or bucket that does not exist
        or cannot be read, no credentials. (A well-formed stream that no longer exists is not a
        mistake: its records are reported lost, message by message.)"""
        source = Source(source)
        kind_for(source, where).check(self, where)

    def run(
        self,
        where: str,
        source: Source | str = Source.ON_FAILURE,
        *,
        dry_run: bool = False,
        max_messages: int | None = None,
        should_stop: Callable[[], bool] | None = None,
        progress: Callable[[int, RedriveReport], None] | None = None,
    ) -> RedriveReport:
        """Redrive the failed records at ``where``: a queue's URL (the on-failure queue's, or
        the quarantine's with ``source``), or ``s3://bucket/prefix`` (an S3 on-failure
        destination: :func:`~cdc_consumer.redrive.sources.bucket_where`); at most
        ``max_messages`` messages or objects (all of a queue's by default; a bucket's first
        :data:`DEFAULT_MAX_OBJECTS`).

        ``dry_run`` reads and reports what would be replayed without invoking or deleting.
        ``should_stop`` is asked before each message or object (e.g. near a Lambda deadline).
        ``progress(done, report)`` is called after each one. What redrive keeps of a queue is
        made visible again at the end, so the next run (or a person) sees it at once; what it
        keeps of a bucket stays there. What each source does is its module's
        (:mod:`~cdc_consumer.redrive.sources`).

        Raises :class:`RedriveSetupError` (see :meth:`check`) before touching anything.
        """
        source = Source(source)
        kind = kind_for(source, where)
        kind.check(self, where)
        report = RedriveReport(source=source.value, queue_url=where, dry_run=dry_run)

        def drive(lease: RedriveLease | None) -> None:
            replayer = parts.replayer(self)
            if lease is not None:  # renewed before each invocation: nothing after it is lost
                replayer.invoker = LeasedInvoker(self.invoker, lease)
            run = parts.Run(self, replayer, report, int(time.time() * 1000), self.route)
            Driver(
                source=kind.open(run, where),
                replayer=replayer,
                report=report,
                age=parts.age(self),
                dry_run=dry_run,
                should_stop=stop_when_lost(lease, should_stop),
                progress=progress,
            ).run(max_messages)
            replayed = replayer.replayed
            if source is Source.ON_FAILURE and self.quarantine_queue_url and replayed:
                parts.watch(self, replayed).scan(self.quarantine_queue_url, run.started_ms, report)

        return under_lease(self, report, drive)

    # S3 on-failure destinations, by bucket and prefix -------------------------------------

    def check_bucket(self, bucket: str, prefix: str = ON_FAILURE_S3_PREFIX) -> None:
        """:meth:`check` of ``s3://bucket/prefix``: nothing is read or deleted."""
        self.check(bucket_where(bucket, prefix))

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
        """:meth:`run` of ``s3://bucket/prefix`` (see :mod:`~cdc_consumer.redrive.sources.
        bucket`: objects replayed in stream order, a child shard's after its parent's, each
        deleted after every record of it succeeded, one read at a time)."""
        return self.run(
            bucket_where(bucket, prefix),
            dry_run=dry_run,
            max_messages=max_objects,
            should_stop=should_stop,
            progress=progress,
        )
