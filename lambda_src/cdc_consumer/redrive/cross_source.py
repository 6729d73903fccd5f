"""Holding a run back for the other source's earlier changes (the rule and its reasons are in
:mod:`~cdc_consumer.redrive.pending_changes`): what a bucket run asks before each object, and
what a quarantine run asks before each record."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cdc_consumer.redrive.bucket_plan import BucketPlan, ObjectReader, Surveyed
from cdc_consumer.redrive.defaults import DEFAULT_MAX_OBJECTS
from cdc_consumer.redrive.mapping_prefixes import layout_root, mapping_prefixes
from cdc_consumer.redrive.pending_changes import (
    PendingChanges,
    change_of,
    item_key,
    peek_quarantine,
)
from cdc_consumer.redrive.report import RedriveReport

__all__ = ["CrossSource"]


@dataclass(frozen=True)
class CrossSource:
    """Where a consumer's two sources are (either may be unknown) and how to read them."""

    sqs_client: Any
    streams_client: Any
    stream_arn: str
    consumers: Sequence[str]
    visibility_timeout_seconds: int
    quarantine_queue_url: str | None
    bucket_reader: ObjectReader | None
    bucket_prefix: str
    set_aside_since_ms: int | None = None

    def _quarantine(self) -> PendingChanges:
        assert self.quarantine_queue_url is not None
        return peek_quarantine(
            self.sqs_client,
            self.quarantine_queue_url,
            self.stream_arn,
            self.consumers,
            self.visibility_timeout_seconds,
            self.set_aside_since_ms,
        )

    def object_hold(
        self, report: RedriveReport
    ) -> tuple[frozenset[str], Callable[[Surveyed], str | None] | None]:
        """For a bucket run: the items to look for in its objects, and the hold (None when the
        quarantine queue is not known, which the report notes)."""
        if not self.quarantine_queue_url:
            report.notes.append(
                "the quarantine queue is not known (--quarantine-queue-url or"
                " QUARANTINE_QUEUE_URL): objects were replayed without looking there for an"
                " earlier change of their items"
            )
            return frozenset(), None
        quarantine = self._quarantine()

        def hold(item: Surveyed) -> str | None:
            # Earlier than the object's *first* change of the item: a quarantined change between
            # its first and last is one of its own records (a batch holds every change of an
            # item in its range), which it replays in order; waiting for it would deadlock
            # (the quarantine's record waits for the object's earlier change).
            for key, (first, _) in item.items.items():
                reason = quarantine.before(key, first, unknown_holds=False)
                if reason is not None:
                    return reason
            if quarantine.unknown:
                return (
                    f"the quarantine queue could not be looked at ({quarantine.unknown[0]}), so"
                    " it may hold an earlier change of one of this object's items"
                )
            return None

        return quarantine.items(), hold

    def record_hold(self, report: RedriveReport) -> Callable[[Mapping[str, Any]], str | None]:
        """For a quarantine run: the hold of each record for the bucket's earlier changes (none
        when the bucket is not known, which the report notes)."""
        bucket = self._bucket(report)

        def hold(record: Mapping[str, Any]) -> str | None:
            if bucket is None:
                return None
            return bucket.before(item_key(record), change_of(record), unknown_holds=True)

        return hold

    def _bucket(self, report: RedriveReport) -> PendingChanges | None:
        if self.bucket_reader is None:
            report.notes.append(
                "the failed-batch bucket is not known (the redrive function's"
                " ON_FAILURE_BUCKET_NAME, or --on-failure-bucket): quarantined records were"
                " replayed without looking there for an earlier change of their items"
            )
            return None
        if not self.quarantine_queue_url:
            return None
        watched = self._quarantine().items()
        if not watched:
            return PendingChanges("the failed-batch bucket")
        # Every mapping of the consumer's function, whatever prefix the run was given: a
        # replaced mapping's batches hold earlier changes as much as the current one's.
        reader, prefixes = mapping_prefixes(
            replace(self.bucket_reader, watched_items=watched),
            layout_root(self.bucket_prefix) or self.bucket_prefix,
            report.notes,
        )
        scratch = RedriveReport(source="survey", queue_url="")
        plan = BucketPlan.make(reader, prefixes, self.streams_client, DEFAULT_MAX_OBJECTS, scratch)
        return plan.pending_changes()
