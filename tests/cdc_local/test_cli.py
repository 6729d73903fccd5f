"""`python -m cdc_local` and the handler-output parsing behind its summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdc_local.__main__ import main
from cdc_local.endpoint import LocalEndpoint
from cdc_local.runner import emf_metrics


def test_a_missing_assembly_exits_2_saying_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--assembly", str(tmp_path), "--demo"]) == 2
    assert "run `cdk synth` first" in capsys.readouterr().err


def test_the_demo_needs_the_reference_consumer(
    aws: LocalEndpoint, assembly_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `aws` empties moto first: every moto server in a process shares one backend, so the
    # demo's own endpoint would otherwise meet the tables earlier tests left behind.
    assert main(["--assembly", str(assembly_dir), "--stack", "Basic", "--demo"]) == 2
    assert "handler is 'orders_consumers.handler'" in capsys.readouterr().err


def test_emf_lines_yield_their_metric_values_and_other_lines_nothing() -> None:
    line = json.dumps(
        {
            "_aws": {
                "Timestamp": 1,
                "CloudWatchMetrics": [
                    {
                        "Namespace": "CdcConstructs",
                        "Dimensions": [["Consumer"]],
                        "Metrics": [{"Name": "RecordsProcessed"}, {"Name": "DuplicatesSkipped"}],
                    }
                ],
            },
            "Consumer": "order-stats",
            "RecordsProcessed": 7,
            "DuplicatesSkipped": [1, 2],
        }
    )
    assert emf_metrics(line) == ("order-stats", {"RecordsProcessed": 7, "DuplicatesSkipped": 3})
    assert emf_metrics('{"level": "INFO", "message": "batch processed"}') == (None, {})
    assert emf_metrics("plain text") == (None, {})
