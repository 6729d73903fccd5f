"""The local mapping's tumbling windows (``TumblingWindowInSeconds``), against what AWS's Lambda
guide says of them (cdc_local/tumbling_windows.py; docs/design.md §12)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from cdc_local.event_source_mapping import MappingSettings
from cdc_local.exceptions import LocalPipelineError, PipelineStuck
from cdc_local.runner import LocalPipeline
from tests.cdc_local import recorder
from tests.cdc_local.helpers import put, queue_messages, stream_sequence_numbers

#: The Tumbling stack's window (tests/cdc_local/stacks.py).
WINDOW = 60
#: A window start on the tests' clock (2026-01-01T00:00:00Z).
T0 = 1_767_225_600.0


class Clock:
    """The pipeline's clock, set by the test (epoch seconds). The local streams stamp each
    record with it (``ApproximateCreationDateTime``: cdc_local/retention.py), so the test
    chooses which window each record falls in."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def tumbling(pipeline_for: Callable[..., LocalPipeline]) -> Callable[[Clock], LocalPipeline]:
    return lambda clock: pipeline_for("Tumbling", clock=clock, flush_windows=True)


def events() -> list[dict[str, Any]]:
    return [invocation.event for invocation in recorder.INVOCATIONS]


def stream_arn(pipeline: LocalPipeline) -> str:
    arn: str = pipeline.client("dynamodb").describe_table(TableName=pipeline.table_name("Items"))[
        "Table"
    ]["LatestStreamArn"]
    return arn


def shard_ids(pipeline: LocalPipeline) -> list[str]:
    shards = pipeline.client("dynamodbstreams").describe_stream(StreamArn=stream_arn(pipeline))[
        "StreamDescription"
    ]["Shards"]
    return [shard["ShardId"] for shard in shards]


def test_each_invocation_carries_its_window_shard_and_the_state_the_last_one_returned(
    tumbling: Callable[[Clock], LocalPipeline],
) -> None:
    """AWS's event: ``window`` (start and end, ISO 8601 UTC, aligned to the window's length),
    ``state`` (what the previous response of the window returned, ``{}`` at its start),
    ``shardId``, ``eventSourceARN``, ``isFinalInvokeForWindow``, ``isWindowTerminatedEarly``."""
    clock = Clock(T0 + 30)
    pipeline = tumbling(clock)
    clock.now = T0 + 10
    for i in range(6):
        put(pipeline, f"k{i}")
    pipeline.drain()
    first, second = events()
    assert [len(e["Records"]) for e in (first, second)] == [4, 2]
    assert first["window"] == {"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:01:00Z"}
    assert (first["state"], second["state"]) == ({}, {"records": 4})
    assert first["shardId"] == second["shardId"] == shard_ids(pipeline)[0]
    assert first["eventSourceARN"] == stream_arn(pipeline)
    assert not first["isFinalInvokeForWindow"] and not first["isWindowTerminatedEarly"]
    assert pipeline.counters.final_invocations == 0  # the window has not ended on the clock


def test_the_window_ends_with_a_final_invocation_of_its_last_state_and_no_records(
    tumbling: Callable[[Clock], LocalPipeline],
) -> None:
    """At the window's end the function is invoked once more with ``isFinalInvokeForWindow``
    and the window's state; the next window starts in a fresh state."""
    clock = Clock(T0 + 30)
    pipeline = tumbling(clock)
    clock.now = T0 + 10
    for i in range(5):
        put(pipeline, f"k{i}")
    pipeline.drain()
    clock.now = T0 + WINDOW  # the window's end
    pipeline.drain()
    final = events()[-1]
    assert final["isFinalInvokeForWindow"] and final["Records"] == []
    assert final["state"] == {"records": 5}
    assert final["window"]["start"] == "2026-01-01T00:00:00Z"
    clock.now = T0 + WINDOW + 5
    put(pipeline, "later")
    pipeline.drain()
    nxt = events()[-1]
    assert nxt["window"]["start"] == "2026-01-01T00:01:00Z" and nxt["state"] == {}
    assert pipeline.counters.final_invocations == 1


def test_a_window_open_when_the_mappings_window_is_taken_off_ends_without_a_final_invocation(
    tumbling: Callable[[Clock], LocalPipeline],
) -> None:
    """The settings change as an update of the mapping would (the model test's parallelize
    step): the next records come without window fields (once, this divided by a window of 0)."""
    clock = Clock(T0 + 10)
    pipeline = tumbling(clock)
    put(pipeline, "a")
    pipeline.drain()
    [mapping] = pipeline.mappings.values()
    mapping.settings = replace(mapping.settings, tumbling_window_seconds=0)
    put(pipeline, "b")
    pipeline.drain()
    assert "window" not in events()[-1] and len(events()[-1]["Records"]) == 1
    assert pipeline.counters.final_invocations == 0


def test_a_batch_is_cut_where_the_next_window_starts_and_the_first_window_closes_first(
    tumbling: Callable[[Clock], LocalPipeline],
) -> None:
    """A batch holds the records of one window; the window's final invocation comes before
    the first batch of the next window, whatever the clock says."""
    clock = Clock(T0 + 30)
    pipeline = tumbling(clock)
    clock.now = T0 + 50
    put(pipeline, "a")
    put(pipeline, "b")
    clock.now = T0 + WINDOW + 1
    put(pipeline, "c")
    pipeline.drain()
    shape = [
        (len(e["Records"]), e["isFinalInvokeForWindow"], e["window"]["start"]) for e in events()
    ]
    assert shape == [
        (2, False, "2026-01-01T00:00:00Z"),
        (0, True, "2026-01-01T00:00:00Z"),
        (1, False, "2026-01-01T00:01:00Z"),
    ]


def test_a_response_without_state_is_a_failed_invocation_bisected_and_retried(
    tumbling: Callable[[Clock], LocalPipeline],
) -> None:
    """AWS: "If the response does not contain a state property, Lambda considers this a failed
    invocation": the batch is retried as after a function error (here bisected: the stack
    has BisectBatchOnFunctionError), and the state of the failed response is not passed on."""
    clock = Clock(T0 + 30)
    pipeline = tumbling(clock)
    clock.now = T0 + 10
    put(pipeline, "a")
    put(pipeline, "b", mode="no-state-once")
    pipeline.drain()
    seqs = stream_sequence_numbers(pipeline)
    assert [[r["dynamodb"]["SequenceNumber"] for r in e["Records"]] for e in events()] == [
        seqs,
        seqs[:1],
        seqs[1:],
    ]
    assert [e["state"] for e in events()] == [{}, {}, {"records": 1}]
    assert pipeline.counters.failed_invocations == 1
    assert pipeline.counters.bisections == 1
    assert pipeline.counters.records_succeeded == 2


def test_a_record_whose_responses_never_carry_state_is_discarded_after_its_retries(
    tumbling: Callable[[Clock], LocalPipeline],
) -> None:
    """Retries (``MaximumRetryAttempts`` 1) count a stateless response as a failure: the
    record is then sent to the on-failure destination, as a function error's would be, and the
    window goes on."""
    clock = Clock(T0 + 30)
    pipeline = tumbling(clock)
    clock.now = T0 + 10
    put(pipeline, "a", mode="no-state")
    put(pipeline, "b")
    pipeline.drain()
    [message] = queue_messages(pipeline, "OnFailure")
    assert message["DDBStreamBatchInfo"]["batchSize"] == 1
    assert message["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert pipeline.counters.records_succeeded == 1
    assert events()[-1]["state"] == {}  # no response of the window carried state before b's


def test_a_final_invocation_that_fails_is_retried_and_the_shard_waits_for_it(
    tumbling: Callable[[Clock], LocalPipeline],
) -> None:
    """AWS: if the final invocation is unsuccessful, Lambda suspends further processing until
    a successful invocation: the next window's records wait behind it."""
    clock = Clock(T0 + 30)
    pipeline = tumbling(clock)
    recorder.OPTIONS["final_without_state"] = 2
    clock.now = T0 + 10
    put(pipeline, "a")
    clock.now = T0 + WINDOW + 10
    put(pipeline, "b")
    pipeline.drain()
    shape = [(len(e["Records"]), e["isFinalInvokeForWindow"]) for e in events()]
    assert shape == [(1, False), (0, True), (0, True), (0, True), (1, False)]
    assert pipeline.counters.failed_invocations == 2


def test_a_final_invocation_failing_forever_stops_the_drain_with_an_explanation(
    tumbling: Callable[[Clock], LocalPipeline],
) -> None:
    clock = Clock(T0 + 30)
    pipeline = tumbling(clock)
    recorder.OPTIONS["final_without_state"] = 10**6
    clock.now = T0 + 10
    put(pipeline, "a")
    clock.now = T0 + WINDOW + 10
    put(pipeline, "b")
    with pytest.raises(PipelineStuck, match="final invocation of the window from 2026-01-01"):
        pipeline.drain()


def test_each_shard_has_its_own_windows_and_a_parent_closes_its_window_before_its_child(
    tumbling: Callable[[Clock], LocalPipeline],
) -> None:
    """Resharding: "When the shard ends, Lambda considers the window closed, and the child
    shards start their own window in a fresh state". Each event names its own shard."""
    clock = Clock(T0 + 30)
    pipeline = tumbling(clock)
    clock.now = T0 + 10
    put(pipeline, "a")
    pipeline.drain()
    child = pipeline.roll_shards()[pipeline.table_name("Items")]
    put(pipeline, "b")
    put(pipeline, "c")
    pipeline.drain()
    parent = shard_ids(pipeline)[0]
    shape = [
        (e["shardId"], len(e["Records"]), e["isFinalInvokeForWindow"], e["state"]) for e in events()
    ]
    assert shape == [
        (parent, 1, False, {}),
        (parent, 0, True, {"records": 1}),  # the parent ended: its window is closed
        (child, 2, False, {}),  # the same window of time, the child's own, fresh
    ]


def test_a_window_beside_a_parallelization_factor_above_one_is_refused_with_awss_words() -> None:
    with pytest.raises(
        LocalPipelineError,
        match="Parallelization factor must be equal to 1 when tumbling window period is configured",
    ):
        MappingSettings.from_properties({"TumblingWindowInSeconds": 60, "ParallelizationFactor": 2})
    with pytest.raises(LocalPipelineError, match="Parallelization factor must be equal to 1"):
        replace(MappingSettings(parallelization_factor=3), tumbling_window_seconds=900)
    assert MappingSettings(parallelization_factor=3, tumbling_window_seconds=0)


def test_a_window_longer_than_900_seconds_is_refused() -> None:
    with pytest.raises(LocalPipelineError, match="'901' at 'tumblingWindowInSeconds'"):
        MappingSettings.from_properties({"TumblingWindowInSeconds": 901})
