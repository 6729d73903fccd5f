"""Invoking the function with a lane's head batch and settling the outcome, as Lambda's event
source mapping does for a stream (the rules: :mod:`cdc_local.event_source_mapping`): success,
a partial batch response, bisection, retries, records discarded to the on-failure destination
(retries exhausted, record age exceeded), duplicate deliveries injected, and a tumbling window's
windowed and final invocations.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cdc_consumer.batch_response import first_failed_index
from cdc_consumer.redrive_shapes import RECORD_AGE_EXCEEDED, RETRY_ATTEMPTS_EXHAUSTED

from cdc_local.destinations import FailedInvocation, OnFailureDestination
from cdc_local.exceptions import PipelineStuck
from cdc_local.functions import InvocationResult, LocalFunction
from cdc_local.lanes import Lane
from cdc_local.mapping_settings import MappingCounters, MappingSettings
from cdc_local.routes.protocol import Source
from cdc_local.tumbling_windows import has_state, iso, window_for

__all__ = ["STUCK_AFTER_ATTEMPTS", "DeliveryFaults", "LaneInvoker"]

#: With infinite retries, a batch failing this many times in a row makes the mapping raise
#: instead of spinning: on AWS the shard would block until the records are trimmed (24 h).
STUCK_AFTER_ATTEMPTS = 200


class DeliveryFaults(Protocol):
    def duplicate_delivery(self) -> bool: ...


@dataclass
class LaneInvoker:
    """Sends one mapping's batches (``settings``: the mapping's, read at each call)."""

    name: str
    source: Source
    function: LocalFunction
    settings: Callable[[], MappingSettings]
    counters: MappingCounters
    destination: OnFailureDestination | None
    faults: DeliveryFaults | None
    clock: Callable[[], float]
    stuck_after_attempts: int = STUCK_AFTER_ATTEMPTS
    #: With ``track_records``: the sequence numbers the function acknowledged.
    acknowledged: set[str] | None = None
    #: With ``track_records``: the table changes (eventIDs) the function acknowledged.
    acknowledged_changes: set[str] = field(default_factory=set)

    def invoke(self, lane: Lane, batch: list[dict[str, Any]]) -> None:
        """Invoke the function with ``batch``, the head of ``lane``, and settle the outcome."""
        event = self._event(lane, batch)
        result = self.function.invoke(event)
        if lane.window is not None:
            result = lane.window.answered(result)
        self.counters.invocations += 1
        self.counters.records_delivered += len(batch)
        lane.invokes_at_head += 1
        failed_at = self._failed_index(result, batch)
        if failed_at is None:
            self._succeeded(lane, batch)
            if self.faults is not None and self.faults.duplicate_delivery():
                # At-least-once: the same batch again, as after a checkpoint that was not saved.
                self.counters.duplicate_deliveries += 1
                self.counters.invocations += 1
                self.counters.records_delivered += len(batch)
                self.function.invoke(event)
            return
        if result.failed:
            self.counters.failed_invocations += 1
        else:
            self.counters.partial_failures += 1
        if failed_at > 0:  # the records before the lowest reported failure are done
            self._succeeded(lane, batch[:failed_at])
            lane.invokes_at_head = 1
            batch = batch[failed_at:]
        lane.last_failure = FailedInvocation(
            request_id=result.request_id,
            status_code=200,
            function_error="Unhandled" if result.failed else None,
            invoke_count=lane.invokes_at_head,
        )
        self._failed(lane, batch, result)

    def _failed(self, lane: Lane, batch: list[dict[str, Any]], result: InvocationResult) -> None:
        """The head ``batch`` failed: bisect it, retry it, or give it up."""
        settings = self.settings()
        if result.failed and settings.bisect_batch_on_function_error and len(batch) > 1:
            self.counters.bisections += 1
            lane.bisect(len(batch))
            return
        lane.retry(len(batch))
        retries = settings.maximum_retry_attempts
        if 0 <= retries < lane.attempts:
            self._discard(lane, len(batch), RETRY_ATTEMPTS_EXHAUSTED)
        elif retries < 0 and lane.attempts >= self.stuck_after_attempts:
            raise PipelineStuck(
                f"mapping {self.name}: the batch starting at sequence number "
                f"{self.source.sequence_number(batch[0])} failed {lane.attempts} times in a row "
                "and MaximumRetryAttempts is -1 (retry forever): on AWS this blocks the shard "
                "until the records are trimmed (24 h). Set finite retries, or fix the handler; "
                f"last error: {result.error_type}: {result.error_message}"
            )

    def invoke_final(self, lane: Lane) -> None:
        """The lane's window's final invocation: retried until it succeeds, the shard waiting."""
        window = lane.window
        assert window is not None
        result = self.function.invoke(window.event([], lane.shard_id, self.source.arn, final=True))
        self.counters.invocations += 1
        self.counters.final_invocations += 1
        if not result.failed and has_state(result.response):
            lane.window = None
            return
        self.counters.failed_invocations += 1
        window.final_attempts += 1
        if window.final_attempts >= self.stuck_after_attempts:
            raise PipelineStuck(
                f"mapping {self.name}: the final invocation of the window from "
                f"{iso(window.start)} of shard {lane.shard_id} failed {window.final_attempts} "
                "times in a row; Lambda suspends the shard until it succeeds. Last result: "
                f"{_failure_of(result)}"
            )

    def discard_expired(self, lane: Lane) -> bool:
        """Discard the records at the head of ``lane`` older than ``MaximumRecordAgeInSeconds``
        to the destination, in batches of ``BatchSize``; whether there were any."""
        settings = self.settings()
        if settings.maximum_record_age_seconds < 0:
            return False
        expired = lane.expired(
            self.clock(), settings.maximum_record_age_seconds, self.source.created_at
        )
        for start in range(0, expired, settings.batch_size):
            self._discard(lane, min(settings.batch_size, expired - start), RECORD_AGE_EXCEEDED)
        if expired:
            lane.planned.clear()
        return expired > 0

    def _event(self, lane: Lane, batch: list[dict[str, Any]]) -> dict[str, Any]:
        """The invocation's event: the records, and with a tumbling window the window's
        fields."""
        length = self.settings().tumbling_window_seconds
        if not length:
            return {"Records": batch}
        lane.window = window_for(lane.window, self.source.created_at(batch[0]), length)
        return lane.window.event(batch, lane.shard_id, self.source.arn)

    def _failed_index(
        self, result: InvocationResult, batch: Sequence[Mapping[str, Any]]
    ) -> int | None:
        """None if the batch succeeded, else the index of the first record to retry (0 = all)."""
        if result.failed:
            return 0
        if not self.settings().report_batch_item_failures:
            return None
        index, _ = first_failed_index(
            result.response, [self.source.sequence_number(record) for record in batch]
        )
        return index

    def _succeeded(self, lane: Lane, records: Sequence[Mapping[str, Any]]) -> None:
        lane.done(len(records))
        self.counters.records_succeeded += len(records)
        if self.acknowledged is not None:
            self.acknowledged.update(self.source.sequence_number(r) for r in records)
            changes = (self.source.change_id(r) for r in records)
            self.acknowledged_changes.update(c for c in changes if c is not None)

    def _discard(self, lane: Lane, count: int, condition: str) -> None:
        records, failure = lane.give_up(count)
        if condition == RECORD_AGE_EXCEEDED:
            self.counters.records_expired += count
        else:
            self.counters.records_discarded += count
        if self.destination is None:
            return  # no destination: AWS drops the records silently
        now = self.clock()
        message = self.source.failure_record(
            records,
            condition=condition,
            function_arn=self.function.arn,
            shard_id=lane.shard_id,
            failure=failure,
            now=now,
        )
        self.destination.send(message, {"Records": records}, now)
        self.counters.on_failure_messages += 1
        self.counters.on_failure_records += count


def _failure_of(result: InvocationResult) -> str:
    if result.failed:
        return f"{result.error_type}: {result.error_message}"
    return f"a response without state: {json.dumps(result.response, default=str)[:200]}"
