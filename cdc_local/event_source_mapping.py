"""Lambda's event source mapping (ESM) for a DynamoDB stream, emulated with its synthesized
settings.

The poller reads the stream with the ``dynamodbstreams`` API (DescribeStream, GetShardIterator,
GetRecords) on the local endpoint and invokes the function as Lambda does ("Process DynamoDB
records with Lambda", "Retain discarded records for a DynamoDB event source", "Configuring partial
batch response with DynamoDB and Lambda", "Using event filtering with a DynamoDB event source"):

- ``StartingPosition``: TRIM_HORIZON reads from the oldest record, LATEST from the records written
  after the mapping started.
- ``FilterCriteria``: records that match no pattern are dropped before batching and never reach
  the function; the checkpoint moves past them.
- ``BatchSize`` (default 100) and ``MaximumBatchingWindowInSeconds`` (default 0): a batch is sent
  when it is full, when the window since its first record has passed, or at once with no window;
  a batch never exceeds Lambda's 6 MB payload.
- ``ParallelizationFactor`` (default 1): each shard is split into that many lanes by a hash of the
  partition key, so one item's records stay in order in one lane; lanes progress (and fail)
  independently. Invocations are interleaved lane by lane (see :mod:`cdc_local.functions`).
- A function error (exception, timeout, lost response) fails the whole batch.
- ``FunctionResponseTypes: [ReportBatchItemFailures]``: the response's ``batchItemFailures``
  checkpoints at the lowest reported sequence number; the records before it are done and the
  failed record and everything after it in the batch are retried. An empty or null list (or
  response) is success; a null or empty ``itemIdentifier``, or one that is not a sequence number
  of the batch, fails the whole batch.
- ``BisectBatchOnFunctionError``: a failed batch is split in two and each half retried
  separately, until the bad record is alone; splitting does not consume the retry quota.
- ``MaximumRetryAttempts`` (default -1, infinite): after that many retries the batch is discarded
  and its description sent to the on-failure destination (condition ``RetryAttemptsExhausted``).
  Retries are not spaced: AWS documents no interval between a stream mapping's retries (only
  that the shard waits until the batch succeeds, runs out of retries or ages out), so the
  emulation takes the pessimistic reading and retries as soon as the failed invocation returns.
  A consumer must therefore not count on time passing between retries; the runtime's side
  effects wait for a crashed claim themselves (see ``cdc_consumer.claims``).
- ``MaximumRecordAgeInSeconds`` (default -1, infinite): records older than that (from
  ``ApproximateCreationDateTime``) are not sent to the function but discarded to the destination
  (condition ``RecordAgeExceeded``).
- ``DestinationConfig.OnFailure``: see :mod:`cdc_local.destinations`.
- ``TumblingWindowInSeconds`` (default 0, none): see :mod:`cdc_local.tumbling_windows`
  (``window``, ``state``, ``shardId``, the final invocation of each window, a response
  without ``state`` counted as a failed invocation; refused beside a factor above 1).
- Shards: every shard DescribeStream lists is read, a child (``ParentShardId``) only once its
  parent is read to its end and every record of it settled (and, with a tumbling window, its
  last window's final invocation succeeded), as Lambda processes a parent before its
  children; a shard found later is read from its start. The local endpoint has children once
  a stream's shard rolls over (:mod:`cdc_local.shards`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from cdc_consumer.batch_response import first_failed_index
from cdc_consumer.filter_patterns import FilterCriteria
from cdc_consumer.redrive.stream_reader import to_lambda_record
from cdc_consumer.redrive_shapes import RECORD_AGE_EXCEEDED, RETRY_ATTEMPTS_EXHAUSTED
from cdc_consumer.windows import WINDOW_STATE_KEY

from cdc_local.destinations import FailedInvocation, OnFailureDestination, invocation_record
from cdc_local.exceptions import LocalPipelineError, PipelineStuck
from cdc_local.functions import InvocationResult, LocalFunction
from cdc_local.ttl import TtlLedger
from cdc_local.tumbling_windows import (
    OpenWindow,
    check_tumbling_window,
    has_state,
    iso,
    window_of,
)

#: Lambda's invocation payload limit for synchronous invokes: a batch is cut before it exceeds it.
MAX_PAYLOAD_BYTES = 6 * 1024 * 1024
#: GetRecords returns at most 1,000 records per call (DynamoDB Streams API limit).
GET_RECORDS_LIMIT = 1000
#: With infinite retries, a batch failing this many times in a row makes :meth:`drain` raise
#: instead of spinning: on AWS the shard would block until the records are trimmed (24 h).
STUCK_AFTER_ATTEMPTS = 200


class DeliveryFaults(Protocol):
    def duplicate_delivery(self) -> bool: ...


@dataclass(frozen=True)
class MappingSettings:
    """The ESM properties the emulation follows, with Lambda's defaults for DynamoDB streams."""

    batch_size: int = 100
    maximum_batching_window_seconds: float = 0.0
    starting_position: str = "TRIM_HORIZON"
    bisect_batch_on_function_error: bool = False
    maximum_retry_attempts: int = -1
    maximum_record_age_seconds: int = -1
    report_batch_item_failures: bool = False
    parallelization_factor: int = 1
    filters: FilterCriteria = field(default_factory=FilterCriteria)
    on_failure_arn: str | None = None
    enabled: bool = True
    tumbling_window_seconds: int = 0

    def __post_init__(self) -> None:
        check_tumbling_window(self.tumbling_window_seconds, self.parallelization_factor)

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> MappingSettings:
        """From an ``AWS::Lambda::EventSourceMapping``'s (resolved) properties."""
        if "StartingPositionTimestamp" in properties:
            raise LocalPipelineError(
                "event source mapping property StartingPositionTimestamp is not emulated by the "
                "local pipeline (DynamoDB streams do not support AT_TIMESTAMP)"
            )
        position = properties.get("StartingPosition", "TRIM_HORIZON")
        if position not in ("TRIM_HORIZON", "LATEST"):
            raise LocalPipelineError(
                f"StartingPosition {position!r}: a DynamoDB stream mapping starts at "
                "TRIM_HORIZON or LATEST"
            )
        destination = ((properties.get("DestinationConfig") or {}).get("OnFailure") or {}).get(
            "Destination"
        )
        return cls(
            batch_size=int(properties.get("BatchSize", 100)),
            maximum_batching_window_seconds=float(
                properties.get("MaximumBatchingWindowInSeconds", 0)
            ),
            starting_position=position,
            bisect_batch_on_function_error=bool(
                properties.get("BisectBatchOnFunctionError", False)
            ),
            maximum_retry_attempts=int(properties.get("MaximumRetryAttempts", -1)),
            maximum_record_age_seconds=int(properties.get("MaximumRecordAgeInSeconds", -1)),
            report_batch_item_failures="ReportBatchItemFailures"
            in (properties.get("FunctionResponseTypes") or ()),
            parallelization_factor=int(properties.get("ParallelizationFactor", 1)),
            filters=FilterCriteria.from_properties(properties),
            on_failure_arn=destination,
            enabled=bool(properties.get("Enabled", True)),
            tumbling_window_seconds=int(properties.get("TumblingWindowInSeconds", 0)),
        )


@dataclass
class MappingCounters:
    """What one mapping did; every count is of records unless it says invocations or messages."""

    records_read: int = 0
    records_filtered_out: int = 0
    records_delivered: int = 0
    records_succeeded: int = 0
    records_expired: int = 0
    records_discarded: int = 0
    invocations: int = 0
    #: Of them, final invocations of a tumbling window (no records).
    final_invocations: int = 0
    failed_invocations: int = 0
    partial_failures: int = 0
    bisections: int = 0
    duplicate_deliveries: int = 0
    on_failure_messages: int = 0
    on_failure_records: int = 0

    def event_counts(self) -> dict[str, int]:
        """The counts Lambda publishes as the mapping's event-count metrics (``MetricsConfig``
        ``EventCount``; namespace AWS/Lambda, dimension EventSourceMappingUUID), where this
        emulation counts the same thing: ``DroppedEventCount`` is the records given up on
        (retries exhausted or record age exceeded), ``OnFailureDestinationDeliveredEventCount``
        those of them sent to the on-failure destination."""
        return {
            "PolledEventCount": self.records_read,
            "FilteredOutEventCount": self.records_filtered_out,
            "InvokedEventCount": self.records_delivered,
            "DroppedEventCount": self.records_discarded + self.records_expired,
            "OnFailureDestinationDeliveredEventCount": self.on_failure_records,
        }


@dataclass
class _Lane:
    shard_id: str
    pending: deque[dict[str, Any]] = field(default_factory=deque)
    read_at: deque[float] = field(default_factory=deque)
    #: Sizes of the next batches to send, set by bisection and partial failures.
    planned: deque[int] = field(default_factory=deque)
    attempts: int = 0
    invokes_at_head: int = 0
    last_failure: FailedInvocation | None = None
    #: With a tumbling window: the window the lane's invocations are in, until its final one.
    window: OpenWindow | None = None


class EventSourceMapping:
    """One DynamoDB-stream mapping: :meth:`poll` once, or :meth:`drain` until caught up."""

    def __init__(
        self,
        *,
        name: str,
        stream_arn: str,
        function: LocalFunction,
        settings: MappingSettings,
        streams_client: Any,
        destination: OnFailureDestination | None = None,
        ttl_ledger: TtlLedger | None = None,
        faults: DeliveryFaults | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        stuck_after_attempts: int = STUCK_AFTER_ATTEMPTS,
        track_records: bool = False,
    ) -> None:
        """``track_records`` keeps the sequence number of every record the function acknowledged
        (``acknowledged``), for accounting in tests and the demo; off by default, as the set
        grows with the stream."""
        self.name = name
        self.stream_arn = stream_arn
        self.function = function
        self.settings = settings
        self.streams = streams_client
        self.destination = destination
        self.ttl_ledger = ttl_ledger
        self.faults = faults
        self.clock = clock
        self.sleep = sleep
        self.stuck_after_attempts = stuck_after_attempts
        self.counters = MappingCounters()
        self.acknowledged: set[str] | None = set() if track_records else None
        self._iterators: dict[str, str | None] = {}
        #: Shard id -> its parent (DescribeStream's ParentShardId), for the shards known.
        self._parents: dict[str, str | None] = {}
        #: Set when a shard was found since the last poll (a poll that finds one progressed).
        self._opened = False
        self._lanes: dict[tuple[str, int], _Lane] = {}
        self._partition_key: str | None = None
        self._started = False

    # -- reading -------------------------------------------------------------------------------

    def start(self) -> None:
        """List the table's streams as Lambda does when the mapping starts (so the role must
        allow ``dynamodb:ListStreams``, on ``*``), then take the shard iterators (LATEST means:
        from now on)."""
        self.streams.list_streams(TableName=table_name_of_stream(self.stream_arn))
        description = self._describe()
        self._partition_key = next(
            k["AttributeName"] for k in description["KeySchema"] if k["KeyType"] == "HASH"
        )
        self._discover(description, self.settings.starting_position)
        self._started = True

    def _describe(self) -> dict[str, Any]:
        description: dict[str, Any] = self.streams.describe_stream(StreamArn=self.stream_arn)[
            "StreamDescription"
        ]
        return description

    def _discover(self, description: Mapping[str, Any], position: str = "TRIM_HORIZON") -> None:
        """Take an iterator of each shard not seen before: at ``position`` for the shards there
        when the mapping starts, at the start of the shard for the children opened later."""
        for shard in description["Shards"]:
            shard_id = shard["ShardId"]
            if shard_id not in self._iterators:
                self._parents[shard_id] = shard.get("ParentShardId")
                self._iterators[shard_id] = self.streams.get_shard_iterator(
                    StreamArn=self.stream_arn, ShardId=shard_id, ShardIteratorType=position
                )["ShardIterator"]
                self._opened = True

    def _settled(self, shard_id: str | None) -> bool:
        """Whether ``shard_id`` is read to its end (closed) and every record of it settled (a
        shard the mapping does not know counts as settled)."""
        if shard_id is None or shard_id not in self._iterators:
            return True
        return self._iterators[shard_id] is None and not any(
            lane.pending or lane.window
            for lane in self._lanes.values()
            if lane.shard_id == shard_id
        )

    def read(self) -> int:
        """Read every record now available into the lanes; return how many were read. A child
        shard is read once its parent is read to its end and settled, as Lambda does; a
        closed shard read to its end makes the mapping look for its children. A disabled
        mapping (``Enabled: false``) reads nothing, as Lambda stops polling."""
        if not self.settings.enabled:
            return 0
        if not self._started:
            self.start()
        read, closed = 0, False
        for shard_id, iterator in list(self._iterators.items()):
            if iterator is None or not self._settled(self._parents.get(shard_id)):
                continue
            while iterator:
                response = self.streams.get_records(ShardIterator=iterator, Limit=GET_RECORDS_LIMIT)
                iterator = response.get("NextShardIterator")
                for raw in response["Records"]:
                    self._accept(shard_id, raw)
                read += len(response["Records"])
                if not response["Records"]:
                    break
            self._iterators[shard_id] = iterator
            closed = closed or iterator is None
        if closed:
            self._discover(self._describe())
        return read

    def _accept(self, shard_id: str, raw: Mapping[str, Any]) -> None:
        record = to_lambda_record(raw, self.stream_arn)
        if self.ttl_ledger is not None:
            record = self.ttl_ledger.annotate(self.stream_arn, record)
        self.counters.records_read += 1
        if not self.settings.filters.matches(record):
            self.counters.records_filtered_out += 1
            if self.ttl_ledger is not None:
                self.ttl_ledger.filtered_out(self.name, record)
            return
        lane = self._lane(shard_id, record)
        lane.pending.append(record)
        lane.read_at.append(self.clock())

    def _lane(self, shard_id: str, record: Mapping[str, Any]) -> _Lane:
        factor = max(1, self.settings.parallelization_factor)
        index = 0
        if factor > 1:
            key = self._partition_value(record)
            index = int.from_bytes(hashlib.md5(key.encode()).digest()[:8], "big") % factor
        return self._lanes.setdefault((shard_id, index), _Lane(shard_id))

    # -- what differs between sources (KinesisEventSourceMapping overrides these) -----------------

    def _sequence_number(self, record: Mapping[str, Any]) -> str:
        """The record's item identifier in ``batchItemFailures``."""
        return str(record["dynamodb"]["SequenceNumber"])

    def _created_at(self, record: Mapping[str, Any]) -> float:
        """Epoch seconds the record's age counts from (``MaximumRecordAgeInSeconds``)."""
        return float(record["dynamodb"]["ApproximateCreationDateTime"])

    def _partition_value(self, record: Mapping[str, Any]) -> str:
        """What picks the record's lane under ``ParallelizationFactor``: its partition key."""
        return json.dumps(record["dynamodb"]["Keys"].get(self._partition_key), sort_keys=True)

    def _invocation_record(
        self,
        records: Sequence[Mapping[str, Any]],
        condition: str,
        shard_id: str,
        failure: FailedInvocation,
        now: float,
    ) -> dict[str, Any]:
        """The on-failure destination's message for a discarded batch."""
        return invocation_record(
            records=records,
            condition=condition,
            function_arn=self.function.arn,
            shard_id=shard_id,
            stream_arn=self.stream_arn,
            failure=failure,
            now=now,
        )

    # -- processing ----------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        return sum(len(lane.pending) for lane in self._lanes.values())

    def poll(self, *, flush: bool = False) -> bool:
        """Read the stream, then give each lane one turn. ``flush`` sends batches whose window
        has not yet passed. Returns whether anything was read or sent."""
        self._opened = False
        progressed = self.read() > 0 or self._opened
        for lane in list(self._lanes.values()):
            progressed = self._turn(lane, flush) or progressed
        return progressed

    def drain(self, *, flush_windows: bool = False) -> None:
        """Poll until the stream is read to its end and every lane is empty.

        Batching windows are waited out (``sleep``) unless ``flush_windows`` is set.
        """
        while True:
            if self.poll(flush=flush_windows):
                continue
            if not self.pending:
                return
            self.sleep(self._time_to_next_window())

    def _time_to_next_window(self) -> float:
        window = self.settings.maximum_batching_window_seconds
        waits = [
            lane.read_at[0] + window - self.clock() for lane in self._lanes.values() if lane.pending
        ]
        return max(0.001, min(waits, default=0.001))

    def _turn(self, lane: _Lane, flush: bool) -> bool:
        if self._window_over(lane):
            self._invoke_final(lane)
            return True
        if not lane.pending:
            return False
        if self._discard_expired(lane):
            return True
        size = lane.planned[0] if lane.planned else self.settings.batch_size
        taken = _take(lane.pending, size)
        batch = self._in_one_window(taken)
        window = self.settings.maximum_batching_window_seconds
        if (
            not flush
            and not lane.planned
            and len(lane.pending) < size
            and len(batch) == len(taken)  # a batch cut where the next window starts is whole
            and self.clock() - lane.read_at[0] < window
        ):
            return False
        self._invoke(lane, batch)
        return True

    # -- tumbling windows (cdc_local.tumbling_windows) ------------------------------------------

    def _window_start(self, record: Mapping[str, Any]) -> float:
        return window_of(self._created_at(record), self.settings.tumbling_window_seconds)[0]

    def _in_one_window(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``batch`` up to the first record of a later window (all of it without a window)."""
        if not self.settings.tumbling_window_seconds:
            return batch
        start = self._window_start(batch[0])
        for index, record in enumerate(batch):
            if self._window_start(record) != start:
                return batch[:index]
        return batch

    def _window_over(self, lane: _Lane) -> bool:
        """Whether the lane's open window is over and settled: its next record is of another
        window; or none is pending and the window's end has passed or its shard has ended. A
        window open when the mapping's window is taken off (its settings changed) ends without
        a final invocation: AWS does not say whether it sends one."""
        if lane.window is not None and not self.settings.tumbling_window_seconds:
            lane.window = None
        if lane.window is None:
            return False
        if lane.pending:
            return self._window_start(lane.pending[0]) != lane.window.start
        return self.clock() >= lane.window.end or self._iterators.get(lane.shard_id, "") is None

    def _invoke_final(self, lane: _Lane) -> None:
        """The window's final invocation: retried until it succeeds, the shard waiting."""
        assert lane.window is not None
        result = self.function.invoke(
            lane.window.event([], lane.shard_id, self.stream_arn, final=True)
        )
        self.counters.invocations += 1
        self.counters.final_invocations += 1
        if not result.failed and has_state(result.response):
            lane.window = None
            return
        self.counters.failed_invocations += 1
        lane.window.final_attempts += 1
        if lane.window.final_attempts >= self.stuck_after_attempts:
            raise PipelineStuck(
                f"mapping {self.name}: the final invocation of the window from "
                f"{iso(lane.window.start)} "
                f"of shard {lane.shard_id} failed {lane.window.final_attempts} times in a row; "
                "Lambda suspends the shard until it succeeds. Last result: "
                f"{_failure_of(result)}"
            )

    def _event(self, lane: _Lane, batch: list[dict[str, Any]]) -> dict[str, Any]:
        """The invocation's event: the records, and with a tumbling window the window's
        fields (a window opens with the first batch of it, in a fresh state)."""
        length = self.settings.tumbling_window_seconds
        if not length:
            return {"Records": batch}
        start, end = window_of(self._created_at(batch[0]), length)
        if lane.window is None or lane.window.start != start:
            lane.window = OpenWindow(start, end)
        return lane.window.event(batch, lane.shard_id, self.stream_arn)

    def _windowed_result(self, lane: _Lane, result: InvocationResult) -> InvocationResult:
        """With a window: a response without ``state`` is a failed invocation; one with it
        passes its state to the window's next invocation."""
        if lane.window is None or result.failed:
            return result
        if not has_state(result.response):
            return replace(
                result,
                error_type="MissingWindowState",
                error_message="a tumbling window's response must carry state; this one has none",
            )
        lane.window.state = dict(result.response[WINDOW_STATE_KEY])
        return result

    # -- invoking ------------------------------------------------------------------------------

    def _invoke(self, lane: _Lane, batch: list[dict[str, Any]]) -> None:
        event = self._event(lane, batch)
        result = self._windowed_result(lane, self.function.invoke(event))
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
        if result.failed and self.settings.bisect_batch_on_function_error and len(batch) > 1:
            # Split in two, each half retried on its own; splitting does not consume retries.
            self.counters.bisections += 1
            if lane.planned:
                lane.planned.popleft()
            half = len(batch) // 2
            lane.planned.extendleft([len(batch) - half, half])  # sends `half` first
            return
        lane.attempts += 1
        if lane.planned:
            lane.planned[0] = len(batch)  # the retry is this same batch
        else:
            lane.planned.append(len(batch))
        retries = self.settings.maximum_retry_attempts
        if 0 <= retries < lane.attempts:
            self._discard(lane, len(batch), RETRY_ATTEMPTS_EXHAUSTED)
        elif retries < 0 and lane.attempts >= self.stuck_after_attempts:
            raise PipelineStuck(
                f"mapping {self.name}: the batch starting at sequence number "
                f"{self._sequence_number(batch[0])} failed {lane.attempts} times in a row "
                "and MaximumRetryAttempts is -1 (retry forever): on AWS this blocks the shard "
                "until the "
                "records are trimmed (24 h). Set finite retries, or fix the handler; last error: "
                f"{result.error_type}: {result.error_message}"
            )

    def _failed_index(
        self, result: InvocationResult, batch: Sequence[Mapping[str, Any]]
    ) -> int | None:
        """None if the batch succeeded, else the index of the first record to retry (0 = all)."""
        if result.failed:
            return 0
        if not self.settings.report_batch_item_failures:
            return None
        index, _ = first_failed_index(
            result.response, [self._sequence_number(record) for record in batch]
        )
        return index

    def _succeeded(self, lane: _Lane, records: Sequence[Mapping[str, Any]]) -> None:
        _drop(lane, len(records))
        if self.acknowledged is not None:
            self.acknowledged.update(self._sequence_number(r) for r in records)
        self.counters.records_succeeded += len(records)
        if lane.planned:
            lane.planned[0] -= len(records)
            if lane.planned[0] <= 0:
                lane.planned.popleft()
        lane.attempts = 0
        lane.invokes_at_head = 0
        lane.last_failure = None

    def _discard_expired(self, lane: _Lane) -> bool:
        max_age = self.settings.maximum_record_age_seconds
        if max_age < 0:
            return False
        now = self.clock()
        expired = 0
        for record in lane.pending:
            if now - self._created_at(record) <= max_age:
                break
            expired += 1
        if not expired:
            return False
        for start in range(0, expired, self.settings.batch_size):
            self._discard(lane, min(self.settings.batch_size, expired - start), RECORD_AGE_EXCEEDED)
        lane.planned.clear()
        return True

    def _discard(self, lane: _Lane, count: int, condition: str) -> None:
        records = [lane.pending[i] for i in range(count)]
        _drop(lane, count)
        if condition == RECORD_AGE_EXCEEDED:
            self.counters.records_expired += count
        else:
            self.counters.records_discarded += count
        if lane.planned:
            lane.planned.popleft()
        failure = lane.last_failure or FailedInvocation(None, None, None, lane.invokes_at_head)
        lane.attempts = 0
        lane.invokes_at_head = 0
        lane.last_failure = None
        if self.destination is None:
            return  # no destination: AWS drops the records silently
        now = self.clock()
        message = self._invocation_record(records, condition, lane.shard_id, failure, now)
        self.destination.send(message, {"Records": records}, now)
        self.counters.on_failure_messages += 1
        self.counters.on_failure_records += count


def _take(pending: deque[dict[str, Any]], size: int) -> list[dict[str, Any]]:
    batch: list[dict[str, Any]] = []
    payload = len('{"Records": []}')
    for record in pending:
        if len(batch) >= size:
            break
        payload += len(json.dumps(record)) + 2
        if batch and payload > MAX_PAYLOAD_BYTES:
            break
        batch.append(record)
    return batch


def _failure_of(result: InvocationResult) -> str:
    if result.failed:
        return f"{result.error_type}: {result.error_message}"
    return f"a response without state: {json.dumps(result.response, default=str)[:200]}"


def _drop(lane: _Lane, count: int) -> None:
    for _ in range(count):
        lane.pending.popleft()
        lane.read_at.popleft()


def table_name_of_stream(stream_arn: str) -> str:
    """The table name in a DynamoDB stream ARN (``arn:...:table/<name>/stream/<label>``)."""
    return stream_arn.split(":table/", 1)[-1].split("/stream/", 1)[0]
