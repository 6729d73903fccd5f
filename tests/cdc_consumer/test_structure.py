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


def test_no_import_cycle_through_type_only_imports_either() -> None:
    """intake and processor formed one (processor imports intake in handle; intake imported
    processor for its types): a cycle a type checker walks is a cycle of the design."""
    cycle = structure.import_cycle(MODULES, "cdc_consumer", type_only=True)
    assert cycle is None, " -> ".join(cycle or [])


#: The engine: what takes a batch from intake through decision, plan and write.
ENGINE = (
    "intake",
    "batch",
    "decision",
    "plan",
    "modes",
    "alone",
    "transactions",
    "outcomes",
    "tally",
    "processor",
)
#: The sinks the engine must not name (side effects are its one other way of making an effect,
#: run by the batch loop after the pending writes: named there, and nowhere else).
WRITE_SINKS = ("aggregates", "guarded", "latest_image", "contributions", "outbox")


def test_the_engine_names_no_sink() -> None:
    """The engine knows sinks by the protocol only (issue 29): it imports no sink module,
    neither the aggregate merger nor the version guard, not even inside a function."""
    named = {
        f"{module} imports {target}"
        for module in ENGINE
        for node in ast.walk(MODULES[f"cdc_consumer.{module}"])
        if isinstance(node, ast.ImportFrom) and node.module
        for target in [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        if target in {f"cdc_consumer.sinks.{sink}" for sink in WRITE_SINKS}
    }
    assert named == set()


def test_no_control_flow_reads_an_error_message() -> None:
    """No ``"..." in str(error)`` (nor repr) anywhere in the runtime: a sentence written by
    another module is not an interface (AWS error codes, which are data, are)."""
    found = [
        f"{name}:{node.lineno}"
        for name, tree in MODULES.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
        and any(
            isinstance(side, ast.Call)
            and isinstance(side.func, ast.Name)
            and side.func.id in ("str", "repr")
            for side in node.comparators
        )
    ]
    assert found == []
