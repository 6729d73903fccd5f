"""``cdc-backfill``: start and watch a backfill (docs/backfill.md), on AWS or locally.

    cdc-backfill start --state-machine-arn ARN [--segments N] [--horizon EPOCH] [--id ID]
    cdc-backfill watch --execution-arn ARN [--consumer-name NAME]
    cdc-backfill local [--assembly cdk.out] [--stack STACK] [--consumer-name NAME] [--segments N]
                       [--seed FILE] [--wait SECONDS] [--keep-serving]

``start`` starts the ViewBackfill's state machine (StartExecution with a BackfillRequest) and
watches it; ``watch`` follows an execution: its Distributed Map run's segments done / total
(DescribeMapRun), the items handed over (the segment function's ``BackfillItems`` metric, with
``--consumer``), items per second and an ETA, with a progress bar, until the execution ends.
``local`` runs your app's backfill on this machine, start to end (:mod:`cdc_local.backfill_run`):
the local pipeline (its endpoint printed), items of ``--seed`` written before the consumer
exists, a bounded wait for the consumer to apply a change, the plan (horizon, segments), the
same segment code in threads with the same bar, then the stream read to its end; with
``--keep-serving`` the endpoint then stays up, its tables named, until Ctrl-C. Exit 0 when the
backfill succeeded, 1 when it failed, 2 for an operator mistake or a refusal (one line, from
the start step or from a segment).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
from cdc_consumer.backfill.shapes import (
    BACKFILL_ID_MAX_LENGTH,
    MAX_PLANNED_SEGMENTS,
    BackfillRequest,
)
from cdc_consumer.backfill.shapes import backfill_id as contract_backfill_id
from cdc_consumer.exceptions import BackfillRefusedError
from cdc_consumer.message_fields import ContractError
from cdc_consumer.metric_names import BACKFILL_ITEMS, CONSUMER_DIMENSION, DEFAULT_METRICS_NAMESPACE
from cdc_consumer.redrive.interrupts import EXIT_INTERRUPTED, sigterm_as_keyboard_interrupt
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from cdc_local.command_line import (
    add_assembly_arguments,
    add_consumer_name_argument,
    add_endpoint_url_argument,
    description,
    stack_to_run,
)
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
    """StartExecution with the request, checked first (nothing is started on bad input); the
    execution's ARN. The execution's name is the backfill id and the time, so starting the same
    id again (to resume it) never clashes with an earlier execution's name."""
    request = checked_request(arguments.id, arguments.segments, arguments.horizon)
    response = stepfunctions.start_execution(
        stateMachineArn=arguments.state_machine_arn,
        name=execution_name(request.backfill_id, datetime.now(UTC)),
        input=json.dumps(request.to_dict()),
    )
    return str(response["executionArn"])


def checked_request(
    backfill_id: str | None, segments: int | None, horizon: int | None
) -> BackfillRequest:
    """A request the start step can take, or :class:`BackfillRefusedError` saying what is wrong
    (an id Step Functions refuses, segments out of range, a horizon not positive)."""
    try:
        checked = contract_backfill_id(backfill_id or f"backfill-{uuid.uuid4().hex[:12]}")
    except ContractError as error:
        raise BackfillRefusedError(str(error)) from None
    if segments is not None and not 1 <= segments <= MAX_PLANNED_SEGMENTS:
        raise BackfillRefusedError(
            f"--segments is {segments}; a backfill plans 1..{MAX_PLANNED_SEGMENTS:,} segments "
            "(or leave it out: the start step decides from the table's size)"
        )
    if horizon is not None and horizon <= 0:
        raise BackfillRefusedError(
            f"--horizon is {horizon}; give positive epoch seconds (or leave it out)"
        )
    return BackfillRequest(checked, segments, horizon)


def execution_name(backfill_id: str, now: datetime) -> str:
    """``<id>-<UTC time>-<4 hex>``, within Step Functions' 80 characters (the id cut short in
    the name when needed; the input carries it whole)."""
    suffix = f"-{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:4]}"
    return backfill_id[: BACKFILL_ID_MAX_LENGTH - len(suffix)] + suffix


# --- locally ---------------------------------------------------------------------------------


def run_local(arguments: argparse.Namespace, console: Console) -> Snapshot:
    """Your app's backfill on the local pipeline, start to end (:mod:`cdc_local.backfill_run`)."""
    from cdc_local.backfill import LocalBackfill
    from cdc_local.backfill_run import LocalRun, read_seed

    run = LocalRun(
        arguments.assembly,
        arguments.stack,
        arguments.consumer,
        arguments.id or "local",
        arguments.segments,
        read_seed(arguments.seed) if arguments.seed else [],
        arguments.wait,
        say=lambda line: console.print(line, markup=False, soft_wrap=True),
    )
    with run.pipeline() as pipeline:
        backfill = LocalBackfill(pipeline, arguments.consumer)
        running = run.run(pipeline, backfill, run.plan(pipeline, backfill))

        def look() -> Snapshot:
            pipeline.poll()  # the stream keeps flowing while the backfill runs
            seen, failed = running.progress, bool(running.errors)
            status = "FAILED" if failed else ("SUCCEEDED" if running.finished else "RUNNING")
            return Snapshot(
                seen.segments_done,
                seen.total_segments,
                seen.items,
                running.finished,
                failed,
                status,
            )

        snapshot = follow(look, console, 0.2)
        refusals = [e for e in running.errors if isinstance(e, _REFUSALS)]
        for error in running.errors:
            if not isinstance(error, _REFUSALS):
                console.print(f"{PROG}: the backfill failed: {error}", markup=False, soft_wrap=True)
        run.settle(pipeline, running)
        if refusals:
            raise refusals[0]  # one line and exit 2, as a refusal of the start step
        if arguments.keep_serving:
            keep_serving(pipeline, console)
        return snapshot


_REFUSALS = (BackfillRefusedError, LocalPipelineError)
"""What ends a run as an operator's mistake or a refusal: one line, exit 2."""


def keep_serving(
    pipeline: Any, console: Console, sleep: Callable[[float], None] = time.sleep
) -> None:
    """Keep the local endpoint and the stream's mappings running after the backfill, the
    stack's tables named, until Ctrl-C or SIGTERM (which end it normally)."""
    assert pipeline.endpoint is not None and pipeline.resources is not None
    for logical_id, name in sorted(pipeline.resources.table_names.items()):
        console.print(f"table {logical_id}: {name}", markup=False, soft_wrap=True)
    console.print(
        f"serving until Ctrl-C: AWS_ENDPOINT_URL={pipeline.endpoint.url} "
        f"AWS_DEFAULT_REGION={pipeline.endpoint.region}",
        markup=False,
        soft_wrap=True,
    )
    try:
        while True:
            pipeline.poll()
            sleep(0.2)
    except KeyboardInterrupt:
        console.print(f"{PROG}: stopped serving", markup=False)


# --- the command line ------------------------------------------------------------------------


_EPILOG = """\
output: the progress bar and messages on stderr; one JSON line (status, segments, totalSegments,
items) on stdout when the backfill ends. Exit 0: it succeeded; 1: it failed; 2: an operator
mistake or a refusal (one line says what); 130: stopped by Ctrl-C or SIGTERM (a deployed
execution keeps running: watch it again; a local run resumes with the same --id)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=description(__doc__),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    starting = _subcommand(commands, "start", "start a deployed backfill and watch it")
    starting.add_argument(
        "--state-machine-arn",
        required=True,
        metavar="ARN",
        help="the ViewBackfill's state machine (its state_machine attribute; a stack output)",
    )
    watching = _subcommand(commands, "watch", "watch a deployed backfill's execution")
    watching.add_argument(
        "--execution-arn", required=True, metavar="ARN", help="the execution to follow"
    )
    local = _subcommand(commands, "local", "run a backfill on the local pipeline")
    add_assembly_arguments(local)
    for command in (starting, local):
        command.add_argument(
            "--segments",
            type=int,
            default=None,
            metavar="N",
            help="parallel-scan segments (default: the state machine's, by table size)",
        )
        command.add_argument(
            "--id", default=None, help="the backfill id (a rerun with the same id resumes it)"
        )
    starting.add_argument(
        "--horizon",
        type=int,
        default=None,
        metavar="EPOCH_SECONDS",
        help="the time from which stream changes win over scanned rows (default: the start "
        "time less the clock-skew margin, or the consumer's progress if earlier)",
    )
    for command in (starting, watching):
        add_consumer_name_argument(
            command,
            "the consumer (its consumer_name) backfilled: the bar counts its items (default: "
            "segments only)",
        )
    add_consumer_name_argument(
        local,
        "the consumer (its consumer_name) to backfill (default: the stack's only consumer with a "
        "ViewBackfill)",
    )
    local.add_argument(
        "--seed",
        default=None,
        metavar="FILE",
        help="items to write before the consumer exists (JSON lines, or a JSON array); the last "
        "one is written once it runs, so it applies a change (default: none; write one yourself "
        "to the endpoint printed)",
    )
    local.add_argument(
        "--keep-serving",
        action="store_true",
        help="keep the local endpoint (and the stream's consumers) up after the backfill, "
        "printing it and the stack's tables, so the view can be read there; Ctrl-C stops it "
        "(default: stop when the backfill ends)",
    )
    local.add_argument(
        "--wait",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long to wait for the consumer to apply a change (default: 60)",
    )
    for command in (starting, watching):
        command.add_argument(
            "--namespace",
            default=DEFAULT_METRICS_NAMESPACE,
            help=f"the consumer's metrics namespace (default: {DEFAULT_METRICS_NAMESPACE})",
        )
        add_endpoint_url_argument(command)
    return parser


def _subcommand(commands: Any, name: str, what: str) -> argparse.ArgumentParser:
    return commands.add_parser(name, help=what, description=f"{PROG} {name}: {what}.")


def _client(clients: Callable[..., Any], name: str, endpoint_url: str | None) -> Any:
    return clients(name, endpoint_url=endpoint_url) if endpoint_url else clients(name)


def main(argv: Sequence[str] | None = None, clients: Callable[..., Any] = boto3.client) -> int:
    arguments = build_parser().parse_args(argv)
    console = Console(stderr=True)
    sigterm_as_keyboard_interrupt()  # SIGTERM ends it as Ctrl-C does
    try:
        if arguments.command == "local":
            arguments.stack = stack_to_run(arguments.assembly, arguments.stack)
            seen = run_local(arguments, console)
        else:
            stepfunctions = _client(clients, "stepfunctions", arguments.endpoint_url)
            arn = (
                start(arguments, stepfunctions)
                if arguments.command == "start"
                else arguments.execution_arn
            )
            console.print(f"execution {arn}", markup=False, soft_wrap=True)
            cloudwatch = _client(clients, "cloudwatch", arguments.endpoint_url)
            watch = ExecutionWatch(
                arn, stepfunctions, cloudwatch, arguments.consumer, arguments.namespace
            )
            seen = follow(watch.look, console, POLL_SECONDS)
    except (BackfillRefusedError, LocalPipelineError) as error:
        console.print(f"{PROG}: error: {error}", style="red", markup=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        console.print(f"{PROG}: interrupted: {_INTERRUPTED[arguments.command]}", markup=False)
        return EXIT_INTERRUPTED
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


_INTERRUPTED = {
    "start": "the execution keeps running on AWS (cdc-backfill watch --execution-arn ...)",
    "watch": "the execution keeps running on AWS (watch it again)",
    "local": "the local backfill stopped; run it again with the same --id to resume it",
}


if __name__ == "__main__":
    sys.exit(main())
