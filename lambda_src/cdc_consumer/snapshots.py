"""Snapshot changes: a backfill's table rows as the consumer sees them (docs/backfill.md).

A backfill scans the table after a *horizon* H and hands each item to the consumer as a
snapshot record: a stream-shaped INSERT (``eventSource`` :data:`SNAPSHOT_EVENT_SOURCE`) whose
NEW image is the item read, in an event marked by ``cdcBackfill``
(:class:`~cdc_consumer.backfill.shapes.SnapshotBatch`). The runtime decodes it as a
:class:`SnapshotChange`, whose :attr:`~SnapshotChange.version` stands just below H: every stream
change created at or after H wins over the row, every earlier one loses, stream changes win ties
(:func:`cdc_consumer.versions.snapshot_version`).

A snapshot record's ``eventID`` is a function of the backfill and the item's key, so a rerun
of the same backfill delivers the same ids (a projection that keeps markers skips them).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from cdc_consumer.backfill.shapes import SNAPSHOT_EVENT_SOURCE
from cdc_consumer.change import Change
from cdc_consumer.filter_patterns import FilterCriteria, FilterPattern
from cdc_consumer.versions import snapshot_version

__all__ = ["SnapshotChange", "admits_snapshot_rows", "snapshot_record"]

#: The part of a record that holds its keys and images: unknown until a row is read.
_IMAGES = "dynamodb"


class SnapshotChange(Change):
    """A :class:`Change` read from the table by a backfill: an INSERT without an OLD image
    whose ``approximate_creation_time`` is the horizon and whose :attr:`version` stands just
    below it."""

    __slots__ = ()
    is_snapshot = True

    @property
    def version(self) -> str:
        """Just below the horizon (see the module docstring)."""
        assert self.creation_time_us is not None  # snapshot_record always sets the horizon
        return snapshot_version(self.creation_time_us)


def snapshot_record(
    item: Mapping[str, Any],
    keys: Mapping[str, Any],
    *,
    backfill_id: str,
    horizon: int,
    sequence_number: str,
    stream_arn: str | None,
) -> dict[str, Any]:
    """The snapshot record of one scanned ``item`` (DynamoDB JSON, as Scan returns it, binary
    values base64 text as in a Lambda event) whose key attributes are ``keys``.

    ``sequence_number``: unique within the batch (the batch's failure report names it);
    ``horizon``: epoch seconds.
    """
    digest = hashlib.sha256(json.dumps(keys, sort_keys=True).encode()).hexdigest()[:32]
    return {
        "eventID": f"snapshot-{backfill_id}-{digest}",
        "eventName": "INSERT",
        "eventSource": SNAPSHOT_EVENT_SOURCE,
        "eventSourceARN": stream_arn,
        "dynamodb": {
            "ApproximateCreationDateTime": horizon,
            "Keys": dict(keys),
            "NewImage": dict(item),
            "SequenceNumber": sequence_number,
        },
    }


def admits_snapshot_rows(criteria: FilterCriteria, stream_arn: str | None = None) -> bool:
    """Whether some snapshot row may pass ``criteria`` (a mapping's or a group member's
    filters), decided by the runtime's own matcher on a snapshot record as the segment builds
    it (an INSERT, no ``userIdentity``, this ``eventSource``): a pattern on ``userIdentity``
    with ``exists: false`` admits rows, one asking for the TTL service's identity does not.
    What a pattern asks of ``dynamodb`` (keys and images) is known only row by row, so it is
    taken to match here (the segment matches each row whole before handing it over)."""
    row = snapshot_record(
        {}, {}, backfill_id="probe", horizon=1, sequence_number="0", stream_arn=stream_arn
    )
    return not criteria.patterns or any(
        FilterPattern(_without_images(p.pattern)).matches(row) for p in criteria.patterns
    )


def _without_images(pattern: Mapping[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in pattern.items():
        if key == "$or":
            kept[key] = [_without_images(alternative) for alternative in value]
        elif key != _IMAGES:
            kept[key] = value
    return kept
