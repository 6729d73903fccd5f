"""Replay windows: how long a processed-marker or a side-effect claim must live.

The one rule (docs/design.md, "Markers outlive every replay window"): a processed-marker or a
side-effect claim outlives every window in which its record can be delivered or replayed. The
constructs derive each consumer's marker lifetime from it, StreamConsumer and KinesisConsumer
refuse a ``marker_lifetime`` below it, and CdcChecks applies it to any template. Standard library
only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from cdc_consumer.service_limits import S3_EXPIRY_ROUNDING_SECONDS, UNLIMITED_RECORD_AGE

__all__ = [
    "MARKER_LIFETIME_MARGIN_SECONDS",
    "ReplayWindows",
    "minimum_marker_lifetime",
]


MARKER_LIFETIME_MARGIN_SECONDS: Final = 24 * 3600
"""Kept past the last moment a record can come back: a redrive started on a window's last day,
clocks of different hosts, a retention counted from a slightly later write. A day; DynamoDB's TTL
deletes late, never early, so the margin is never eaten from the other side."""


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
