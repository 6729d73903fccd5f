"""The segment function's entry point (:data:`cdc_consumer.contract.BACKFILL_HANDLER`)."""

from __future__ import annotations

from typing import Any

from cdc_consumer.contract import BackfillRequest, SegmentTask

__all__ = ["handler"]


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A :class:`~cdc_consumer.contract.BackfillRequest` (the start step) returns a
    :class:`~cdc_consumer.contract.BackfillPlan`; a :class:`~cdc_consumer.contract.SegmentTask`
    returns a :class:`~cdc_consumer.contract.SegmentResult`."""
    if SegmentTask.is_task(event):
        SegmentTask.from_dict(event)
    else:
        BackfillRequest.from_dict(event)
    raise NotImplementedError("the segment worker lands next (issue 25)")
