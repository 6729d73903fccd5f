"""Delivering records to a consumer the way Lambda's event source mapping does.

Batches of ``batch_size`` in stream order. With ReportBatchItemFailures the mapping checkpoints
at the *lowest* reported sequence number and re-sends everything from there (docs/design.md §1;
``cdc_consumer.testing.redelivery`` computes it); a function error (here:
:class:`cdc_local.faults.SimulatedCrash`) re-sends the whole batch. Only the parts of the mapping
the benchmark needs: no bisect, no filters, no record age. (cdc_local's EventSourceMapping has
them all, but polls moto's stream, whose records differ from DynamoDB's - bench/workload.py.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_consumer.testing import redelivery

from cdc_local.faults import SimulatedCrash
from cdc_local.functions import LambdaContext

Handler = Callable[[dict[str, Any], Any], Any]

#: A generous function timeout: the benchmark measures throughput, not deadline handling.
DEFAULT_TIMEOUT_S = 300.0
#: Redeliveries of one position before the harness gives up (AWS's retries are finite too).
MAX_ATTEMPTS = 10
FUNCTION_NAME = "bench-consumer"
MEMORY_MB = 1024


def lambda_context(timeout_s: float = DEFAULT_TIMEOUT_S) -> LambdaContext:
    """A context whose deadline is ``timeout_s`` of real time from now (both consumers read it)."""
    return LambdaContext(
        function_name=FUNCTION_NAME,
        invoked_function_arn=f"arn:aws:lambda:us-east-1:123456789012:function:{FUNCTION_NAME}",
        memory_limit_in_mb=MEMORY_MB,
        timeout_seconds=timeout_s,
    )


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
    delivery = Delivery()
    position = 0
    attempts = 0
    started = time.perf_counter()
    while position < len(records):
        batch = list(records[position : position + batch_size])
        delivery.invocations += 1
        delivery.records_delivered += len(batch)
        try:
            response = handler({"Records": batch}, lambda_context(timeout_s))
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
        # Raises ValueError for an itemIdentifier outside the batch, as Lambda fails the batch.
        resend = redelivery(batch, response or {})
        if not resend:
            position += len(batch)
            attempts = 0
            continue
        delivery.reported_failures += 1
        lowest = position + len(batch) - len(resend)
        attempts = attempts + 1 if lowest == position else 1
        if attempts > MAX_ATTEMPTS:
            raise RuntimeError(f"record {position} failed {attempts} times; giving up")
        position = lowest
    delivery.seconds = time.perf_counter() - started
    return delivery
