"""The local pipeline counts the readers of each stream and warns about a third: it cannot
throttle like DynamoDB Streams, so it runs them all and says so."""

from __future__ import annotations

from pathlib import Path

from cdc_local.runner import LocalPipeline


def test_a_third_reader_of_a_stream_is_a_warning(reference_assembly: Path) -> None:
    # The reference stack still reads its orders stream three times (order-stats, TTL archive,
    # the order-paid pipe), acknowledged with a reason on the pipe.
    pipeline = LocalPipeline(reference_assembly, "CdcReferenceStack")
    readers = pipeline.stack.stream_readers()
    (orders,) = [table for table in readers if table.startswith("Orders")]
    assert len(readers[orders]) == 3
    (warning,) = pipeline.reader_warnings
    assert warning.startswith(f"the stream of table {orders} has 3 readers (")
    assert "DynamoDB Streams serves 2 per shard" in warning
    assert "The local pipeline cannot throttle like AWS" in warning
