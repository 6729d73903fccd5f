"""``make deploy-local``: the reference stack deployed by the real CDK CLI to MiniStack, then
exercised through boto3. The steps, in order:

1. install MiniStack (its own virtualenv, :mod:`deploy_local.emulator_venv`);
2. start it on 127.0.0.1 on a free port (:mod:`deploy_local.emulator`);
3. ``cdk synth``, ``cdk bootstrap``, ``cdk deploy`` (:mod:`deploy_local.cdk_cli`);
4. read back what was deployed and check it (:mod:`deploy_local.checks`): every resource
   created, the consumers' environments resolve, each consumer loads its layer;
5. write orders, wait (bounded) for the view, check the contribution records, quarantine a
   poison order
   (:mod:`deploy_local.orders`), count the consumer's log lines (:mod:`deploy_local.logs`);
5b. run the backfill state machine (:mod:`deploy_local.backfill`): a refused execution, then a
   backfill of the order-stats view while orders keep being written, the view exact after it;
6. change the app (``-c alarmEmail=...``) and ``cdk diff`` it against the deployed stack;
7. stop the emulator - always, also on a failure or Ctrl-C.

A failed step raises :class:`~deploy_local.exceptions.StepFailed` naming the step and its log.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from cdc_consumer.metric_names import BACKFILL_ITEMS

from cdc_local.accounting import scan
from deploy_local import backfill, checks, orders
from deploy_local.cdk_cli import CdkCli
from deploy_local.deployed_stack import DeployedStack, OrderStatsWiring
from deploy_local.emulator import READY_TIMEOUT_SECONDS, Emulator
from deploy_local.emulator_venv import EmulatorVenv
from deploy_local.exceptions import StepFailed
from deploy_local.logs import count_log_lines, sum_metric
from deploy_local.paths import DEFAULT_WORKDIR
from deploy_local.summary import Summary

STACK_NAME = "CdcReferenceStack"

DIFF_CONTEXT = {"alarmEmail": "deploy-local@example.com"}
"""The change shown by ``cdk diff``: app.py subscribes this address to the alarm topic."""

_DIFF_LINE = re.compile(r"^\[[+\-~]\] ")

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Options:
    """One run. Defaults: the reference stack, a free port, 60 order changes, waits of 60 s
    (300 s for the backfill's execution).

    ``assembly``: deploy this cloud assembly (e.g. ``make synth``'s cdk.out) instead of
    synthesizing the app first; it must have been synthesized for ``stack`` (assets bundled).
    """

    stack: str = STACK_NAME
    port: int | None = None
    workdir: Path = DEFAULT_WORKDIR
    changes: int = 60
    seed: int = 0
    wait_seconds: float = 60.0
    backfill_wait_seconds: float = 300.0
    diff_context: Mapping[str, str] = field(default_factory=lambda: dict(DIFF_CONTEXT))
    venv: EmulatorVenv | None = None
    assembly: Path | None = None
    ready_timeout: float = READY_TIMEOUT_SECONDS


class _Steps:
    """Times each step, reports it, and turns an unexpected error inside a step into a
    StepFailed naming it (with the emulator's log, where the server side of it is)."""

    def __init__(self, summary: Summary, progress: Progress, fallback_log: Path) -> None:
        self.summary = summary
        self.progress = progress
        self.fallback_log = fallback_log
        self.current = ""

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        self.current = name
        self.progress(f"-> {name}")
        start = time.monotonic()
        try:
            yield
        except (ClientError, BotoCoreError, OSError) as error:
            raise StepFailed(name, f"{type(error).__name__}: {error}", self.fallback_log) from error
        self.summary.step_seconds[name] = round(time.monotonic() - start, 1)


def run(options: Options, progress: Progress = print) -> Summary:
    """The whole flow; returns the summary (``summary.ok`` tells whether it all held).

    Raises StepFailed when a step cannot go on; the emulator is stopped in every case.
    """
    started = time.monotonic()
    workdir = _fresh_workdir(options.workdir)
    summary = Summary(stack=options.stack)
    steps = _Steps(summary, progress, workdir / "emulator.log")
    with steps.step("install MiniStack"):
        venv = (options.venv or EmulatorVenv.default()).ensure(workdir / "install-ministack.log")
    emulator = Emulator(venv, workdir, options.port, options.ready_timeout)
    try:
        with steps.step("start emulator"):
            emulator.start()
        summary.endpoint, summary.emulator_pid = emulator.endpoint_url, emulator.pid
        progress(f"   MiniStack PID {emulator.pid} on {emulator.endpoint_url}")
        _deploy_and_exercise(options, emulator, workdir, summary, steps, progress)
    finally:
        emulator.stop()
    summary.seconds = round(time.monotonic() - started, 1)
    return summary


def _deploy_and_exercise(
    options: Options,
    emulator: Emulator,
    workdir: Path,
    summary: Summary,
    steps: _Steps,
    progress: Progress,
) -> None:
    cli = CdkCli(emulator.cli_environment(), workdir)
    if options.assembly is not None:
        assembly = options.assembly.resolve()
    else:
        with steps.step("cdk synth"):
            assembly = cli.synth(options.stack, workdir / "cdk.out")
    with steps.step("cdk bootstrap"):
        cli.bootstrap(assembly)
    with steps.step("cdk deploy"):
        cli.deploy(options.stack, assembly)
    client = emulator.client
    with steps.step("check deployment"):
        stack = DeployedStack.read(client, options.stack)
        expected = checks.template_resources(assembly, options.stack)
        summary.resources_created = checks.check_created(stack, expected)
    with steps.step("check environment"):
        summary.environment_resources = checks.check_environment(client, stack)
    with steps.step("layer import"):
        summary.consumers_loaded = checks.check_layer_imports(client, stack)
    wiring = OrderStatsWiring.of(stack)
    _exercise_stream(options, client, wiring, summary, steps)
    _exercise_backfill(options, client, stack, wiring, summary, steps)
    with steps.step("cdk diff"):
        report = cli.diff(options.stack, options.diff_context, workdir / "cdk.out.changed")
        summary.diff_changes = [line for line in report.splitlines() if _DIFF_LINE.match(line)]
    context = " ".join(f"-c {k}={v}" for k, v in options.diff_context.items())
    progress(f"   cdk diff {options.stack} {context}:")
    for line in summary.diff_changes or ["(no differences)"]:
        progress(f"     {line}")


def _exercise_stream(
    options: Options, client: Any, wiring: OrderStatsWiring, summary: Summary, steps: _Steps
) -> None:
    """Orders through the stream: the view, its contribution records, a poison order, the logs."""
    ddb, sqs = client("dynamodb"), client("sqs")
    with steps.step("write orders"):
        summary.orders_written = orders.write_orders(ddb, wiring, options.changes, options.seed)
    with steps.step("wait for the view"):
        summary.view_reconciled, summary.view_seconds = orders.wait_until(
            lambda: orders.view_reconciled(ddb, wiring), options.wait_seconds
        )
    with steps.step("check contributions"):
        markers = orders.check_markers(ddb, client("dynamodbstreams"), wiring)
        summary.stream_records, summary.orders_counted = markers.records, markers.counted
        summary.markers = markers.markers
        summary.markers_missing = len(markers.missing)
    with steps.step("quarantine a poison order"):
        pk = orders.send_poison(ddb, wiring)
        summary.poison_quarantined, _ = orders.wait_until(
            lambda: orders.quarantined(sqs, wiring, pk), options.wait_seconds
        )
    with steps.step("read logs"):
        counts = count_log_lines(client("logs"), wiring.function.log_group)
        summary.log_group = counts.group
        summary.log_json_lines, summary.log_emf_lines = counts.json_lines, counts.emf_lines


def _exercise_backfill(
    options: Options,
    client: Any,
    stack: DeployedStack,
    wiring: OrderStatsWiring,
    summary: Summary,
    steps: _Steps,
) -> None:
    """The state machine: a refusal, then a backfill while orders keep being written, the view
    still exact after it, the items it handed over (deploy_local/backfill.py)."""
    ddb, sfn = client("dynamodb"), client("stepfunctions")
    engine = backfill.BackfillWiring.of(stack)
    with steps.step("backfill refused"):
        refusal = backfill.run_backfill(
            sfn, engine, backfill.refusal_request(), options.wait_seconds
        )
        summary.backfill_refused = backfill.refused(refusal)
        summary.backfill_refusal_error = refusal.error
    with steps.step("backfill while writing"):
        summary.backfill_table_items = len(scan(ddb, wiring.source_table))
        run, written = backfill.while_running(
            lambda: orders.write_orders(ddb, wiring, options.changes // 3, options.seed + 1),
            lambda: backfill.run_backfill(
                sfn, engine, backfill.backfill_request(), options.backfill_wait_seconds
            ),
        )
        summary.orders_written += written
        summary.backfill_status, summary.backfill_seconds = run.status, run.seconds
        summary.backfill_segments = run.segments
        summary.backfill_segments_succeeded = run.segments_succeeded
    with steps.step("wait for the view after the backfill"):
        summary.view_reconciled_after_backfill, _ = orders.wait_until(
            lambda: orders.view_reconciled(ddb, wiring), options.wait_seconds
        )
    with steps.step("read backfill metrics"):
        group = engine.segment_function.log_group
        summary.backfilled_items = sum_metric(client("logs"), group, BACKFILL_ITEMS.name)


def _fresh_workdir(workdir: Path) -> Path:
    """The run's directory, without a previous run's logs, assemblies and emulator state."""
    workdir.mkdir(parents=True, exist_ok=True)
    for name in ("cdk.out", "cdk.out.changed", "emulator-state"):
        shutil.rmtree(workdir / name, ignore_errors=True)
    for log in workdir.glob("*.log"):
        log.unlink()
    return workdir
