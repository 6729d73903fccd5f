"""``cdc-backfill``: start and watch a backfill (docs/backfill.md), on AWS or locally.

    cdc-backfill start --state-machine-arn ARN [--segments N] [--horizon EPOCH] [--id ID]
    cdc-backfill watch --execution-arn ARN [--consumer NAME]
    cdc-backfill local --assembly cdk.out --stack STACK [--consumer NAME] [--segments N]

``start`` starts the ViewBackfill's state machine (StartExecution with a BackfillRequest) and
watches it; ``watch`` follows an execution: its Distributed Map run's segments done / total
(DescribeMapRun), the items handed over (the segment function's ``BackfillItems`` metric, with
``--consumer``), items per second and an ETA, with a progress bar, until the execution ends.
``local`` runs the stack's consumers on the local pipeline (as ``cdc-local``) and, once the
consumer has applied a change, the backfill, the same segment code in threads, with the same
bar. Exit 0 when the backfill succeeded, 1 when it failed, 2 for an operator mistake.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
from cdc_consumer.contract import (
    BACKFILL_ITEMS,
    CONSUMER_DIMENSION,
    DEFAULT_METRICS_NAMESPACE,
    BackfillRefusal,
    BackfillRequest,
)
from cdc_consumer.exceptions import BackfillRefusedError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from cdc_local.exceptions import LocalPipelineError

PROG = "cdc-backfill"
#: Seconds between two looks at a running execution.
POLL_SECONDS = 5.0


@dataclass
class Snapshot:
    """What a backfill has done so far, as the progress bar shows it."""

    segments_done: int
    total_segments: int | None
    items: int
    finished: bool = False
    failed: bool = False
    status: str = "RUNNING"


def progress_bar(console: Console) -> Progress:
    """Segments done / total with an ETA, items and items per second."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("segments  {task.fields[items]:,} items  {task.fields[rate]:,.0f} items/s"),
        TimeRemainingColumn(),
        console=console,
    )


def follow(
    look: Callable[[], Snapshot],
    console: Console,
    every: float,
    sleep: Callable[[float], None] = time.sleep,
) -> Snapshot:
    """Show ``look()`` every ``every`` seconds until it is finished; its last snapshot."""
    started = time.monotonic()
    with progress_bar(console) as progress:
        task = progress.add_task("backfill", total=None, items=0, rate=0.0)
        while True:
            seen = look()
            elapsed = max(time.monotonic() - started, 1e-6)
            progress.update(
                task,
                total=seen.total_segments,
                completed=seen.segments_done,
                items=seen.items,
                rate=seen.items / elapsed,
            )
            if seen.finished:
                return seen
            sleep(every)


# --- on AWS ----------------------------------------------------------------------------------


@dataclass
class ExecutionWatch:
    """Looks at one execution of a ViewBackfill state machine (Step Functions and CloudWatch)."""

    execution_arn: str
    stepfunctions: Any
    cloudwatch: Any
    consumer: str | None = None
    namespace: str = DEFAULT_METRICS_NAMESPACE

    def look(self) -> Snapshot:
        execution = self.stepfunctions.describe_execution(executionArn=self.execution_arn)
        status = execution["status"]
        done, total = self._segments()
        items = self._items(execution["startDate"]) if self.consumer else 0
        return Snapshot(done, total, items, status != "RUNNING", status != "SUCCEEDED", status)

    def _segments(self) -> tuple[int, int | None]:
        runs = self.stepfunctions.list_map_runs(executionArn=self.execution_arn).get("mapRuns", [])
        done = total = 0
        for run in runs:
            counts = self.stepfunctions.describe_map_run(mapRunArn=run["mapRunArn"])["itemCounts"]
            done += int(counts.get("succeeded", 0))
            total += int(counts.get("total", 0))
        return done, (total or None)

    def _items(self, since: datetime) -> int:
        response = self.cloudwatch.get_metric_statistics(
            Namespace=self.namespace,
            MetricName=BACKFILL_ITEMS.name,
            Dimensions=[{"Name": CONSUMER_DIMENSION, "Value": self.consumer}],
            StartTime=since,
            EndTime=datetime.now(UTC),
            Period=60,
            Statistics=["Sum"],
        )
        return int(sum(point["Sum"] for point in response.get("Datapoints", [])))


def start(arguments: argparse.Namespace, stepfunctions: Any) -> str:
    """StartExecution with the request; the execution's ARN."""
    request = BackfillRequest(
        arguments.id or f"backfill-{uuid.uuid4().hex[:12]}", arguments.segments, arguments.horizon
    )
    response = stepfunctions.start_execution(
        stateMachineArn=arguments.state_machine_arn,
        name=request.backfill_id,
        input=json.dumps(request.to_dict()),
    )
    return str(response["executionArn"])


# --- locally ---------------------------------------------------------------------------------


def run_local(arguments: argparse.Namespace, console: Console) -> Snapshot:
    """The stack's consumers on the local pipeline, then the backfill once it can start."""
    from cdc_local.backfill import LocalBackfill
    from cdc_local.runner import LocalPipeline

    with LocalPipeline(arguments.assembly, arguments.stack) as pipeline:
        backfill = LocalBackfill(pipeline, arguments.consumer)
        plan = None
        while plan is None:
            pipeline.poll()
            try:
                plan = backfill.plan(arguments.id or "local", arguments.segments)
            except BackfillRefusedError as refused:
                if refused.refusal is not BackfillRefusal.NO_PROGRESS:
                    raise
                console.print("waiting for the consumer to apply a change...", style="dim")
                time.sleep(2)
        errors: list[BaseException] = []

        def run() -> None:
            try:
                backfill.run(plan)
            except BaseException as error:  # shown as a failed backfill
                errors.append(error)

        thread = threading.Thread(target=run, name="backfill", daemon=True)
        thread.start()

        def look() -> Snapshot:
            pipeline.poll()  # the stream keeps flowing while the backfill runs
            seen = backfill.progress
            finished = not thread.is_alive()
            status = "FAILED" if errors else ("SUCCEEDED" if finished else "RUNNING")
            return Snapshot(
                seen.segments_done, seen.total_segments, seen.items, finished, bool(errors), status
            )

        snapshot = follow(look, console, 0.2)
        for error in errors:
            console.print(f"{PROG}: the backfill failed: {error}", markup=False, soft_wrap=True)
        return snapshot


# --- the command line ------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    starting = commands.add_parser("start", help="start a deployed backfill and watch it")
    starting.add_argument("--state-machine-arn", required=True)
    watching = commands.add_parser("watch", help="watch a deployed backfill's execution")
    watching.add_argument("--execution-arn", required=True)
    local = commands.add_parser("local", help="run a backfill on the local pipeline")
    local.add_argument("--assembly", default="cdk.out")
    local.add_argument("--stack", required=True)
    for command in (starting, local):
        command.add_argument("--segments", type=int, default=None, help="default: by size")
        command.add_argument("--id", default=None, help="the backfill id (reruns resume it)")
    starting.add_argument("--horizon", type=int, default=None, help="epoch seconds")
    for command in (starting, watching, local):
        command.add_argument("--consumer", default=None, help="the consumer backfilled")
    for command in (starting, watching):
        command.add_argument("--namespace", default=DEFAULT_METRICS_NAMESPACE)
    return parser


def main(argv: Sequence[str] | None = None, clients: Callable[[str], Any] = boto3.client) -> int:
    arguments = build_parser().parse_args(argv)
    console = Console(stderr=True)
    try:
        if arguments.command == "local":
            seen = run_local(arguments, console)
        else:
            stepfunctions = clients("stepfunctions")
            arn = (
                start(arguments, stepfunctions)
                if arguments.command == "start"
                else arguments.execution_arn
            )
            console.print(f"execution {arn}", markup=False, soft_wrap=True)
            watch = ExecutionWatch(
                arn, stepfunctions, clients("cloudwatch"), arguments.consumer, arguments.namespace
            )
            seen = follow(watch.look, console, POLL_SECONDS)
    except (BackfillRefusedError, LocalPipelineError) as error:
        console.print(f"{PROG}: error: {error}", style="red", markup=False, soft_wrap=True)
        return 2
    print(
        json.dumps(
            {
                "status": seen.status,
                "segments": seen.segments_done,
                "totalSegments": seen.total_segments,
                "items": seen.items,
            }
        ),
        flush=True,
    )
    return 1 if seen.failed else 0


if __name__ == "__main__":
    sys.exit(main())
