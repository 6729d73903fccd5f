"""The local pipeline counts the readers of each stream and warns about a third: it cannot
throttle like DynamoDB Streams, so it runs them all and says so."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb

from cdc_constructs import ChangeCaptureTable, StreamConsumer
from cdc_local.runner import LocalPipeline
from tests.cdc_constructs.support import consumer_code

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


def test_the_reference_stream_has_two_readers_and_no_warning(reference_assembly: Path) -> None:
    # order-stats and the TTL archive behind one mapping, and the OrderPaid pipe.
    pipeline = LocalPipeline(reference_assembly, "CdcReferenceStack")
    readers = pipeline.stack.stream_readers()
    (orders,) = [table for table in readers if table.startswith("Orders")]
    assert len(readers[orders]) == 2
    assert pipeline.reader_warnings == []


def test_a_third_reader_of_a_stream_is_a_warning(tmp_path: Path) -> None:
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Readers")
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    for index, reason in enumerate([None, None, "accepted: a test of the local pipeline"]):
        StreamConsumer(
            stack,
            f"Consumer{index}",
            **consumer_code(),
            table=table,
            monitoring=False,
            redrive=False,
            extra_reader_reason=reason,
        )
    app.synth()
    pipeline = LocalPipeline(tmp_path, "Readers")
    readers = pipeline.stack.stream_readers()
    (orders,) = [name for name in readers if name.startswith("Orders")]
    assert len(readers[orders]) == 3
    (warning,) = pipeline.reader_warnings
    assert warning.startswith(f"the stream of table {orders} has 3 readers (")
    assert "DynamoDB Streams serves 2 per shard" in warning
    assert "The local pipeline cannot throttle like AWS" in warning
