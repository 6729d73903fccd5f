"""The redrive's one driver: replays a failure source (:class:`~cdc_consumer.redrive.
failure_source.FailureSource`) entry by entry, in the source's order, and deletes an entry only
after every record of it succeeded.

For each entry: held (an earlier one of its shard or item stays) -> read -> refused when older
than the consumer's markers cover (:mod:`~cdc_consumer.redrive.marker_age`) -> held for an
earlier change of one of its items -> filtered as the mapping filters -> planned (dry run) or
replayed (:class:`~cdc_consumer.redrive.replayer.Replayer`) -> deleted. Whatever stays is
reported with its typed cause, and the source is told so that nothing after it overtakes it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cdc_consumer.redrive.failure_source import Batch, Entry, FailureSource, Hold
from cdc_consumer.redrive.marker_age import MarkerAge, failure_time
from cdc_consumer.redrive.replayer import Replayer
from cdc_consumer.redrive.report import FailedMessage, PlannedMessage, RedriveReport
from cdc_consumer.redrive_shapes import RedriveCause

__all__ = ["Driver"]


@dataclass
class Driver:
    """One run over ``source``: ``should_stop`` is asked before each entry, ``progress(done,
    report)`` told after each one taken; ``age``: the consumer's marker lifetime (None: not
    known, nothing is refused for age)."""

    source: FailureSource
    replayer: Replayer
    report: RedriveReport
    age: MarkerAge | None = None
    dry_run: bool = False
    should_stop: Callable[[], bool] | None = None
    progress: Callable[[int, RedriveReport], None] | None = None

    def run(self, limit: int | None) -> bool:
        """Replay up to ``limit`` entries; False when time ran out first."""
        done = 0
        try:
            for entry in self.source.entries(limit):
                if self.should_stop is not None and self.should_stop():
                    self.source.interrupt(entry)
                    return False
                self._take(entry)
                done += 1
                if self.progress is not None:
                    self.progress(done, self.report)
        finally:
            self.source.close()
        return True

    def _take(self, entry: Entry) -> None:
        held = self.source.hold(entry)
        if held is not None:
            self._stay(entry, None, held, self.report.held)
            return
        batch = self.source.read(entry)
        if batch is None:
            self.source.keep(entry, None)
            return
        too_old = (
            self.age.refusal(batch.records, failure_time(batch.failed_at))
            if self.age is not None
            else None
        )
        if too_old is not None:
            cause = (RedriveCause.OLDER_THAN_MARKERS, too_old)
            self._stay(entry, batch, cause, self.report.refused)
            return
        held = self.source.hold_records(entry, batch)
        if held is not None:
            self._stay(entry, batch, held, self.report.held)
            return
        self._replay(entry, batch)

    def _replay(self, entry: Entry, batch: Batch) -> None:
        records = (
            self.replayer.delivered(batch.records, self.report) if batch.filtered else batch.records
        )
        if self.dry_run:
            self.report.planned.append(
                PlannedMessage(entry.id, batch.shard_id, batch.first, batch.last, len(records))
            )
            self.source.keep(entry, None, blocking=False)
            return
        failure = self.replayer.replay(records, self.report, batch.shard_id)
        if failure is None:
            failure = self.source.delete(entry)
        if failure is not None:
            cause = (RedriveCause.REPLAY_FAILED, failure)
            self._stay(entry, batch, cause, self.report.failed)
            return
        self.report.messages_deleted += 1

    def _stay(
        self, entry: Entry, batch: Batch | None, why: Hold, where: list[FailedMessage]
    ) -> None:
        where.append(FailedMessage(entry.id, why[1], why[0]))
        self.source.keep(entry, batch)
