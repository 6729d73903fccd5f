"""Issue 7 item 3: CPU per record to parse, deserialize and dispatch, with a no-op effect.

In-process, no I/O. 100,000 records in Lambda batches of 100.

* cdc-constructs: ``StreamProcessor.handle`` with a projection that returns no actions, twice:
  reading nothing (keys and images are decoded on first use, so never), and reading the keys
  and both images as the Powertools handler below does (the fair comparison). The
  runtime still builds its processed-markers and hands a TransactWriteItems to its DynamoDB
  client, so the client is an in-memory stand-in that accepts the call (no serialization, no
  network): what is measured is the runtime's own per-record work.
* Powertools: ``process_partial_response`` with ``BatchProcessor(EventType.DynamoDBStreams)``; the
  record handler reads the keys, both images (deserialized by the data classes), the event name
  and the sequence number — what a projection needs, and what the runtime's Change carries.

Figures are CPU time (``time.process_time``), the median of :data:`REPEATS` passes after one
warm-up pass. Log and metric lines both consumers print go to /dev/null while measured.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.esm import lambda_context
from bench.workload import order_workload

RECORDS = 100_000
#: The runtime with a projection that reads the keys and both images (decoded on first use).
READS_IMAGES = "cdc-constructs, reading keys and both images"
BATCH_SIZE = 100
REPEATS = 3


class InMemoryDynamoDB:
    """Accepts the calls the runtime makes and answers as DynamoDB would on success."""

    def __init__(self) -> None:
        self.calls = 0

    def transact_write_items(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        return {}

    def __getattr__(self, name: str) -> Callable[..., dict[str, Any]]:
        def call(**_: Any) -> dict[str, Any]:
            self.calls += 1
            return {}

        return call


def _events(records: int) -> list[dict[str, Any]]:
    workload = order_workload(
        changes=records, orders=records // 10, customers=records // 20, seed=11
    )
    return [{"Records": batch} for batch in workload.batches(BATCH_SIZE)]


def _time(handler: Callable[[dict[str, Any], Any], Any], events: list[dict[str, Any]]) -> float:
    context = lambda_context()
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        started = time.process_time()
        for event in events:
            handler(event, context)
        return time.process_time() - started


def powertools_handler() -> Callable[[dict[str, Any], Any], Any]:
    from aws_lambda_powertools.utilities.batch import (
        BatchProcessor,
        EventType,
        process_partial_response,
    )
    from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
        DynamoDBRecord,
    )

    processor = BatchProcessor(event_type=EventType.DynamoDBStreams)

    def record_handler(record: DynamoDBRecord) -> None:
        stream = record.dynamodb
        assert stream is not None
        _ = (stream.keys, stream.new_image, stream.old_image)
        _ = (record.event_name, stream.sequence_number)

    def handler(event: dict[str, Any], context: Any) -> Any:
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )

    return handler


def runtime_handler(
    read_images: bool = False,
) -> tuple[Callable[[dict[str, Any], Any], Any], InMemoryDynamoDB]:
    """The runtime with a projection returning no actions; ``read_images``: it reads the keys
    and both images first (the same work as the Powertools record handler here)."""
    from cdc_consumer import StreamProcessor

    client = InMemoryDynamoDB()
    processor = StreamProcessor(
        "cpu-bench",
        idempotency_table="idempotency",
        quarantine_queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/quarantine",
        dynamodb_client=client,
        sqs_client=InMemoryDynamoDB(),
    )

    @processor.projection
    def no_op(change: Any) -> list[dict[str, Any]]:
        if read_images:
            _ = (change.keys, change.new_image, change.old_image)
        return []

    return processor.handle, client


def measure(records: int = RECORDS, include_runtime: bool = True) -> dict[str, Any]:
    events = _events(records)
    handlers: dict[str, Callable[[dict[str, Any], Any], Any]] = {"powertools": powertools_handler()}
    if include_runtime:
        handlers["cdc-constructs"], _ = runtime_handler()
        handlers[READS_IMAGES], _ = runtime_handler(read_images=True)
    results: dict[str, Any] = {"records": records, "batch_size": BATCH_SIZE, "repeats": REPEATS}
    for name, handler in handlers.items():
        _time(handler, events[:10])  # warm-up
        seconds = statistics.median(_time(handler, events) for _ in range(REPEATS))
        results[name] = {
            "cpu_seconds": round(seconds, 3),
            "cpu_us_per_record": round(seconds * 1e6 / records, 2),
        }
    return results
