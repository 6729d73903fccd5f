"""cdc-backfill on AWS: start an execution with a BackfillRequest, follow its map run's segments
and the segment function's item metric to the end; its exit code says how it ended."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from cdc_local.backfill_cli import main


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
