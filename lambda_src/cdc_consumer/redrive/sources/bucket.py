"""An S3 on-failure destination as a failure source: object by object in the plan's order
(:mod:`~cdc_consumer.redrive.bucket_plan`), each deleted once all its records succeeded, and
never a change of an item ahead of an earlier change of that item that is still pending.

Each object holds its batch (``payload``), so nothing is read from the stream: a batch is
replayed whether or not the stream still holds its records. What holds an object back (it is
reported in ``held``, with the reason, and the run is not ok):

- an earlier object of its shard that failed or was held, or an object of its shard that stays
  in the bucket (unreadable, malformed, beyond this run's count) and was written in the same
  second or before it (its records may be earlier: only the key's time says where it is);
- a pending object of a shard before it in the replay order that may be its ancestor: a known
  ancestor (``DescribeStream``'s ``ParentShardId``), or any earlier shard when its lineage is
  not known (:mod:`~cdc_consumer.redrive.lineage`);
- an earlier change of one of its items pending in the quarantine queue.

Memory: one object at a time. The survey reads each object once for its place and drops it; the
replay reads it again, replays it and drops it, so a run of 100 objects of 5.5 MB needs what one
needs (about 7 MB of Python objects each), not 700 MB.

Where: ``s3://<bucket>/<prefix>``; at the root of Lambda's layout (``aws/lambda/``, the redrive
function's default) the objects of every mapping of the consumer's function on its stream, a
replaced mapping's too, ordered together (:mod:`~cdc_consumer.redrive.mapping_prefixes`); a
prefix naming one mapping, that mapping's. The construct side is ``cdc_constructs.failure_kinds.
bucket``; the local pipeline writes it with ``cdc_local.destinations.bucket``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.environment_variables import (
    CONSUMER_FUNCTION_NAME_ENV,
    MAPPING_UUID_ENV,
    ON_FAILURE_BUCKET_ENV,
    ON_FAILURE_PREFIX_ENV,
    STREAM_ARN_ENV,
)
from cdc_consumer.exceptions import ForeignMessageError, MalformedMessageError
from cdc_consumer.redrive import parts
from cdc_consumer.redrive.access import MISSING_BUCKET_CODES, check_access, check_stream_arn
from cdc_consumer.redrive.bucket_plan import BucketPlan, ObjectReader, Surveyed
from cdc_consumer.redrive.defaults import DEFAULT_MAX_OBJECTS
from cdc_consumer.redrive.failure_source import Batch, Entry, Hold
from cdc_consumer.redrive.mapping_prefixes import mapping_prefixes
from cdc_consumer.redrive.messages import Source
from cdc_consumer.redrive.report import FailedMessage, RedriveReport
from cdc_consumer.redrive_shapes import ON_FAILURE_S3_PREFIX, RedriveCause

__all__ = ["BUCKET", "BucketKind", "BucketSource", "bucket_where", "split_bucket_where"]

_SCHEME = "s3://"


def bucket_where(bucket: str, prefix: str = ON_FAILURE_S3_PREFIX) -> str:
    """Where the objects under ``s3://bucket/prefix`` are, as a redrive names a source."""
    return f"{_SCHEME}{bucket}/{prefix}"


def split_bucket_where(where: str) -> tuple[str, str]:
    """The bucket and prefix of ``s3://bucket/prefix``."""
    bucket, _, prefix = where.removeprefix(_SCHEME).partition("/")
    return bucket, prefix


@dataclass
class BucketSource:
    """One run over the objects under ``prefixes`` of the consumer's stream (and, when known,
    function and mapping)."""

    reader: ObjectReader
    prefixes: list[str]
    streams_client: Any
    report: RedriveReport
    #: The quarantine's rule: a reason to keep an object, or None (None: not known).
    cross_hold: Callable[[Surveyed], str | None] | None = None
    _plan: BucketPlan | None = field(default=None, init=False)
    _index: int = field(default=0, init=False)
    #: Shard id -> the key of its first object that stayed (failed or held) in this run.
    _stalled: dict[str, str] = field(default_factory=dict, init=False)

    def entries(self, limit: int | None) -> Iterator[Entry]:
        self._plan = BucketPlan.make(
            self.reader,
            self.prefixes,
            self.streams_client,
            DEFAULT_MAX_OBJECTS if limit is None else limit,
            self.report,
        )
        for index, item in enumerate(self._plan.in_order()):
            self._index = index
            yield Entry(item.where.key, item)

    def hold(self, entry: Entry) -> Hold | None:
        """Why the object must wait (see the module docstring), or None."""
        plan, item = self._plan, entry.handle
        assert plan is not None
        shard, written = item.where.shard_id, item.where.written
        if shard in self._stalled:
            return RedriveCause.EARLIER_BATCH_OF_SHARD, (
                f"an earlier batch of shard {shard} ({self._stalled[shard]}) was not replayed,"
                " and this one must not overtake it"
            )
        for pending in plan.pending.get(shard, []):
            if not pending.where.written or not written or pending.where.written <= written:
                return RedriveCause.EARLIER_BATCH_OF_SHARD, (
                    f"object {pending.where.key} of shard {shard}, written no later than this"
                    f" one, stays in the bucket ({pending.reason}), and this one must not"
                    " overtake it"
                )
        for other in plan.shards[: plan.shards.index(shard)]:
            blocker = self._stalled.get(other) or next(
                (p.where.key for p in plan.pending.get(other, [])), None
            )
            why = plan.lineage.may_descend_from(shard, other) if blocker else None
            if why is not None:
                return RedriveCause.ANCESTOR_SHARD_PENDING, (
                    f"{why}, and its object {blocker} stays in the bucket: this shard's changes"
                    " must not overtake it"
                )
        reason = self.cross_hold(item) if self.cross_hold is not None else None
        return None if reason is None else (RedriveCause.EARLIER_CHANGE_IN_QUARANTINE, reason)

    def read(self, entry: Entry) -> Batch | None:
        """Read the object again (the survey dropped it); unchanged since, or it is kept."""
        item: Surveyed = entry.handle
        try:
            found = self.reader.read(item.where.key)
        except (ForeignMessageError, MalformedMessageError) as error:
            self._unreadable(entry, f"{error} (read again to replay it; kept)")
            return None
        batch = found.batch
        where = (int(batch.start_sequence_number), int(batch.end_sequence_number))
        if where != (item.start, item.end):
            self._unreadable(entry, "the object changed since this run first read it (kept)")
            return None
        return Batch(
            found.records, item.where.shard_id, str(item.start), str(item.end), batch.timestamp
        )

    def _unreadable(self, entry: Entry, reason: str) -> None:
        self.report.failed.append(FailedMessage(entry.id, reason, RedriveCause.UNREADABLE))

    def hold_records(self, entry: Entry, batch: Batch) -> Hold | None:
        return None  # the quarantine's rule is asked before the object is read (hold)

    def delete(self, entry: Entry) -> str | None:
        try:
            self.reader.s3_client.delete_object(Bucket=self.reader.bucket, Key=entry.id)
        except (ClientError, BotoCoreError) as error:
            return (
                f"all its records were replayed, but deleting it failed ({error}); a second run"
                " replays it again as no-ops (the consumer's markers) and deletes it"
            )
        return None

    def keep(self, entry: Entry, batch: Batch | None, *, blocking: bool = True) -> None:
        if blocking:
            self._stalled.setdefault(entry.handle.where.shard_id, entry.id)

    def interrupt(self, entry: Entry) -> None:
        assert self._plan is not None
        self.report.messages_deferred += self._plan.count() - self._index

    def close(self) -> None:
        """Nothing to release: an object is never hidden from the next run."""


class BucketKind:
    """Finds and opens a bucket source (``s3://...``; ``ON_FAILURE_BUCKET_NAME``)."""

    role = Source.ON_FAILURE
    shape = "s3://BUCKET/PREFIX (an S3 on-failure destination)"

    def claims(self, where: str) -> bool:
        return where.startswith(_SCHEME)

    def located(self, environ: Mapping[str, str]) -> str | None:
        """The redrive function's bucket and prefix: ``ON_FAILURE_PREFIX``, else ``aws/lambda/``
        (every mapping of the consumer's function, its current one's and a replaced one's)."""
        bucket = environ.get(ON_FAILURE_BUCKET_ENV, "")
        if not bucket:
            return None
        return bucket_where(bucket, environ.get(ON_FAILURE_PREFIX_ENV) or ON_FAILURE_S3_PREFIX)

    def check(self, redrive: Any, where: str) -> None:
        """A stream ARN that is one; a bucket that exists and these credentials may list."""
        check_stream_arn(redrive.stream_arn)
        bucket, prefix = split_bucket_where(where)
        client = parts.s3(redrive)
        check_access(
            lambda: client.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1),
            f"list bucket {bucket}",
            MISSING_BUCKET_CODES,
            "check --bucket (no such bucket in this account)",
            "check --bucket and that these credentials may list and read it",
        )

    def oldest_failure_age(
        self, where: str, client: Any, now: datetime, environ: Mapping[str, str]
    ) -> int:
        """Seconds since the oldest object of the consumer under ``where`` (its mappings'
        folders, as the redrive function replays them) was written (0: none waits): S3
        publishes no age of its objects, and its lifecycle deletes one its retention after
        that write (redriven ones are noncurrent versions, not listed)."""
        bucket, prefix = split_bucket_where(where)
        reader = ObjectReader(
            client,
            bucket,
            environ.get(STREAM_ARN_ENV, ""),
            environ.get(CONSUMER_FUNCTION_NAME_ENV) or None,
            environ.get(MAPPING_UUID_ENV) or None,
        )
        oldest: datetime | None = None
        for folder in mapping_prefixes(reader, prefix, [])[1]:
            pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=folder)
            for page in pages:
                for item in page.get("Contents") or ():
                    written = item["LastModified"]
                    oldest = written if oldest is None or written < oldest else oldest
        return 0 if oldest is None else max(0, int((now - oldest).total_seconds()))

    def open(self, run: parts.Run, where: str) -> BucketSource:
        redrive = run.redrive
        bucket, prefix = split_bucket_where(where)
        watched, hold = parts.cross_source(redrive, redrive.quarantine_queue_url).object_hold(
            run.report
        )
        reader, prefixes = mapping_prefixes(
            replace(parts.object_reader(redrive, bucket), watched_items=watched),
            prefix,
            run.report.notes,
        )
        return BucketSource(
            reader=reader,
            prefixes=prefixes,
            streams_client=parts.streams(redrive),
            report=run.report,
            cross_hold=hold,
        )


BUCKET = BucketKind()
"""The bucket source kind."""
