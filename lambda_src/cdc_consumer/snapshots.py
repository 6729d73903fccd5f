"""Snapshot changes: a backfill's table rows as the consumer sees them (docs/backfill.md).

A backfill scans the table after a *horizon* H and hands each item to the consumer as a
snapshot record: a stream-shaped INSERT (``eventSource`` :data:`SNAPSHOT_EVENT_SOURCE`) whose
NEW image is the item read, in an event marked by ``cdcBackfill``
(:class:`~cdc_consumer.contract.SnapshotBatch`). The runtime decodes it as a
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

from cdc_consumer.change import Change
from cdc_consumer.contract import SNAPSHOT_EVENT_SOURCE
from cdc_consumer.versions import MICROSECONDS_PER_SECOND, snapshot_version

__all__ = ["SnapshotChange", "item_key", "snapshot_record"]


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


def item_key(item: Mapping[str, Any], key_names: tuple[str, ...]) -> dict[str, Any]:
    """The key attributes of a scanned item (DynamoDB JSON)."""
    return {name: item[name] for name in key_names}


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


def horizon_us(horizon: int) -> int:
    """A horizon (epoch seconds) in microseconds."""
    return horizon * MICROSECONDS_PER_SECOND
