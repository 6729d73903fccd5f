"""cdc-backfill on AWS: start an execution with a BackfillRequest, follow its map run's segments
and the segment function's item metric to the end; its exit code says how it ended."""

from __future__ import annotations

import importlib.util
import json
import re
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import pytest

from cdc_local.backfill_cli import execution_name, main
from cdc_local.backfill_run import LocalRun, read_seed
from cdc_local.endpoint import LocalEndpoint
from tests.docs.blocks import DOCS, blocks


class StepFunctions:
    """A state machine whose execution runs 3 segments over three looks, then ends as given."""

    def __init__(self, ending: str = "SUCCEEDED") -> None:
        self.ending = ending
        self.looks = 0
        self.started: dict[str, Any] = {}

    def start_execution(self, **request: Any) -> dict[str, Any]:
        self.started = request
        return {"executionArn": f"arn:aws:states:eu-west-1:1:execution:m:{request['name']}"}

    def describe_execution(self, executionArn: str) -> dict[str, Any]:
        self.looks += 1
        status = "RUNNING" if self.looks < 3 else self.ending
        return {"status": status, "startDate": datetime.now(UTC)}

    def list_map_runs(self, executionArn: str) -> dict[str, Any]:
        return {"mapRuns": [{"mapRunArn": "arn:run"}]}

    def describe_map_run(self, mapRunArn: str) -> dict[str, Any]:
        return {"itemCounts": {"succeeded": self.looks, "total": 3}}


class CloudWatch:
    def get_metric_statistics(self, **request: Any) -> dict[str, Any]:
        assert request["MetricName"] == "BackfillItems"
        assert request["Dimensions"] == [{"Name": "Consumer", "Value": "order-stats"}]
        return {"Datapoints": [{"Sum": 40.0}, {"Sum": 2.0}]}


def run(argv: list[str], stepfunctions: StepFunctions, monkeypatch: Any) -> int:
    monkeypatch.setattr("cdc_local.backfill_cli.POLL_SECONDS", 0)
    clients = {"stepfunctions": stepfunctions, "cloudwatch": CloudWatch()}
    return main(argv, clients=clients.__getitem__)


def test_start_runs_the_request_and_follows_it_to_the_end(monkeypatch: Any, capsys: Any) -> None:
    machine = StepFunctions()
    argv = ["start", "--state-machine-arn", "arn:sm", "--segments", "3", "--id", "b1"]
    code = run([*argv, "--consumer", "order-stats"], machine, monkeypatch)

    assert code == 0
    assert json.loads(machine.started["input"]) == {
        "backfillId": "b1",
        "totalSegments": 3,
        "horizon": None,
    }
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last == {"status": "SUCCEEDED", "segments": 3, "totalSegments": 3, "items": 42}


def test_a_failed_execution_exits_1(monkeypatch: Any) -> None:
    argv = ["watch", "--execution-arn", "arn:x"]
    assert run(argv, StepFunctions("FAILED"), monkeypatch) == 1


# --- cdc-backfill local on your own app: the app of docs/getting-started.md -------------------

GETTING_STARTED = DOCS / "getting-started.md"


def _block(marker: str, language: str = "python") -> str:
    found = [b.code for b in blocks(GETTING_STARTED) if b.language == language and marker in b.code]
    assert len(found) == 1, f"{GETTING_STARTED}: {len(found)} {language} blocks with {marker!r}"
    return found[0]


def _shop_app(app_dir: Path, order_stats: str) -> Path:
    """The getting-started app with its step 6 (a consumer and its ViewBackfill), written from
    the page's blocks with ``order_stats`` as the consumer's handler, and synthesized."""
    (app_dir / "handlers").mkdir()
    (app_dir / "handlers" / "orders.py").write_text(_block("def customer_totals("))
    (app_dir / "handlers" / "order_stats.py").write_text(order_stats)
    stack = _block("class ShopStack(Stack):").replace(
        "StreamConsumer, StreamFilters", "StreamConsumer, StreamFilters, ViewBackfill"
    )
    stack += textwrap.indent(_block('ViewBackfill(self, "OrderStats'), " " * 8)
    # The CDK's Node process resolves assets from its own working directory: the app's, here.
    handlers = str(app_dir / "handlers")
    (app_dir / "shop_stack.py").write_text(stack.replace('"handlers"', repr(handlers)))
    (app_dir / "orders.jsonl").write_text(_block('"ORDER#1"', "json"))
    spec = importlib.util.spec_from_file_location(
        f"shop_stack_{app_dir.name}", app_dir / "shop_stack.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app = cdk.App(outdir=str(app_dir / "cdk.out"))
    module.ShopStack(app, "ShopStack")
    app.synth()
    return app_dir


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The getting-started app with its step 6 (a Contributions consumer and its ViewBackfill);
    its directory (cdk.out, orders.jsonl)."""
    return _shop_app(tmp_path_factory.mktemp("shop"), _block('Contributions("order-stats"'))


#: A projection of differences, which a backfill cannot take (its rows are not differences).
DELTA_ORDER_STATS = """\
from cdc_consumer import StreamProcessor

processor = StreamProcessor()


@processor.projection
def order_stats(change):
    return []


def handler(event, context):
    return processor.handle(event, context)
"""


@pytest.fixture(scope="module")
def delta_shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same app whose consumer applies differences: its backfill is refused."""
    return _shop_app(tmp_path_factory.mktemp("delta-shop"), DELTA_ORDER_STATS)


# Each test asks for ``aws``: moto's servers in one process share one backend, which the
# fixture resets, so each run's pipeline creates the app's tables afresh.


def test_cdc_backfill_local_backfills_your_app_from_a_seed_file(
    aws: LocalEndpoint, shop: Path, capsys: Any
) -> None:
    argv = ["local", "--assembly", str(shop / "cdk.out"), "--stack", "ShopStack"]
    argv += ["--consumer-name", "OrderStats", "--seed", str(shop / "orders.jsonl")]

    assert main([*argv, "--wait", "30"]) == 0

    captured = capsys.readouterr()
    last = json.loads(captured.out.strip().splitlines()[-1])
    assert last == {"status": "SUCCEEDED", "segments": 1, "totalSegments": 1, "items": 3}
    for step in (
        "local endpoint: AWS_ENDPOINT_URL=http://127.0.0.1:",
        "seeding 2 item(s) into table",
        "writing the last seed item",
        "waiting (at most 30 s) for consumer OrderStats to apply a change",
        "backfill local: table",
        "backfill done: 3 item(s) handed over in 1 of 1 segment(s)",
    ):
        assert step in captured.err, step


def test_the_view_holds_the_orders_written_before_the_consumer(
    aws: LocalEndpoint, shop: Path
) -> None:
    """LocalRun from Python, as docs/backfill.md ("From Python") shows it."""
    run = LocalRun(
        str(shop / "cdk.out"),
        "ShopStack",
        "OrderStats",
        backfill_id="again",
        seed=read_seed(shop / "orders.jsonl"),
        wait_seconds=30,
        say=lambda line: None,
    )
    with run.pipeline() as pipeline:
        running = run.run_to_end(pipeline)
        items = pipeline.client("dynamodb").scan(TableName=pipeline.table_name("CustomerStats"))

    stats = {
        item["pk"]["S"]: {name: item[name]["N"] for name in ("orders", "amount")}
        for item in items["Items"]
    }
    assert running.errors == []
    assert stats == {
        "CUSTOMER#c1": {"orders": "2", "amount": "42"},
        "CUSTOMER#c2": {"orders": "1", "amount": "7"},
    }


def test_cdc_backfill_local_waits_a_bounded_time_for_a_change(
    aws: LocalEndpoint, shop: Path, capsys: Any
) -> None:
    argv = ["local", "--assembly", str(shop / "cdk.out"), "--stack", "ShopStack"]

    assert main([*argv, "--consumer-name", "OrderStats", "--wait", "1"]) == 2

    error = capsys.readouterr().err
    assert "consumer OrderStats applied no change within 1 s" in error
    assert "local endpoint: AWS_ENDPOINT_URL=" in error


def test_start_refuses_bad_input_before_starting_anything(monkeypatch: Any, capsys: Any) -> None:
    machine = StepFunctions()
    for bad in (
        ["--id", "with space"],
        ["--id", "x" * 81],
        ["--segments", "0"],
        ["--segments", "10001"],
        ["--horizon", "-5"],
    ):
        code = run(["start", "--state-machine-arn", "arn:sm", *bad], machine, monkeypatch)
        assert code == 2, bad
    assert machine.started == {}
    assert "Step Functions accepts as an execution name" in capsys.readouterr().err


def test_starting_a_backfill_again_never_reuses_an_execution_name(monkeypatch: Any) -> None:
    names = []
    for _ in range(2):
        machine = StepFunctions()
        argv = ["start", "--state-machine-arn", "arn:sm", "--id", "b1"]
        assert run(argv, machine, monkeypatch) == 0
        names.append(machine.started["name"])
        assert json.loads(machine.started["input"])["backfillId"] == "b1"

    assert names[0] != names[1] and all(name.startswith("b1-") for name in names)
    long_name = execution_name("x" * 80, datetime.now(UTC))
    assert len(long_name) == 80 and long_name.startswith("x" * 50)


def test_a_projection_the_backfill_cannot_take_is_refused_in_one_line_exit_2(
    aws: LocalEndpoint, delta_shop: Path, capsys: Any
) -> None:
    argv = ["local", "--assembly", str(delta_shop / "cdk.out"), "--stack", "ShopStack"]
    argv += ["--seed", str(delta_shop / "orders.jsonl"), "--wait", "30"]

    assert main(argv) == 2

    error = capsys.readouterr().err
    (line,) = [line for line in error.splitlines() if line.startswith("cdc-backfill: error:")]
    assert "consumer 'OrderStats' cannot take snapshot rows" in line
    assert "Traceback" not in error


def test_a_consumer_without_a_backfill_is_refused_naming_those_with_one(
    aws: LocalEndpoint, shop: Path, capsys: Any
) -> None:
    argv = ["local", "--assembly", str(shop / "cdk.out"), "--stack", "ShopStack"]

    assert main([*argv, "--consumer-name", "OrderTotals", "--wait", "1"]) == 2

    error = capsys.readouterr().err
    assert (
        "consumer 'OrderTotals' has no ViewBackfill in stack ShopStack; the consumers with one: "
        "OrderStats"
    ) in error


def test_keep_serving_leaves_the_view_readable_until_stopped(shop: Path) -> None:
    """``--keep-serving``: the endpoint stays up after the backfill; the view is read there,
    then SIGTERM ends the command as Ctrl-C does, with the backfill's exit code."""
    command = [sys.executable, "-m", "cdc_local.backfill_cli", "local", "--keep-serving"]
    command += ["--assembly", str(shop / "cdk.out"), "--stack", "ShopStack", "--id", "served"]
    command += ["--seed", str(shop / "orders.jsonl"), "--wait", "60"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=shop
    )
    try:
        lines = _lines_until(process, "serving until Ctrl-C", timeout=240)
        endpoint = re.search(r"AWS_ENDPOINT_URL=(\S+) AWS_DEFAULT_REGION=(\S+)", lines[-1])
        table = [line.split(": ")[1] for line in lines if line.startswith("table CustomerStats")]
        assert endpoint and table, lines
        dynamodb = boto3.client(
            "dynamodb",
            endpoint_url=endpoint[1],
            region_name=endpoint[2],
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        items = dynamodb.scan(TableName=table[0])["Items"]
        assert {item["pk"]["S"]: item["orders"]["N"] for item in items} == {
            "CUSTOMER#c1": "2",
            "CUSTOMER#c2": "1",
        }
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
    assert process.returncode == 0
    assert json.loads(out.strip().splitlines()[-1])["status"] == "SUCCEEDED"


def _lines_until(process: subprocess.Popen[str], marker: str, timeout: float) -> list[str]:
    """stderr's lines up to the first with ``marker``."""
    assert process.stderr is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if marker in line:
            return lines
    raise AssertionError(f"no {marker!r} within {timeout} s: {lines}")
