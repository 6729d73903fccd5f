"""A ViewBackfill's work on the local pipeline: the same segment code, segments in threads.

The synthesized stack's segment function (a function whose environment names
``CDC_BACKFILL_TABLE_NAME``) gives the settings, resolved to the local resources; the segment
code (:class:`cdc_consumer.backfill.handler.Backfill`, what the Lambda handler runs) then runs in
this process with local clients: DynamoDB on the local endpoint (adaptive retries, as in
Lambda), the consumer function invoked in-process through its handler (with the pipeline's
faults), and ListEventSourceMappings answered from the pipeline's own mappings (moto's Lambda
does not run them). The state machine's part is played here: the start step once, then each
segment invoked until it is done, segments in parallel threads; a segment that fails is
invoked again after a pause, as the state machine's retry would, and resumes from its progress
record. The segment's DynamoDB calls use the segment function's role session when the pipeline
enforces IAM (a denied call fails the run, named, and is not retried); what differs from AWS
(docs/backfill.md): no Step Functions, and ListEventSourceMappings is answered in process without
an IAM check.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.config import Config
from cdc_consumer.backfill import defaults as backfill_defaults
from cdc_consumer.backfill.handler import Backfill
from cdc_consumer.backfill.settings import BackfillSettings
from cdc_consumer.backfill.shapes import BackfillPlan, BackfillRequest, SegmentResult, SegmentTask
from cdc_consumer.environment_variables import BACKFILL_TABLE_ENV, CONSUMER_NAME_ENV
from cdc_consumer.exceptions import BackfillRefusedError
from cdc_consumer.redrive.invokers import CallableInvoker

from cdc_local.endpoint import LOCAL_CREDENTIALS
from cdc_local.exceptions import LocalPipelineError

__all__ = ["BackfillProgress", "LocalBackfill", "backfill_segment_function"]

#: Invocations of one segment before the local run gives up on it (the state machine's retry).
SEGMENT_ATTEMPTS = 4
#: Seconds between two invocations of a failed segment.
SEGMENT_RETRY_SECONDS = 0.5


@dataclass
class BackfillProgress:
    """What a running backfill has done, for a progress bar (shared between threads)."""

    total_segments: int = 0
    segments_done: int = 0
    items: int = 0
    segment_retries: int = 0
    started: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def items_per_second(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.items / elapsed if elapsed > 0 else 0.0


class LocalMappings:
    """ListEventSourceMappings from the local pipeline's running mappings."""

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline
        self.since = datetime.now(UTC)

    def list_event_source_mappings(self, **request: Any) -> dict[str, Any]:
        found = [
            {
                "UUID": mapping.name,
                "State": "Enabled",
                "StartingPosition": mapping.settings.starting_position,
                "LastModified": self.since,
                "EventSourceArn": mapping.stream_arn,
            }
            for mapping in self.pipeline.mappings.values()
            if mapping.function.name == request.get("FunctionName")
            and mapping.stream_arn == request.get("EventSourceArn")
        ]
        return {"EventSourceMappings": found}


class LocalBackfill:
    """Runs one backfill of ``pipeline``'s consumer (see the module docstring).

    ``consumer``: the backfilled consumer's name, when the stack has several segment functions.
    ``invoker_wrapper``: wraps the consumer invoker (the demo's segment fault).
    ``page_size``: Scan's Limit instead of the function's (``CDC_BACKFILL_PAGE_SIZE``).
    """

    def __init__(
        self,
        pipeline: Any,
        consumer: str | None = None,
        *,
        threads: int = 4,
        invoker_wrapper: Callable[[Any], Any] | None = None,
        page_size: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.pipeline = pipeline
        self.threads = threads
        self.sleep = sleep
        segment_id, self.settings = _segment_settings(pipeline, consumer)
        self.segment_function = pipeline.functions[segment_id]
        #: The segment invocations' EMF lines (in Lambda they go to the log).
        self.metric_lines: list[str] = []
        if page_size is not None:
            self.settings = dataclasses.replace(self.settings, page_size=page_size)
        consumer_function = _function_named(pipeline, self.settings.consumer_function)
        invoker: Any = CallableInvoker(
            consumer_function.as_handler(), function_name=consumer_function.name
        )
        self.backfill = Backfill(
            self.settings,
            _scan_client(pipeline, segment_id),
            LocalMappings(pipeline),
            invoker_wrapper(invoker) if invoker_wrapper else invoker,
            sleep=sleep,
            emit_line=self.metric_lines.append,
        )
        self.progress = BackfillProgress()

    def plan(self, backfill_id: str, total_segments: int | None = None) -> BackfillPlan:
        """The start step (raises :class:`BackfillRefusedError` for bad input)."""
        request = BackfillRequest(backfill_id, total_segments)
        plan = BackfillPlan.from_dict(self._handle(request.to_dict()))
        self.progress.total_segments = plan.total_segments
        return plan

    def _handle(self, document: dict[str, Any]) -> Any:
        """The segment code on ``document``; then the calls its role was denied fail the run."""
        try:
            return self.backfill.handle(document)
        finally:
            self.pipeline.check_access(self.segment_function.name)

    def run(self, plan: BackfillPlan) -> list[SegmentResult]:
        """Every segment to its end, ``threads`` at a time."""
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            return list(pool.map(self.segment, plan.tasks()))

    def segment(self, task: SegmentTask) -> SegmentResult:
        """One segment, invoked until done; a failure is retried after a pause."""
        document = task.to_dict()
        failures = 0
        while True:
            try:
                result = SegmentResult.from_dict(self._handle(document))
            except (BackfillRefusedError, LocalPipelineError):
                raise  # refused input, or a call the segment's role does not allow
            except Exception:  # the state machine retries any other error of a segment
                failures += 1
                with self.progress.lock:
                    self.progress.segment_retries += 1
                if failures >= SEGMENT_ATTEMPTS:
                    raise
                self.sleep(SEGMENT_RETRY_SECONDS)
                continue
            with self.progress.lock:
                self.progress.items = self.progress.items - _seen(document) + result.items
            document = result.to_dict()
            if result.done:
                with self.progress.lock:
                    self.progress.segments_done += 1
                return result


def _scan_client(pipeline: Any, segment_id: str) -> Any:
    """A DynamoDB client on the local endpoint with the segment's adaptive retries, and the
    segment function's role session when IAM is enforced."""
    roles = pipeline.roles
    credentials = (
        roles.sessions[segment_id].client_credentials() if roles is not None else LOCAL_CREDENTIALS
    )
    return boto3.client(
        "dynamodb",
        endpoint_url=pipeline.endpoint.url,
        region_name=pipeline.endpoint.region,
        config=Config(retries=backfill_defaults.SCAN_RETRIES),  # type: ignore[arg-type]
        **credentials,
    )


def _seen(document: dict[str, Any]) -> int:
    return int(document.get(SegmentResult.ITEMS, 0))


def backfill_segment_function(pipeline: Any, consumer: str | None) -> str:
    """The logical id of the segment function of ``consumer``'s ViewBackfill (``consumer``
    None: the stack's only one); :class:`LocalPipelineError` naming the consumers that have one
    when there is none or several."""
    found = {
        str(spec.environment.get(CONSUMER_NAME_ENV)): logical_id
        for logical_id, spec in pipeline.stack.functions().items()
        if BACKFILL_TABLE_ENV in spec.environment
    }
    stack = pipeline.stack.stack_name
    if consumer is not None and consumer in found:
        return found[consumer]
    if consumer is None and len(found) == 1:
        return next(iter(found.values()))
    if not found:
        raise LocalPipelineError(
            f"stack {stack} has no ViewBackfill: add one for the consumer to backfill "
            "(docs/backfill.md)"
        )
    having = ", ".join(sorted(found))
    if consumer is None:
        raise LocalPipelineError(
            f"stack {stack} has {len(found)} ViewBackfills, of consumers {having}: name one "
            "with --consumer-name"
        )
    raise LocalPipelineError(
        f"consumer {consumer!r} has no ViewBackfill in stack {stack}; the consumers with one: "
        f"{having} (--consumer-name takes a consumer's consumer_name)"
    )


def _segment_settings(pipeline: Any, consumer: str | None) -> tuple[str, BackfillSettings]:
    """The segment function's logical id and settings."""
    logical_id = backfill_segment_function(pipeline, consumer)
    environment = pipeline.functions[logical_id].environment
    return logical_id, BackfillSettings.from_environment(environment)


def _function_named(pipeline: Any, name: str) -> Any:
    for function in pipeline.functions.values():
        if function.name == name:
            return function
    raise LocalPipelineError(f"the consumer function {name} is not in the local pipeline")
