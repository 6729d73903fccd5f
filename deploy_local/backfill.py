"""A backfill through the deployed state machine (ViewBackfill), in MiniStack.

Found like the rest of the stack, without logical ids: the state machine is the stack's
``AWS::StepFunctions::StateMachine``, its segment function the function whose handler is the
runtime's backfill handler. Three runs:

1. a refusal: ``{"totalSegments": 0}`` must fail with the start step's refusal
   (``BackfillRefusedError``; nothing written);
2. a backfill of the order-stats view while orders keep being written: it must succeed, every
   segment of its Map Run must succeed, and the view must still equal its recomputation from the
   orders table (a snapshot row of an order the stream already applied changes nothing; one the
   stream changes after the horizon loses to the change);
3. its items, from the segment function's metrics (EMF ``BackfillItems`` in its logs), must be
   at least the orders the table held when it started.

Every wait is bounded; a run that is still going when the wait runs out is reported as such.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from cdc_consumer.backfill.shapes import BACKFILL_REFUSED_ERROR, BackfillRequest
from cdc_consumer.handler_paths import BACKFILL_HANDLER

from deploy_local.deployed_stack import DeployedFunction, DeployedStack
from deploy_local.exceptions import StepFailed

__all__ = [
    "BackfillRun",
    "BackfillWiring",
    "backfill_request",
    "refusal_request",
    "refused",
    "run_backfill",
    "while_running",
]

STATE_MACHINE_TYPE = "AWS::StepFunctions::StateMachine"
POLL_SECONDS = 1.0
SEGMENTS = 4
"""Segments of the deploy-local backfill (the execution's ``totalSegments``, overriding the
construct's default): enough to run the Map's children side by side, few enough for 2 cores."""


@dataclass(frozen=True)
class BackfillWiring:
    """The deployed state machine and its segment function."""

    state_machine_arn: str
    segment_function: DeployedFunction

    @classmethod
    def of(cls, stack: DeployedStack) -> BackfillWiring:
        machines = [r.physical_id for r in stack.resources if r.type == STATE_MACHINE_TYPE]
        workers = [f for f in stack.functions.values() if f.handler == BACKFILL_HANDLER]
        if len(machines) != 1 or len(workers) != 1:
            raise StepFailed(
                "discover resources",
                f"expected one state machine and one function running {BACKFILL_HANDLER} in "
                f"stack {stack.name}, found {len(machines)} and {len(workers)}",
            )
        return cls(machines[0], workers[0])


@dataclass(frozen=True)
class BackfillRun:
    """One execution: its status, error, Map Run counts and how long it took."""

    status: str
    error: str = ""
    cause: str = ""
    segments: int = 0
    segments_succeeded: int = 0
    seconds: float = 0.0


def run_backfill(
    sfn: Any, wiring: BackfillWiring, request: dict[str, Any], timeout: float
) -> BackfillRun:
    """Start an execution with ``request`` and wait (at most ``timeout`` s) for it to end."""
    start = time.monotonic()
    name = f"deploy-local-{uuid.uuid4().hex[:12]}"
    arn = sfn.start_execution(
        stateMachineArn=wiring.state_machine_arn, name=name, input=json.dumps(request)
    )["executionArn"]
    described = sfn.describe_execution(executionArn=arn)
    while described["status"] == "RUNNING" and time.monotonic() - start < timeout:
        time.sleep(POLL_SECONDS)
        described = sfn.describe_execution(executionArn=arn)
    total = succeeded = 0
    for run in sfn.list_map_runs(executionArn=arn).get("mapRuns", []):
        counts = sfn.describe_map_run(mapRunArn=run["mapRunArn"]).get("itemCounts", {})
        total += counts.get("total", 0)
        succeeded += counts.get("succeeded", 0)
    return BackfillRun(
        status=described["status"],
        error=described.get("error", ""),
        cause=described.get("cause", ""),
        segments=total,
        segments_succeeded=succeeded,
        seconds=round(time.monotonic() - start, 1),
    )


def refusal_request() -> dict[str, Any]:
    """An execution input the start step must refuse: no segments."""
    return {BackfillRequest.TOTAL_SEGMENTS: 0}


def backfill_request() -> dict[str, Any]:
    return {BackfillRequest.TOTAL_SEGMENTS: SEGMENTS}


def refused(run: BackfillRun) -> bool:
    """The run failed with the start step's refusal of ``totalSegments``. On AWS its error is
    ``BackfillRefusedError`` (Lambda's errorType is the exception's class), which the state
    machine does not retry; MiniStack reports every function error as
    ``Runtime.HandlerError``, so there the refusal is retried first and recognised by its
    message (docs/deploy-local.md)."""
    if run.status != "FAILED":
        return False
    return run.error == BACKFILL_REFUSED_ERROR or BackfillRequest.TOTAL_SEGMENTS in run.cause


def while_running(
    action: Callable[[], Any], sfn_run: Callable[[], BackfillRun]
) -> tuple[BackfillRun, Any]:
    """``sfn_run()`` (a backfill) while ``action()`` runs in another thread: the stream keeps
    flowing during the scan."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        writes = pool.submit(action)
        run = sfn_run()
        return run, writes.result()
