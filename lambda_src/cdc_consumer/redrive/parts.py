"""The parts of one redrive run, made from a :class:`~cdc_consumer.redrive.replay.Redrive`'s
settings (``redrive``: any object with its attributes) for each run, shared by the sources."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3

from cdc_consumer.redrive.bucket_plan import ObjectReader
from cdc_consumer.redrive.cross_source import CrossSource
from cdc_consumer.redrive.marker_age import MarkerAge
from cdc_consumer.redrive.replayer import Replayer
from cdc_consumer.redrive.report import RedriveReport
from cdc_consumer.redrive.requarantine import RequarantineWatch
from cdc_consumer.routes.replay import ReplayRoute, route_of_stream

__all__ = [
    "Run",
    "age",
    "consumers",
    "cross_source",
    "object_reader",
    "replayer",
    "s3",
    "streams",
    "watch",
]


@dataclass
class Run:
    """One run: the redrive's settings, its replayer and report, and when it started (messages
    sent later are the next run's)."""

    redrive: Any
    replayer: Replayer
    report: RedriveReport
    started_ms: int
    #: The route of the redrive's stream (:func:`~cdc_consumer.routes.replay.route_of_stream`).
    route: ReplayRoute


def consumers(redrive: Any) -> tuple[str, ...]:
    """The consumer names whose quarantine messages are this consumer's."""
    return (str(redrive.consumer_name), *redrive.member_names)


def age(redrive: Any) -> MarkerAge | None:
    if redrive.marker_ttl_seconds is None:
        return None
    return MarkerAge(redrive.marker_ttl_seconds, redrive.clock)


def replayer(redrive: Any) -> Replayer:
    return Replayer(
        invoker=redrive.invoker,
        criteria=redrive._criteria,
        max_attempts=redrive.max_attempts,
        max_records=redrive.invoke_max_records,
        max_bytes=redrive.invoke_max_bytes,
    )


def s3(redrive: Any) -> Any:
    """The redrive's S3 client, made when first needed."""
    if redrive.s3_client is None:
        redrive.s3_client = boto3.client("s3")
    return redrive.s3_client


def streams(redrive: Any) -> Any:
    """The redrive's client of its stream (its route's), made when first needed."""
    if redrive.streams_client is None:
        redrive.streams_client = route_of_stream(redrive.stream_arn).client(boto3)
    return redrive.streams_client


def object_reader(redrive: Any, bucket: str) -> ObjectReader:
    return ObjectReader(
        s3_client=s3(redrive),
        bucket=bucket,
        stream_arn=redrive.stream_arn,
        function_name=redrive.function_name,
        mapping_uuid=redrive.mapping_uuid,
    )


def cross_source(redrive: Any, quarantine_queue_url: str | None) -> CrossSource:
    """The other source of the run, to hold back a change behind an earlier one there."""
    return CrossSource(
        sqs_client=redrive.sqs_client,
        streams_client=streams(redrive),
        stream_arn=redrive.stream_arn,
        consumers=consumers(redrive),
        visibility_timeout_seconds=redrive.visibility_timeout_seconds,
        quarantine_queue_url=quarantine_queue_url,
        bucket_reader=(
            object_reader(redrive, redrive.on_failure_bucket) if redrive.on_failure_bucket else None
        ),
        bucket_prefix=redrive.on_failure_prefix,
        set_aside_since_ms=redrive.set_aside_since_ms,
    )


def watch(redrive: Any, replayed: set[str]) -> RequarantineWatch:
    return RequarantineWatch(
        sqs_client=redrive.sqs_client,
        stream_arn=redrive.stream_arn,
        consumers=consumers(redrive),
        visibility_timeout_seconds=redrive.visibility_timeout_seconds,
        replayed=replayed,
    )
