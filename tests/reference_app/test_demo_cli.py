"""`python -m reference_app` (make local): the example's demo, outside the library."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_local.endpoint import LocalEndpoint
from reference_app.__main__ import main
from tests.cdc_local.stacks import build


def test_a_missing_assembly_exits_2_saying_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--assembly", str(tmp_path)]) == 2
    assert "run `cdk synth` first" in capsys.readouterr().err


def test_the_demo_needs_the_reference_consumer(
    aws: LocalEndpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `aws` empties moto first: every moto server in a process shares one backend, so the
    # demo's own endpoint would otherwise meet the tables earlier tests left behind.
    assembly = build(tmp_path / "cdk.out")
    assert main(["--assembly", str(assembly), "--stack", "Basic"]) == 2
    assert "handler is 'orders_consumers.handler'" in capsys.readouterr().err
