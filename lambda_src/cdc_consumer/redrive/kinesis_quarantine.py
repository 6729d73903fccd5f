"""The Kinesis route's quarantine: a KinesisConsumer's quarantine queue, redriven as the stream
route's (the quarantine kind of :mod:`~cdc_consumer.redrive.sources`, on the one driver).

A message carries the Kinesis record as Lambda delivered it (``eventSource`` ``aws:kinesis``,
``eventSourceARN`` the Kinesis stream's, the DynamoDB change base64 under ``kinesis.data``):
:func:`~cdc_consumer.redrive.messages.parse_quarantine_message` reads it, and its item is the
change's key (:mod:`~cdc_consumer.redrive.kinesis_changes`). The ordering rule is the stream
route's (:mod:`~cdc_consumer.redrive.pending_changes`), with the Kinesis route's failed-batch
bucket (:class:`~cdc_consumer.redrive.kinesis_sources.KinesisBucket`'s objects) as the other
source: a quarantined record waits while the bucket holds an earlier change of its item (or an
object of this consumer that cannot be read), and a bucket batch waits while the quarantine
holds an earlier change of one of its items (:func:`quarantine_changes`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.exceptions import ForeignMessageError, MalformedMessageError, RedriveSetupError
from cdc_consumer.redrive import parts
from cdc_consumer.redrive.access import MISSING_QUEUE_CODES, check_access
from cdc_consumer.redrive.defaults import DEFAULT_MAX_OBJECTS
from cdc_consumer.redrive.failure_source import FailureSource
from cdc_consumer.redrive.kinesis_sources import KinesisBucket
from cdc_consumer.redrive.messages import Source
from cdc_consumer.redrive.pending_changes import (
    PendingChanges,
    change_of,
    item_key,
    peek_quarantine,
)
from cdc_consumer.redrive.report import RedriveReport
from cdc_consumer.redrive.sources import bucket_of, kind_for

__all__ = ["check_quarantine", "open_quarantine", "quarantine_changes"]


def check_quarantine(redrive: Any, queue_url: str) -> None:
    """The consumer's name is known (only its messages are replayed), and the queue is one
    that can be read. Raises :class:`RedriveSetupError`."""
    if bucket_of(queue_url) is not None:
        raise RedriveSetupError(f"{queue_url!r} is a bucket; the quarantine is a queue (its URL)")
    if not redrive.consumer_name:
        raise RedriveSetupError(
            "a quarantine redrive needs the consumer's name (--consumer-name, or"
            " CDC_CONSUMER_NAME in the consumer's environment): it replays only that"
            " consumer's messages"
        )
    sqs = redrive.sqs_client
    check_access(
        lambda: sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"]),
        f"read queue {queue_url}",
        MISSING_QUEUE_CODES,
        "check --queue-url (the queue does not exist in this account and region)",
        "check --queue-url and that these credentials may read it",
    )


def open_quarantine(run: parts.Run, queue_url: str) -> FailureSource:
    """The quarantine queue of ``run.redrive`` (a KinesisRedrive) as a failure source: the
    quarantine kind's, holding a record for this route's bucket."""
    run.bucket_hold = _record_hold(_bucket_changes(run.redrive, run.report))
    return kind_for(Source.QUARANTINE, queue_url).open(run, queue_url)


def quarantine_changes(redrive: Any, report: RedriveReport) -> PendingChanges | None:
    """The changes the consumer's quarantine queue holds (None, noted, when it is not known)."""
    if not redrive.quarantine_queue_url:
        report.notes.append(
            "the quarantine queue is not known (--quarantine-queue-url or"
            " QUARANTINE_QUEUE_URL): batches were replayed without looking there for an"
            " earlier change of their items"
        )
        return None
    return peek_quarantine(
        redrive.sqs_client,
        redrive.quarantine_queue_url,
        redrive.stream_arn,
        parts.consumers(redrive),
        redrive.visibility_timeout_seconds,
        redrive.set_aside_since_ms,
    )


def _record_hold(
    bucket: PendingChanges | None,
) -> Callable[[Mapping[str, Any]], str | None]:
    def hold(record: Mapping[str, Any]) -> str | None:
        if bucket is None:
            return None
        return bucket.before(item_key(record), change_of(record), unknown_holds=True)

    return hold


def _bucket_changes(redrive: Any, report: RedriveReport) -> PendingChanges | None:
    """The changes the consumer's failed-batch bucket holds (None, noted, when not known)."""
    if not redrive.on_failure_bucket:
        report.notes.append(
            "the failed-batch bucket is not known (the redrive function's"
            " ON_FAILURE_BUCKET_NAME, or --on-failure-bucket): quarantined records were"
            " replayed without looking there for an earlier change of their items"
        )
        return None
    pending = PendingChanges("the failed-batch bucket")
    bucket = KinesisBucket(
        parts.s3(redrive),
        redrive.on_failure_bucket,
        redrive.on_failure_prefix,
        redrive.stream_arn,
        redrive.function_name,
        redrive.mapping_uuid,
    )
    survey = RedriveReport(source="survey", queue_url="")
    try:
        failures = bucket.collect(DEFAULT_MAX_OBJECTS, survey)
    except (ClientError, BotoCoreError) as error:
        pending.unknown.append(f"listing it failed ({error})")
        return pending
    pending.unknown.extend(f"object {f.message_id}" for f in survey.failed)
    if survey.messages_deferred:
        pending.unknown.append(f"{survey.messages_deferred} object(s) not surveyed")
    for failure in failures:
        _add_object(pending, bucket, failure)
    return pending


def _add_object(pending: PendingChanges, bucket: KinesisBucket, failure: Any) -> None:
    try:
        records = bucket.load(failure).records or ()
    except (ForeignMessageError, MalformedMessageError):
        pending.unknown.append(f"object {failure.where}")
        return
    for record in records:
        pending.add(item_key(record), change_of(record), f"object {failure.where}")
