"""`cdc-local` (`python -m cdc_local`) and the handler-output parsing behind its summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdc_local.__main__ import main, stack_to_run
from cdc_local.assembly import CloudAssembly
from cdc_local.runner import emf_metrics


def test_a_missing_assembly_exits_2_saying_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--assembly", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert "run `cdk synth` first" in error and error.startswith("cdc-local: error:")


def test_the_stack_defaults_to_the_only_one_and_is_asked_for_among_several(
    assembly_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = CloudAssembly(assembly_dir).stack_names()
    assert len(names) > 1
    assert main(["--assembly", str(assembly_dir)]) == 2
    error = capsys.readouterr().err
    assert f"has {len(names)} stacks" in error and "--stack" in error
    assert stack_to_run(str(assembly_dir), "Basic") == "Basic"


def test_usage_names_the_console_script_and_the_library_has_no_demo(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    usage = capsys.readouterr().out
    assert usage.startswith("usage: cdc-local "), usage
    assert "--demo" not in usage  # the demo is the reference app's: python -m reference_app


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
