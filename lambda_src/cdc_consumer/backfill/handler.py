"""The segment function's entry point (:data:`cdc_consumer.handler_paths.BACKFILL_HANDLER`).

One function serves both steps of the state machine: a :class:`BackfillRequest` (the start
step) is validated and answered with a :class:`BackfillPlan`; a :class:`SegmentTask` runs one
segment invocation and answers a :class:`SegmentResult`. Errors: ``BackfillRefusedError`` (bad
input, nothing written: do not retry), anything else is retryable (``BackfillError``,
throttling, timeouts). Clients come from the environment (``AWS_ENDPOINT_URL`` works locally);
:class:`Backfill` takes injected ones (the local pipeline, tests).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from cdc_consumer.backfill import defaults
from cdc_consumer.backfill.checks import StartCheck
from cdc_consumer.backfill.progress_store import ProgressStore
from cdc_consumer.backfill.segment import SegmentRun
from cdc_consumer.backfill.settings import BackfillSettings
from cdc_consumer.backfill.shapes import BackfillRequest, SegmentTask
from cdc_consumer.exceptions import AccessDeniedError, BackfillRefusedError
from cdc_consumer.message_fields import ContractError
from cdc_consumer.metric_names import BACKFILL_ITEMS, BACKFILL_PAGES, BACKFILL_THROTTLES
from cdc_consumer.metrics import emf_document
from cdc_consumer.outcomes import access_denial
from cdc_consumer.redrive.defaults import LAMBDA_READ_TIMEOUT_SECONDS
from cdc_consumer.redrive.invokers import Invoker, LambdaInvoker

__all__ = ["Backfill", "handler"]


@dataclass
class Backfill:
    """The segment function's work with its clients (see the module docstring)."""

    settings: BackfillSettings
    dynamodb: Any
    lambda_client: Any
    invoker: Invoker
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    key_names: tuple[str, ...] = field(default=())
    #: Lists the state machine's running executions (a second execution of a backfill is
    #: refused); None: not run by a state machine (the local pipeline).
    stepfunctions: Any = None
    #: Where the EMF line goes (Lambda: stdout; the local pipeline collects it).
    emit_line: Callable[[str], None] = field(default=lambda line: print(line, flush=True))

    @classmethod
    def from_environment(cls) -> Backfill:
        settings = BackfillSettings.from_environment()
        lambda_client = boto3.client(
            "lambda", config=Config(read_timeout=LAMBDA_READ_TIMEOUT_SECONDS)
        )
        return cls(
            settings,
            boto3.client("dynamodb", config=Config(retries=defaults.SCAN_RETRIES)),  # type: ignore[arg-type]  # botocore's TypedDict
            lambda_client,
            LambdaInvoker(settings.consumer_function, lambda_client),
            stepfunctions=boto3.client("stepfunctions"),
        )

    def handle(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        """One invocation: the start step or a segment (see the module docstring). Bad input
        is a :class:`BackfillRefusedError` (the state machine does not retry it); a call the
        function's role may not make is an :class:`AccessDeniedError` (nor that)."""
        try:
            return self._handle(event, context)
        except ContractError as error:
            raise BackfillRefusedError(f"{error} (nothing was written)") from None
        except ClientError as error:
            if access_denial(error) is None:
                raise
            raise AccessDeniedError(
                f"the backfill segment function may not make this call: {error}; grant it to "
                "the function's role (ViewBackfill grants what the backfill uses)"
            ) from error

    def _handle(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        if not SegmentTask.is_task(event):
            check = StartCheck(
                self.settings,
                self.dynamodb,
                self.lambda_client,
                self.invoker,
                self.clock,
                self.stepfunctions,
            )
            return check.plan(BackfillRequest.from_dict(event)).to_dict()
        task = SegmentTask.from_dict(event)
        run = SegmentRun(
            self.settings,
            self.dynamodb,
            self.invoker,
            ProgressStore(
                self.dynamodb, self.settings.idempotency_table, self.settings.consumer, self.clock
            ),
            self.clock,
            self.sleep,
            remaining_ms=_remaining(context),
            key_names=self.key_names,
        )
        try:
            return run.run(task).to_dict()
        finally:
            self.key_names = run.key_names
            self._emit(run)

    def _emit(self, run: SegmentRun) -> None:
        """The invocation's EMF line: items and pages it handed over, invocations it retried."""
        values: dict[str, float] = {
            BACKFILL_ITEMS.name: run.items_handled,
            BACKFILL_PAGES.name: run.pages_handled,
            BACKFILL_THROTTLES.name: run.retries,
        }
        namespace, consumer = self.settings.metrics_namespace, self.settings.consumer
        document = emf_document(namespace, consumer, values, self.clock())
        self.emit_line(json.dumps(document, separators=(",", ":")))


def _remaining(context: Any) -> Callable[[], int | None]:
    if context is None or not hasattr(context, "get_remaining_time_in_millis"):
        return lambda: None
    return lambda: int(context.get_remaining_time_in_millis())


_backfill: Backfill | None = None


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point (see the module docstring)."""
    global _backfill
    if _backfill is None:
        _backfill = Backfill.from_environment()
    return _backfill.handle(event, context)
