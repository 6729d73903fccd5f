"""Replaying an S3 on-failure destination: object by object in the plan's order
(:mod:`~cdc_consumer.redrive.bucket_plan`), each deleted once all its records succeeded, and
never a change of an item ahead of an earlier change of that item that is still pending.

What holds an object back (it is reported in ``held``, with the reason, and the run is not ok):

- an earlier object of its shard that failed or was held, or an object of its shard that stays
  in the bucket (unreadable, malformed, beyond this run's count) and was written in the same
  second or before it (its records may be earlier: only the key's time says where it is);
- a pending object of a shard before it in the replay order that may be its ancestor: a known
  ancestor (``DescribeStream``'s ``ParentShardId``), or any earlier shard when its lineage is
  not known (:mod:`~cdc_consumer.redrive.lineage`);
- ``hold``: the caller's rule for the other source (an earlier change of one of its items
  pending in the quarantine queue).

Memory: one object at a time. The survey reads each object once for its place and drops it; the
replay reads it again, replays it and drops it, so a run of 100 objects of 5.5 MB needs what one
needs (about 7 MB of Python objects each), not 700 MB.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.contract import RedriveCause
from cdc_consumer.exceptions import ForeignMessageError, MalformedMessageError
from cdc_consumer.redrive.bucket_plan import BucketPlan, ObjectReader, Surveyed
from cdc_consumer.redrive.marker_age import MarkerAge, failure_time
from cdc_consumer.redrive.replayer import Replayer
from cdc_consumer.redrive.report import FailedMessage, PlannedMessage, RedriveReport

__all__ = ["BucketReplay"]


@dataclass
class BucketReplay:
    """One run over the objects under ``s3://bucket/prefix`` of the consumer's stream (and,
    when given, function and mapping); ``should_stop`` is asked before each object,
    ``progress`` told after each one deleted, ``hold`` asked before each object is replayed
    (a reason to keep it, or None)."""

    reader: ObjectReader
    prefix: str
    streams_client: Any
    replayer: Replayer
    report: RedriveReport
    dry_run: bool = False
    should_stop: Callable[[], bool] | None = None
    progress: Callable[[int, RedriveReport], None] | None = None
    hold: Callable[[Surveyed], str | None] | None = None
    #: The consumer's marker lifetime: an object older than it covers is refused (None: not
    #: known, nothing is refused for age).
    age: MarkerAge | None = None
    #: Shard id -> the key of its first object that stayed (failed or held) in this run.
    _stalled: dict[str, str] = field(default_factory=dict, init=False)

    def replay(self, max_objects: int) -> BucketPlan:
        """Replay the first ``max_objects`` objects of the plan's order; return the plan."""
        plan = BucketPlan.make(
            self.reader, self.prefix, self.streams_client, max_objects, self.report
        )
        done, total = 0, plan.count()
        for index, item in enumerate(plan.in_order()):
            if self.should_stop is not None and self.should_stop():
                self.report.messages_deferred += total - index
                break
            if self._replay_object(plan, item):
                done += 1
                if self.progress is not None:
                    self.progress(done, self.report)
        return plan

    def _replay_object(self, plan: BucketPlan, item: Surveyed) -> bool:
        """Replay one object; True when it was replayed and deleted."""
        key, shard = item.where.key, item.where.shard_id
        held = self._hold_reason(plan, item)
        if held is not None:
            self.report.held.append(FailedMessage(key, held[1], held[0]))
            self._stalled.setdefault(shard, key)
            return False
        failure = self._replay_records(item)
        if failure is None and not self.dry_run:
            failure = self._delete_object(key)
        if failure is not None:
            failures = (
                self.report.refused
                if failure[0] is RedriveCause.OLDER_THAN_MARKERS
                else self.report.failed
            )
            failures.append(FailedMessage(key, failure[1], failure[0]))
            self._stalled.setdefault(shard, key)
            return False
        if self.dry_run:
            return False
        self.report.messages_deleted += 1
        return True

    def _replay_records(self, item: Surveyed) -> tuple[RedriveCause, str] | None:
        """Read the object again and replay (or, dry, plan) its records; None on success."""
        try:
            found = self.reader.read(item.where.key)
        except (ForeignMessageError, MalformedMessageError) as error:
            return RedriveCause.UNREADABLE, f"{error} (read again to replay it; kept)"
        batch = found.batch
        if (int(batch.start_sequence_number), int(batch.end_sequence_number)) != (
            item.start,
            item.end,
        ):
            return RedriveCause.UNREADABLE, "the object changed since this run first read it (kept)"
        if self.age is not None:
            too_old = self.age.refusal(found.records, failure_time(batch.timestamp))
            if too_old is not None:
                return RedriveCause.OLDER_THAN_MARKERS, too_old
        records = self.replayer.delivered(found.records, self.report)
        del found  # one object's records in memory at a time
        if self.dry_run:
            self.report.planned.append(
                PlannedMessage(
                    item.where.key,
                    item.where.shard_id,
                    str(item.start),
                    str(item.end),
                    len(records),
                )
            )
            return None
        failure = self.replayer.replay(records, self.report)
        return None if failure is None else (RedriveCause.REPLAY_FAILED, failure)

    def _hold_reason(self, plan: BucketPlan, item: Surveyed) -> tuple[RedriveCause, str] | None:
        """Why ``item`` must wait (see the module docstring), or None."""
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
        reason = self.hold(item) if self.hold is not None else None
        return None if reason is None else (RedriveCause.EARLIER_CHANGE_IN_QUARANTINE, reason)

    def _delete_object(self, key: str) -> tuple[RedriveCause, str] | None:
        try:
            self.reader.s3_client.delete_object(Bucket=self.reader.bucket, Key=key)
        except (ClientError, BotoCoreError) as error:
            return RedriveCause.REPLAY_FAILED, (
                f"all its records were replayed, but deleting it failed ({error}); a second run"
                " replays it again as no-ops (the consumer's markers) and deletes it"
            )
        return None
