"""Lambda's event source mapping (ESM) for a stream, emulated with its synthesized settings: one
mapping for every route (:mod:`cdc_local.routes`: a DynamoDB stream, a Kinesis stream).

The poller reads the route's source on the local endpoint with its API (its shards,
GetShardIterator, GetRecords: :mod:`cdc_local.shard_reader`) and invokes the function as Lambda
does ("Process DynamoDB records with Lambda", "Retain discarded records for a DynamoDB event
source", "Configuring partial batch response with DynamoDB and Lambda", "Using event filtering
with a DynamoDB event source", and the same pages for Kinesis); the route says how a record is
shaped, identified, aged, filtered and described to the on-failure destination:

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
- ``MaximumRecordAgeInSeconds`` (default -1, infinite): records older than that (from the
  time the route counts a record's age from: a DynamoDB record's creation, a Kinesis record's
  arrival) are not sent to the function but discarded to the destination (condition
  ``RecordAgeExceeded``).
- ``DestinationConfig.OnFailure``: see :mod:`cdc_local.destinations`.
- ``TumblingWindowInSeconds`` (default 0, none): see :mod:`cdc_local.tumbling_windows`
  (``window``, ``state``, ``shardId``, the final invocation of each window, a response
  without ``state`` counted as a failed invocation; refused beside a factor above 1).
- Shards: every shard the source lists is read, a child (``ParentShardId``) only once its
  parent is read to its end and every record of it settled (and, with a tumbling window, its
  last window's final invocation succeeded), as Lambda processes a parent before its
  children; a shard found later is read from its start. The local endpoint has children once
  a stream's shard rolls over (:mod:`cdc_local.shards`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from cdc_local.destinations import OnFailureDestination
from cdc_local.functions import LocalFunction
from cdc_local.invocations import STUCK_AFTER_ATTEMPTS, DeliveryFaults, LaneInvoker
from cdc_local.lanes import MAX_PAYLOAD_BYTES, Lane, lane_index
from cdc_local.mapping_settings import MappingCounters, MappingSettings
from cdc_local.routes.protocol import Source
from cdc_local.shard_reader import ShardReader
from cdc_local.ttl import TtlLedger
from cdc_local.tumbling_windows import in_one_window, window_of

__all__ = [
    "MAX_PAYLOAD_BYTES",
    "STUCK_AFTER_ATTEMPTS",
    "EventSourceMapping",
    "MappingCounters",
    "MappingSettings",
]


class EventSourceMapping:
    """One mapping of a route's ``source``: :meth:`poll` once, or :meth:`drain` until caught
    up."""

    def __init__(
        self,
        *,
        name: str,
        source: Source,
        function: LocalFunction,
        settings: MappingSettings,
        destination: OnFailureDestination | None = None,
        ttl_ledger: TtlLedger | None = None,
        faults: DeliveryFaults | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        stuck_after_attempts: int = STUCK_AFTER_ATTEMPTS,
        track_records: bool = False,
    ) -> None:
        """``track_records`` keeps the sequence number of every record the function acknowledged
        (``acknowledged``), and the table change each carried (``acknowledged_changes``), for
        accounting in tests and the demo; off by default, as the sets grow with the stream."""
        self.name = name
        self.source = source
        self.stream_arn = source.arn
        self.function = function
        self.settings = settings
        self.destination = destination
        self.ttl_ledger = ttl_ledger
        self.clock = clock
        self.sleep = sleep
        self.counters = MappingCounters()
        self.invoker = LaneInvoker(
            name=name,
            source=source,
            function=function,
            settings=lambda: self.settings,
            counters=self.counters,
            destination=destination,
            faults=faults,
            clock=clock,
            stuck_after_attempts=stuck_after_attempts,
            acknowledged=set() if track_records else None,
        )
        self.acknowledged = self.invoker.acknowledged
        self.acknowledged_changes = self.invoker.acknowledged_changes
        self.reader = ShardReader(source)
        #: Set when a shard was found since the last poll (a poll that finds one progressed).
        self._opened = False
        self._lanes: dict[tuple[str, int], Lane] = {}
        self._started = False

    # -- reading -------------------------------------------------------------------------------

    def start(self) -> None:
        """Make the calls Lambda makes when the mapping starts (the route's), then take the
        shard iterators (LATEST means: from now on)."""
        self.source.start()
        self._opened = self.reader.discover(self.settings.starting_position) > 0 or self._opened
        self._started = True

    def read(self) -> int:
        """Read every record now available into the lanes; return how many were read. A child
        shard is read once its parent is read to its end and settled, as Lambda does; a
        closed shard read to its end makes the mapping look for its children. A disabled
        mapping (``Enabled: false``) reads nothing, as Lambda stops polling."""
        if not self.settings.enabled:
            return 0
        if not self._started:
            self.start()
        read, found = self.reader.read(self._accept, self._settled)
        self._opened = self._opened or found > 0
        return read

    def _settled(self, shard_id: str | None) -> bool:
        """Whether ``shard_id`` is read to its end (closed) and every record of it settled (a
        shard the mapping does not know counts as settled)."""
        return self.reader.read_to_end(shard_id) and not any(
            lane.holds() for lane in self._lanes.values() if lane.shard_id == shard_id
        )

    def _accept(self, shard_id: str, raw: Mapping[str, Any]) -> None:
        record = self.source.record(shard_id, raw)
        self.counters.records_read += 1
        if not self.settings.filters.matches(self.source.filter_view(record)):
            self.counters.records_filtered_out += 1
            if self.ttl_ledger is not None:
                self.ttl_ledger.filtered_out(self.name, record)
            return
        factor = self.settings.parallelization_factor
        index = lane_index(self.source.partition_value(record), factor) if factor > 1 else 0
        self._lanes.setdefault((shard_id, index), Lane(shard_id)).add(record, self.clock())

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

    def _turn(self, lane: Lane, flush: bool) -> bool:
        if self._window_over(lane):
            self.invoker.invoke_final(lane)
            return True
        if not lane.pending:
            return False
        if self.invoker.discard_expired(lane):
            return True
        size = lane.next_size(self.settings.batch_size)
        taken = lane.take(size)
        batch = in_one_window(taken, self.settings.tumbling_window_seconds, self.source.created_at)
        window = self.settings.maximum_batching_window_seconds
        if (
            not flush
            and not lane.planned
            and len(lane.pending) < size
            and len(batch) == len(taken)  # a batch cut where the next window starts is whole
            and self.clock() - lane.read_at[0] < window
        ):
            return False
        self.invoker.invoke(lane, batch)
        return True

    def _window_over(self, lane: Lane) -> bool:
        """Whether the lane's open tumbling window is over and settled: its next record is of
        another window; or none is pending and the window's end has passed or its shard has
        ended. A window open when the mapping's window is taken off (its settings changed)
        ends without a final invocation: AWS does not say whether it sends one."""
        length = self.settings.tumbling_window_seconds
        if lane.window is not None and not length:
            lane.window = None
        if lane.window is None:
            return False
        if lane.pending:
            return (
                window_of(self.source.created_at(lane.pending[0]), length)[0] != lane.window.start
            )
        return self.clock() >= lane.window.end or self.reader.read_to_end(lane.shard_id)
