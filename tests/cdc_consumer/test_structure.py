"""The runtime's units stay small enough to hold in one's head (issue 17), and its modules import
each other without a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

from tests import structure

MODULES = structure.modules(Path(__file__).resolve().parents[2] / "lambda_src" / "cdc_consumer")


def test_no_function_over_60_lines_and_no_class_over_200() -> None:
    assert structure.too_long(MODULES) == []


def test_the_batch_loop_is_split_into_decision_tally_and_modes() -> None:
    for name in ("batch", "decision", "tally", "modes", "outcomes"):
        assert f"cdc_consumer.{name}" in MODULES
    classes = {
        node.name
        for node in ast.walk(MODULES["cdc_consumer.processor"])
        if isinstance(node, ast.ClassDef)
    }
    assert "_Batch" not in classes


def test_no_import_cycle() -> None:
    cycle = structure.import_cycle(MODULES, "cdc_consumer")
    assert cycle is None, " -> ".join(cycle or [])
