"""A segment's progress record (:class:`~cdc_consumer.backfill.shapes.SegmentProgress`).

One item per segment of a backfill in the idempotency table, written after each page the
consumer applied: where the next page starts, and the segment's totals. A failed or timed-out
invocation resumes after the last applied page; a rerun of a finished segment finds ``done``
and does nothing. The item expires with the markers' lifetime (docs/backfill.md): after that a
rerun of the same backfill scans again, and its rows are no-ops by their versions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cdc_consumer import defaults
from cdc_consumer.backfill.shapes import SegmentProgress, SegmentTask
from cdc_consumer.exceptions import BackfillRefusedError

__all__ = ["ProgressStore"]


@dataclass
class ProgressStore:
    """Reads and writes one consumer's segment progress records."""

    client: Any
    table: str
    consumer: str
    clock: Callable[[], float]

    def record_id(self, task: SegmentTask) -> str:
        return SegmentProgress.record_id(
            self.consumer, task.backfill_id, task.segment, task.total_segments
        )

    def load(self, task: SegmentTask) -> SegmentProgress:
        """The segment's progress (nothing done when it has no record). A record of the same
        backfill with another horizon is refused: one backfill id has one horizon."""
        item = self.client.get_item(
            TableName=self.table,
            Key={defaults.ID_ATTRIBUTE: {"S": self.record_id(task)}},
            ConsistentRead=True,
        ).get("Item")
        if item is None:
            return SegmentProgress(task.resume_key, False, 0, 0)
        horizon = int(item["horizon"]["N"])
        if horizon != task.horizon:
            raise BackfillRefusedError(
                f"backfill {task.backfill_id!r} segment {task.segment} ran with horizon "
                f"{horizon}, this task has {task.horizon}: start a new backfill id for a new "
                "horizon"
            )
        resume = item.get(SegmentProgress.RESUME_KEY, {}).get("S")
        return SegmentProgress(
            json.loads(resume) if resume else None,
            item["done"]["BOOL"],
            int(item["items"]["N"]),
            int(item["pages"]["N"]),
            int(item.get("quarantined", {}).get("N", "0")),
        )

    def save(self, task: SegmentTask, progress: SegmentProgress) -> None:
        item: dict[str, Any] = {
            defaults.ID_ATTRIBUTE: {"S": self.record_id(task)},
            "horizon": {"N": str(task.horizon)},
            "done": {"BOOL": progress.done},
            "items": {"N": str(progress.items)},
            "pages": {"N": str(progress.pages)},
            "quarantined": {"N": str(progress.quarantined)},
            defaults.EXPIRATION_ATTRIBUTE: {
                "N": str(int(self.clock()) + defaults.marker_ttl_seconds())
            },
        }
        if progress.resume_key is not None:
            item[SegmentProgress.RESUME_KEY] = {"S": json.dumps(progress.resume_key)}
        self.client.put_item(TableName=self.table, Item=item)
