"""Delivering records to a consumer the way Lambda's event source mapping does.

Batches of ``batch_size`` in stream order. With ReportBatchItemFailures the mapping checkpoints
at the *lowest* reported sequence number and re-sends everything from there (docs/design.md §1;
``cdc_consumer.testing.redelivery`` computes it); a function error (here:
:class:`cdc_local.faults.SimulatedCrash`) re-sends the whole batch. Only the parts of the mapping
the benchmark needs: no bisect, no filters, no record age. (cdc_local's EventSourceMapping has
them all, but polls moto's stream, whose records differ from DynamoDB's - bench/workload.py.)

A mapping with a tumbling window (:class:`TumblingWindow`) sends what Lambda sends then: each
event names its shard (``shardId``), its window (``window``: start and end) and the window's
``state`` so far (the previous answer's); a batch holds one window's records, and each window
ends with one final invocation (``isFinalInvokeForWindow``, no records). Lambda counts an answer
without ``state`` as a failed invocation; the bench counts such answers and goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_consumer.testing import redelivery

from cdc_local.faults import SimulatedCrash
from cdc_local.functions import LambdaContext
from cdc_local.tumbling_windows import OpenWindow, has_state, window_of

Handler = Callable[[dict[str, Any], Any], Any]

#: A generous function timeout: the benchmark measures throughput, not deadline handling.
DEFAULT_TIMEOUT_S = 300.0
#: Redeliveries of one position before the harness gives up (AWS's retries are finite too).
MAX_ATTEMPTS = 10
FUNCTION_NAME = "bench-consumer"
MEMORY_MB = 1024
#: The mapping's tumbling window, in seconds: StreamConsumer's default
#: (cdc_constructs.defaults.TUMBLING_WINDOW_SECONDS; tests/bench checks they agree).
WINDOW_SECONDS = 900


def lambda_context(
    timeout_s: float = DEFAULT_TIMEOUT_S, clock: Callable[[], float] = time.monotonic
) -> LambdaContext:
    """A context whose deadline is ``timeout_s`` from now on ``clock`` (real time unless
    given; both consumers read it)."""
    return LambdaContext(
        function_name=FUNCTION_NAME,
        invoked_function_arn=f"arn:aws:lambda:us-east-1:123456789012:function:{FUNCTION_NAME}",
        memory_limit_in_mb=MEMORY_MB,
        timeout_seconds=timeout_s,
        clock=clock,
    )


def _window(record: dict[str, Any], seconds: int) -> tuple[float, float]:
    return window_of(float(record["dynamodb"]["ApproximateCreationDateTime"]), seconds)


@dataclass
class TumblingWindow:
    """One shard's tumbling window, as a mapping with ``TumblingWindowInSeconds`` sends it
    (AWS's rules as cdc_local.tumbling_windows emulates them): a record belongs to the window
    its creation time falls in, a batch holds one window's records, the window closes with a
    final invocation, and each invocation carries the state the last answer returned.
    ``answers_without_state`` counts the answers that returned none (Lambda counts each as a
    failed invocation)."""

    shard_id: str
    source_arn: str
    seconds: int = WINDOW_SECONDS
    open: OpenWindow | None = None
    answers_without_state: int = 0
    final_invocations: int = 0

    def cut(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``batch`` up to the first record of a later window than its first record's."""
        first = _window(batch[0], self.seconds)
        for index, record in enumerate(batch):
            if _window(record, self.seconds) != first:
                return batch[:index]
        return batch

    def invoke(self, handler: Handler, records: list[dict[str, Any]], context: Any) -> Any:
        """Invoke ``handler`` with ``records`` (of one window), after closing the previous
        window with its final invocation when they are of a later one."""
        start, end = _window(records[0], self.seconds)
        if self.open is not None and self.open.start != start:
            self.close(handler, context)
        if self.open is None:
            self.open = OpenWindow(start, end)
        event = self.open.event(records, self.shard_id, self.source_arn)
        return self._answered(handler(event, context))

    def close(self, handler: Handler, context: Any) -> None:
        """The window's final invocation (no records); the next window starts afresh."""
        if self.open is None:
            return
        event = self.open.event([], self.shard_id, self.source_arn, final=True)
        self._answered(handler(event, context))
        self.final_invocations += 1
        self.open = None

    def _answered(self, response: Any) -> Any:
        if not has_state(response):
            self.answers_without_state += 1
        elif self.open is not None:
            self.open.state = dict(response["state"])
        return response


@dataclass
class Delivery:
    """What happened while delivering a stream to a consumer."""

    invocations: int = 0
    records_delivered: int = 0
    reported_failures: int = 0
    crashes: int = 0
    seconds: float = 0.0


class GaveUp(RuntimeError):
    """A record failed more times in a row than the harness retries it; ``delivery`` says what
    happened until then and ``position`` where it stopped."""

    def __init__(self, message: str, delivery: Delivery, position: int) -> None:
        super().__init__(message)
        self.delivery = delivery
        self.position = position


@dataclass
class DeliveryOptions:
    """How :func:`deliver` delivers, beyond the batch size.

    ``after_crash`` runs between a crashed invocation and its redelivery (Lambda retries only
    once the crashed invocation has ended, i.e. after its timeout). ``window``: the mapping's
    tumbling window (None: the mapping has none). ``clock``: what the invocation's deadline is
    counted on. ``max_attempts``: failures in a row of one record before :class:`GaveUp`.
    """

    timeout_s: float = DEFAULT_TIMEOUT_S
    after_crash: Callable[[], None] | None = None
    window: TumblingWindow | None = None
    clock: Callable[[], float] = time.monotonic
    max_attempts: int = MAX_ATTEMPTS


def deliver(
    handler: Handler,
    records: Sequence[dict[str, Any]],
    batch_size: int,
    options: DeliveryOptions | None = None,
) -> Delivery:
    """Deliver ``records`` to ``handler`` until every record is checkpointed (then close the
    window, when the mapping has one). Raises :class:`GaveUp` when a record fails more than
    ``options.max_attempts`` times in a row."""
    options = options or DeliveryOptions()
    delivery = Delivery()
    position = 0
    attempts = 0
    started = time.perf_counter()
    while position < len(records):
        batch = list(records[position : position + batch_size])
        if options.window is not None:
            batch = options.window.cut(batch)
        delivery.invocations += 1
        delivery.records_delivered += len(batch)
        try:
            response = _invoke(handler, batch, options)
        except SimulatedCrash:
            delivery.crashes += 1
            attempts += 1
            _give_up_after(options, attempts, "crashed", delivery, position)
            if options.after_crash is not None:
                options.after_crash()
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
        _give_up_after(options, attempts, "failed", delivery, position)
        position = lowest
    if options.window is not None:
        options.window.close(handler, lambda_context(options.timeout_s, options.clock))
        delivery.invocations += options.window.final_invocations
    delivery.seconds = time.perf_counter() - started
    return delivery


def _invoke(handler: Handler, batch: list[dict[str, Any]], options: DeliveryOptions) -> Any:
    context = lambda_context(options.timeout_s, options.clock)
    if options.window is None:
        return handler({"Records": batch}, context)
    return options.window.invoke(handler, batch, context)


def _give_up_after(
    options: DeliveryOptions, attempts: int, what: str, delivery: Delivery, position: int
) -> None:
    if attempts > options.max_attempts:
        raise GaveUp(f"record {position} {what} {attempts} times; giving up", delivery, position)
