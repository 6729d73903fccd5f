"""Fault injection for the local pipeline: what the premise says happens, made to happen on purpose.

- **Crashes at random points**: before any AWS call the handler makes, with some probability, the
  process "dies" (:class:`SimulatedCrash`, a ``BaseException`` so the handler's ``except
  Exception`` cannot swallow it, as it could not swallow a real crash). What the handler wrote
  before stays written; the invocation fails.
- **Transient DynamoDB errors**: a DynamoDB call the handler makes fails with a throttling or
  internal error, as after the SDK's retries ran out.
- **Lost responses**: the handler finished, but its response never reached the poller; the batch
  counts as failed and is retried (so its effects are applied twice unless the handler is
  idempotent).
- **Duplicate deliveries**: a batch that succeeded is delivered again (at-least-once).

Calls are intercepted with a botocore ``before-call`` hook on boto3's default session, which is
what ``boto3.client(...)`` in a handler uses (the local pipeline gives each function its own:
:meth:`Faults.hook`); clients copy the session's hooks when created, so the hook must be in
place before the handlers are imported (the runner does that). The hook
acts only on the thread that is inside an invocation (:meth:`Faults.during`), never on the
pipeline's own calls (reading streams, writing destinations).
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse

#: Error codes of transient DynamoDB failures, as the service returns them.
TRANSIENT_ERROR_CODES = (
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "InternalServerError",
)


class SimulatedCrash(BaseException):
    """The function's process died mid-invocation (injected by the local pipeline)."""


@dataclass(frozen=True)
class FeedFaults:
    """What a route's feed does to the changes it puts into its source (:mod:`cdc_local.routes`;
    a table's Kinesis destination may put them out of order and more than once). Every
    probability, per change put, defaults to 0."""

    #: put it late, after later changes of its item
    reorder_probability: float = 0.0
    #: put it once more, later (a retried PutRecord)
    duplicate_probability: float = 0.0
    #: also put a record whose data is not a change (poison: its consumers must quarantine it
    #: whole)
    poison_probability: float = 0.0


@dataclass(frozen=True)
class FaultPlan:
    """How often each fault happens. Every probability defaults to 0 (no faults)."""

    seed: int = 0
    #: per AWS API call made by a handler: crash before the call is sent
    crash_probability: float = 0.0
    #: per DynamoDB API call made by a handler: fail it with a transient error
    transient_error_probability: float = 0.0
    #: per invocation: the response is lost after the handler returned
    lost_response_probability: float = 0.0
    #: per successful batch: deliver it once more
    duplicate_delivery_probability: float = 0.0
    #: what the routes' feeds do to the changes they put into their sources
    feed: FeedFaults = field(default_factory=FeedFaults)


@dataclass
class FaultCounters:
    crashes: int = 0
    transient_errors: int = 0
    lost_responses: int = 0
    duplicate_deliveries: int = 0


@dataclass
class Faults:
    """Injects the faults of a :class:`FaultPlan`; deterministic for a given seed and call order."""

    plan: FaultPlan = field(default_factory=FaultPlan)
    counters: FaultCounters = field(default_factory=FaultCounters)
    _random: random.Random = field(init=False, repr=False)
    _active: threading.local = field(default_factory=threading.local, repr=False)

    def __post_init__(self) -> None:
        self._random = random.Random(self.plan.seed)

    def hook(self, session: Any) -> None:
        """Hook a function's own boto3 default session (the local pipeline gives each function
        one: cdc_local.functions)."""
        session.events.register(
            "before-call", self._before_call, unique_id=f"cdc-local-faults-{id(self)}"
        )

    @contextlib.contextmanager
    def during(self, function_name: str) -> Iterator[None]:
        """Inject faults into the AWS calls made on this thread inside the block."""
        self._active.function = function_name
        try:
            yield
        finally:
            self._active.function = None

    def lose_response(self) -> bool:
        if self._chance(self.plan.lost_response_probability):
            self.counters.lost_responses += 1
            return True
        return False

    def duplicate_delivery(self) -> bool:
        if self._chance(self.plan.duplicate_delivery_probability):
            self.counters.duplicate_deliveries += 1
            return True
        return False

    def _chance(self, probability: float) -> bool:
        return probability > 0 and self._random.random() < probability

    def _before_call(self, model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        if getattr(self._active, "function", None) is None:
            return None
        if self._chance(self.plan.crash_probability):
            self.counters.crashes += 1
            raise SimulatedCrash(
                f"injected crash before {model.service_model.service_name}.{model.name}"
            )
        if model.service_model.service_name == "dynamodb" and self._chance(
            self.plan.transient_error_probability
        ):
            self.counters.transient_errors += 1
            code = self._random.choice(TRANSIENT_ERROR_CODES)
            status = 500 if code == "InternalServerError" else 400
            parsed = {
                "Error": {"Code": code, "Message": f"injected transient error on {model.name}"},
                "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": {}},
            }
            return AWSResponse("http://local-fault", status, {}, None), parsed
        return None
