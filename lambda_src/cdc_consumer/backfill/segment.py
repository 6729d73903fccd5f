"""One segment invocation: scan pages of one parallel-scan segment, hand them to the consumer.

Each page: wait for the rate limit, ``Scan`` (``Segment``/``TotalSegments``,
``ConsistentRead=True``, ``Limit`` the page size, ``ExclusiveStartKey`` the resume point; the
client retries throttling in botocore's adaptive mode), invoke the consumer function with the
page's items as snapshot records (one or more synchronous invocations below the payload limit),
retry the records it reports failed with backoff, then write the segment's progress record.
Only then is the page done: a crash before it leaves the page to the next invocation, whose
rows are no-ops where they were applied (versions, markers). Near the deadline the invocation
stops before a page and returns ``done: false`` with the resume point.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.backfill import defaults
from cdc_consumer.backfill.checks import check_segments
from cdc_consumer.backfill.horizon import check_horizon_value
from cdc_consumer.backfill.progress_store import ProgressStore
from cdc_consumer.backfill.rate import RateLimit
from cdc_consumer.backfill.settings import BackfillSettings
from cdc_consumer.backfill.shapes import (
    BACKFILL_EVENT_KEY,
    SegmentProgress,
    SegmentResult,
    SegmentTask,
    SnapshotBatch,
)
from cdc_consumer.exceptions import (
    BackfillError,
    BackfillRefusedError,
    InvocationError,
    SnapshotRefusedError,
)
from cdc_consumer.filter_patterns import FilterCriteria
from cdc_consumer.redrive.invokers import Invoker
from cdc_consumer.snapshots import snapshot_record
from cdc_consumer.wire import binary_from_wire, to_wire

__all__ = ["PageOutcome", "SegmentRun"]


@dataclass
class PageOutcome:
    """What one page's hand-over took: consumer invocations retried, records quarantined."""

    retries: int = 0
    quarantined: int = 0


@dataclass
class SegmentRun:
    """Runs :class:`SegmentTask` invocations of one segment function."""

    settings: BackfillSettings
    dynamodb: Any
    invoker: Invoker
    progress: ProgressStore
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    remaining_ms: Callable[[], int | None] = lambda: None
    key_names: tuple[str, ...] = ()
    #: What this invocation did (its metrics): items and pages handed over, retried invokes.
    items_handled: int = field(default=0)
    pages_handled: int = field(default=0)
    retries: int = field(default=0)
    criteria: FilterCriteria = field(init=False)

    def __post_init__(self) -> None:
        self.criteria = FilterCriteria(list(self.settings.filters), where="consumer filters")

    def run(self, task: SegmentTask) -> SegmentResult:
        check_segments(task.segment, task.total_segments)
        check_horizon_value(task.horizon)
        done = self.progress.load(task)
        if done.done:
            return _result(task, done)
        if not self.key_names:
            self.key_names = self._key_names()
        reserve_ms = self.settings.reserve_for(self.remaining_ms()) * 1000
        limit = RateLimit(
            self.settings.items_per_second, self.clock, self.sleep, self.settings.page_size
        )
        state = done
        while True:
            remaining = self.remaining_ms()
            if remaining is not None and remaining < reserve_ms:
                return _result(task, state)  # done: false, resume where the record says
            limit.wait()
            page = self._scan(task, state.resume_key)
            items = page.get("Items", [])
            outcome = self.hand_over(task, state.pages, items)
            limit.took(len(items))
            self.items_handled += len(items)
            self.pages_handled += 1
            resume = page.get("LastEvaluatedKey")
            state = SegmentProgress(
                to_wire(resume) if resume else None,
                resume is None,
                state.items + len(items),
                state.pages + 1,
                state.quarantined + outcome.quarantined,
            )
            self.progress.save(task, state)
            if state.done:
                return _result(task, state)

    def _key_names(self) -> tuple[str, ...]:
        table = self.dynamodb.describe_table(TableName=self.settings.table)["Table"]
        return tuple(key["AttributeName"] for key in table["KeySchema"])

    def _scan(self, task: SegmentTask, start: Any) -> dict[str, Any]:
        request: dict[str, Any] = {
            "TableName": self.settings.table,
            "Segment": task.segment,
            "TotalSegments": task.total_segments,
            "ConsistentRead": True,
            "Limit": self.settings.page_size,
        }
        if start:
            request["ExclusiveStartKey"] = _from_wire(start)
        return self.dynamodb.scan(**request)  # type: ignore[no-any-return]

    def hand_over(self, task: SegmentTask, page: int, items: list[Any]) -> PageOutcome:
        """Every item of the page applied by the consumer (or quarantined by it), or raise."""
        records = [
            snapshot_record(
                image,
                {name: image[name] for name in self.key_names},
                backfill_id=task.backfill_id,
                horizon=task.horizon,
                sequence_number=f"{page:010d}{index:06d}",
                stream_arn=self.settings.stream_arn,
            )
            for index, image in enumerate(to_wire(items))
        ]
        records = [record for record in records if self.criteria.matches(record)]
        consumer = self.settings.consumer
        batch = SnapshotBatch(task.backfill_id, task.horizon, task.segment, consumer=consumer)
        outcome = PageOutcome()
        for chunk in _chunks(records):
            self._apply(chunk, batch.to_dict(), outcome)
        return outcome

    def _apply(self, records: list[Any], batch: dict[str, Any], outcome: PageOutcome) -> None:
        """Invoke the consumer until it has taken ``records`` (retrying what it reports)."""
        todo = records
        for attempt in range(defaults.PAGE_ATTEMPTS):
            if attempt:
                outcome.retries += 1
                self.retries += 1
                self.sleep(defaults.BACKOFF_SECONDS * 2 ** (attempt - 1))
            try:
                response = self.invoker.invoke({"Records": todo, BACKFILL_EVENT_KEY: batch})
            except InvocationError as error:
                if error.error_type == SnapshotRefusedError.__name__:
                    raise BackfillRefusedError(str(error)) from error
                last: Any = error
                continue
            response = response or {}
            outcome.quarantined += int(response.get(BACKFILL_EVENT_KEY, {}).get("quarantined", 0))
            failed = [f["itemIdentifier"] for f in response.get("batchItemFailures", [])]
            if not failed:
                return
            numbers = [r["dynamodb"]["SequenceNumber"] for r in todo]
            todo = todo[numbers.index(failed[0]) :] if failed[0] in numbers else todo
            last = f"the consumer reported record {failed[0]} failed"
        raise BackfillError(
            f"the consumer did not take {len(todo)} snapshot record(s) after "
            f"{defaults.PAGE_ATTEMPTS} attempts ({last}); the segment resumes from its last "
            "applied page when retried"
        )


def _result(task: SegmentTask, state: SegmentProgress) -> SegmentResult:
    resumed = SegmentTask(
        task.backfill_id, task.segment, task.total_segments, task.horizon, state.resume_key
    )
    return SegmentResult(resumed, state.done, state.items, state.pages, state.quarantined)


def _chunks(records: list[Any]) -> list[list[Any]]:
    """``records`` cut so that each invocation's payload stays below the limit."""
    chunks: list[list[Any]] = [[]]
    size = 0
    for record in records:
        record_size = len(json.dumps(record))
        if chunks[-1] and size + record_size > defaults.INVOKE_MAX_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(record)
        size += record_size
    return chunks if chunks[0] else []


def _from_wire(key: Any) -> Any:
    """A resume key (wire form: binary as base64 text) as boto3's client takes it."""

    def value(attribute: Any) -> Any:
        if isinstance(attribute, dict) and set(attribute) == {"B"}:
            return {"B": binary_from_wire(attribute["B"])}
        return attribute

    return {name: value(attribute) for name, attribute in key.items()}
