"""The plan of an S3 redrive run: which objects are this consumer's, in which order they replay,
and what is pending before any is replayed - read object by object, never all at once.

The objects are listed under one or more prefixes (each of the consumer's mappings' folders,
:mod:`~cdc_consumer.redrive.mapping_prefixes`) and ordered together: the order is per shard,
whichever mapping wrote an object. Listing costs no object reads: a key names its mapping,
shard and the second it was written (:func:`~cdc_consumer.redrive.messages.
parse_on_failure_key`), so another mapping's objects are kept unread, and shards are put in
lineage order (:class:`~cdc_consumer.redrive.lineage.
ShardLineage`, parents first). The first ``max_objects`` of that order are then *surveyed*: each
is read, checked and reduced to its place in the stream (shard, first and last sequence number),
and dropped before the next is read, so the run's memory is one object's, whatever the count.
The replay reads each object again (:mod:`~cdc_consumer.redrive.sources.bucket`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.exceptions import ForeignMessageError, MalformedMessageError
from cdc_consumer.redrive.lineage import ShardLineage
from cdc_consumer.redrive.messages import (
    OnFailureKey,
    OnFailureObject,
    parse_on_failure_key,
    parse_on_failure_object,
)
from cdc_consumer.redrive.pending_changes import Change, PendingChanges, change_of, item_key
from cdc_consumer.redrive.report import FailedMessage, RedriveReport
from cdc_consumer.redrive_shapes import RedriveCause

__all__ = ["BucketPlan", "ObjectReader", "Pending", "Surveyed"]


@dataclass(frozen=True)
class Surveyed:
    """A readable object of this consumer: where its batch is, and the first and last change
    it holds of each item the caller asked about (:attr:`ObjectReader.watched_items`)."""

    where: OnFailureKey
    start: int
    end: int
    items: Mapping[str, tuple[Change, Change]] = field(default_factory=dict)


@dataclass(frozen=True)
class Pending:
    """An object of this consumer that stays in the bucket this run, and why; its place in its
    shard is known only as the second it was written."""

    where: OnFailureKey
    reason: str


@dataclass
class ObjectReader:
    """Reads one on-failure object at a time; ``watched_items`` (item keys, see
    :func:`item_key`) are looked for in each object's records."""

    s3_client: Any
    bucket: str
    stream_arn: str
    function_name: str | None
    mapping_uuid: str | None
    watched_items: frozenset[str] = frozenset()

    def read(self, key: str) -> OnFailureObject:
        """The object, checked. Raises :class:`MalformedMessageError` (unreadable, not in AWS's
        shape), :class:`ForeignMessageError` (another stream's or function's)."""
        try:
            body = self.s3_client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except (ClientError, BotoCoreError) as error:
            detail = getattr(error, "response", {}).get("Error", {})
            reason = f"{detail.get('Code')}: {detail.get('Message')}" if detail else error
            raise MalformedMessageError(f"cannot read the object ({reason})") from None
        return parse_on_failure_object(
            key, body, self.stream_arn, self.function_name, self.mapping_uuid
        )

    def survey(self, where: OnFailureKey) -> Surveyed:
        """Read the object and keep only its place (the records are dropped)."""
        item = self.read(where.key)
        items: dict[str, tuple[Change, Change]] = {}
        for record in item.records:
            key = item_key(record)
            if key in self.watched_items:
                change = change_of(record)
                items[key] = (items[key][0] if key in items else change, change)
        return Surveyed(
            where, int(item.batch.start_sequence_number), int(item.batch.end_sequence_number), items
        )


@dataclass
class BucketPlan:
    """One run's objects: ``shards`` in replay order, each shard's readable objects in stream
    order (``readable``), and what stays pending (``pending``: unreadable, malformed, beyond
    ``max_objects``)."""

    lineage: ShardLineage
    shards: list[str] = field(default_factory=list)
    readable: dict[str, list[Surveyed]] = field(default_factory=dict)
    pending: dict[str, list[Pending]] = field(default_factory=dict)

    @classmethod
    def make(
        cls,
        reader: ObjectReader,
        prefixes: Sequence[str],
        streams_client: Any,
        max_objects: int,
        report: RedriveReport,
    ) -> BucketPlan:
        """List, order and survey the objects under ``prefixes`` (see the module docstring)."""
        ours = [where for prefix in prefixes for where in _listed(reader, prefix, report)]
        shards = {where.shard_id for where in ours}
        lineage = (
            ShardLineage.of_stream(streams_client, reader.stream_arn, shards)
            if len(shards) > 1
            else ShardLineage()
        )
        plan = cls(lineage, lineage.order(shards))
        position = {shard: index for index, shard in enumerate(plan.shards)}
        ours.sort(key=lambda w: (position[w.shard_id], w.written, w.key))
        for where in ours[max_objects:]:
            report.messages_deferred += 1
            plan._pend(where, f"beyond this run's {max_objects} object(s); the next run")
        report.messages_received -= len(ours[max_objects:])  # listed, not looked at
        for where in ours[:max_objects]:
            plan._survey(reader, where, report)
        for objects in plan.readable.values():
            objects.sort(key=lambda s: (s.start, s.end))
        plan._note_unknown_lineage(report)
        return plan

    def _survey(self, reader: ObjectReader, where: OnFailureKey, report: RedriveReport) -> None:
        try:
            self.readable.setdefault(where.shard_id, []).append(reader.survey(where))
        except ForeignMessageError as error:
            report.kept.append(FailedMessage(where.key, str(error), RedriveCause.FOREIGN))
        except MalformedMessageError as error:
            reason = f"{error} (kept)"
            report.failed.append(FailedMessage(where.key, reason, RedriveCause.UNREADABLE))
            self._pend(where, reason)

    def _pend(self, where: OnFailureKey, reason: str) -> None:
        self.pending.setdefault(where.shard_id, []).append(Pending(where, reason))

    def _note_unknown_lineage(self, report: RedriveReport) -> None:
        if len(self.shards) < 2:
            return
        unknown = self.lineage.unknown(self.shards)
        if unknown:
            report.notes.append(
                f"the lineage of shard(s) {', '.join(unknown)} is not known to its root"
                f" ({self.lineage.unknown_reason}): shards are replayed in the order of the"
                " creation time in their ids, and a pending object of an earlier shard holds"
                " back every later one it may be an ancestor of"
            )

    def in_order(self) -> Iterator[Surveyed]:
        """The readable objects, shard by shard in replay order, each shard in stream order."""
        for shard in self.shards:
            yield from self.readable.get(shard, [])

    def count(self) -> int:
        return sum(len(objects) for objects in self.readable.values())

    def pending_changes(self) -> PendingChanges:
        """The watched items' earliest changes in the bucket, and the objects whose items are
        not known (unreadable, malformed, beyond the count)."""
        changes = PendingChanges("the failed-batch bucket")
        for surveyed in self.in_order():
            for item, (first, _) in surveyed.items.items():
                changes.add(item, first, f"object {surveyed.where.key}")
        for pending in self.pending.values():
            changes.unknown += [f"object {p.where.key}" for p in pending]
        return changes


def _listed(reader: ObjectReader, prefix: str, report: RedriveReport) -> list[OnFailureKey]:
    """This consumer's keys under ``prefix``; others are reported without being read."""
    ours: list[OnFailureKey] = []
    paginator = reader.s3_client.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=reader.bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            report.messages_received += 1
            try:
                ours.append(parse_on_failure_key(item["Key"], reader.mapping_uuid))
            except ForeignMessageError as error:
                report.kept.append(FailedMessage(item["Key"], str(error), RedriveCause.FOREIGN))
            except MalformedMessageError as error:  # not Lambda's: it holds no change of ours
                report.failed.append(
                    FailedMessage(item["Key"], f"{error} (kept)", RedriveCause.UNREADABLE)
                )
    return ours
