"""Fault injection: crashes, transient DynamoDB errors, lost responses, duplicate deliveries."""

from __future__ import annotations

from cdc_local.faults import FaultPlan
from tests.cdc_local import recorder
from tests.cdc_local.helpers import batches, put, queue_messages


def sink_keys(pipeline) -> set[str]:
    items = pipeline.client("dynamodb").scan(TableName=pipeline.table_name("Sink"))["Items"]
    return {i["pk"]["S"] for i in items}


def test_a_crash_before_an_aws_call_fails_the_invocation_and_skips_the_call(pipeline_for) -> None:
    pipeline = pipeline_for("Basic", faults=FaultPlan(crash_probability=1.0))
    put(pipeline, "a", mode="write")
    pipeline.drain()
    assert sink_keys(pipeline) == set()
    assert pipeline.faults is not None and pipeline.faults.counters.crashes == 3
    assert pipeline.counters.failed_invocations == 3
    [message] = queue_messages(pipeline, "OnFailure")
    assert message["requestContext"]["condition"] == "RetryAttemptsExhausted"


def test_transient_dynamodb_errors_reach_the_handler_but_not_the_pipeline(pipeline_for) -> None:
    """The handler's DynamoDB call fails (after its SDK retries, as it were); the pipeline's own
    calls (stream reads, the on-failure message) are never faulted."""
    pipeline = pipeline_for("Basic", faults=FaultPlan(transient_error_probability=1.0))
    put(pipeline, "a", mode="write")
    pipeline.drain()
    function = next(iter(pipeline.functions.values()))
    assert function.errors == 3
    assert "injected transient error on PutItem" in "\n".join(pipeline.recent_output)
    assert len(queue_messages(pipeline, "OnFailure")) == 1


def test_some_transient_errors_are_retried_to_success(pipeline_for) -> None:
    pipeline = pipeline_for("Basic", faults=FaultPlan(seed=7, transient_error_probability=0.3))
    for i in range(10):
        put(pipeline, f"k{i}", mode="write")
    pipeline.drain()
    assert pipeline.faults is not None and pipeline.faults.counters.transient_errors > 0
    discarded = {
        str(s)
        for m in queue_messages(pipeline, "OnFailure")
        for s in range(
            int(m["DDBStreamBatchInfo"]["startSequenceNumber"]),
            int(m["DDBStreamBatchInfo"]["endSequenceNumber"]) + 1,
        )
    }
    written = {s for b in batches() for s in b}
    assert sink_keys(pipeline) | discarded == written  # nothing lost: written, or on the DLQ


def test_a_lost_response_fails_the_batch_after_the_handler_ran(pipeline_for) -> None:
    pipeline = pipeline_for("Plain", faults=FaultPlan(lost_response_probability=1.0))
    put(pipeline, "a")
    pipeline.drain()
    assert len(recorder.INVOCATIONS) == 2  # ran twice (retry 1), both responses lost
    assert pipeline.counters.failed_invocations == 2


def test_duplicate_delivery_sends_a_successful_batch_again(pipeline_for) -> None:
    pipeline = pipeline_for("Plain", faults=FaultPlan(duplicate_delivery_probability=1.0))
    put(pipeline, "a")
    put(pipeline, "b")
    pipeline.drain()
    assert len(batches()) == 2 and batches()[0] == batches()[1]
    assert pipeline.counters.duplicate_deliveries == 1
