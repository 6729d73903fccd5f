"""Delivering records to a consumer the way Lambda's event source mapping does.

Batches of ``batch_size`` in stream order. With ReportBatchItemFailures the mapping checkpoints
at the *lowest* reported sequence number and re-sends everything from there (DESIGN.md §1); a
function error (here: :class:`~bench.local_aws.SimulatedCrash`) re-sends the whole batch. Only
the parts of the mapping the benchmark needs: no bisect, no filters, no record age.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.local_aws import SimulatedCrash

Handler = Callable[[dict[str, Any], Any], Any]

#: A generous function timeout: the benchmark measures throughput, not deadline handling.
DEFAULT_TIMEOUT_S = 300.0
#: Redeliveries of one position before the harness gives up (AWS's retries are finite too).
MAX_ATTEMPTS = 10


@dataclass
class LambdaContext:
    """The parts of Lambda's context object both consumers read; the deadline is real time."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    function_name: str = "bench-consumer"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:bench-consumer"
    log_group_name: str = "/aws/lambda/bench-consumer"
    log_stream_name: str = "bench"
    _deadline: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


@dataclass
class Delivery:
    """What happened while delivering a stream to a consumer."""

    invocations: int = 0
    records_delivered: int = 0
    reported_failures: int = 0
    crashes: int = 0
    seconds: float = 0.0


def deliver(
    handler: Handler,
    records: Sequence[dict[str, Any]],
    batch_size: int,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    after_crash: Callable[[], None] | None = None,
) -> Delivery:
    """Deliver ``records`` to ``handler`` until every record is checkpointed.

    ``after_crash`` runs between a crashed invocation and its redelivery (Lambda retries only
    once the crashed invocation has ended, i.e. after its timeout).
    """
    sequence_index = {r["dynamodb"]["SequenceNumber"]: i for i, r in enumerate(records)}
    delivery = Delivery()
    position = 0
    attempts = 0
    started = time.perf_counter()
    while position < len(records):
        batch = list(records[position : position + batch_size])
        delivery.invocations += 1
        delivery.records_delivered += len(batch)
        try:
            response = handler({"Records": batch}, LambdaContext(timeout_s=timeout_s))
        except SimulatedCrash as crash:
            delivery.crashes += 1
            attempts += 1
            if attempts > MAX_ATTEMPTS:
                raise RuntimeError(
                    f"record {position} crashed {attempts} times; giving up"
                ) from crash
            if after_crash is not None:
                after_crash()
            continue
        failures = (response or {}).get("batchItemFailures") or []
        if not failures:
            position += len(batch)
            attempts = 0
            continue
        delivery.reported_failures += 1
        lowest = min(sequence_index[f["itemIdentifier"]] for f in failures)
        if lowest < position or lowest >= position + len(batch):
            raise RuntimeError(
                f"the consumer reported sequence number of record {lowest}, outside the batch "
                f"[{position}, {position + len(batch)})"
            )
        attempts = attempts + 1 if lowest == position else 1
        if attempts > MAX_ATTEMPTS:
            raise RuntimeError(f"record {position} failed {attempts} times; giving up")
        position = lowest
    delivery.seconds = time.perf_counter() - started
    return delivery
