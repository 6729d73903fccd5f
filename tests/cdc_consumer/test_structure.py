"""The runtime's units stay small enough to hold in one's head (issue 17), and its modules import
each other without a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "lambda_src" / "cdc_consumer"
MAX_FUNCTION_LINES = 60
MAX_CLASS_LINES = 200
# Units someone is bringing in line, with who.
PENDING: dict[str, str] = {}


def _modules() -> dict[str, ast.Module]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(relative.parts).removesuffix(".__init__")
        found[name] = ast.parse(path.read_text(), filename=str(path))
    return found


def _too_long() -> list[str]:
    long = []
    for module, tree in _modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
                unit = f"{module}:{node.name}"
                if lines > limit and unit not in PENDING:
                    long.append(f"{unit} ({lines} lines)")
    return long


def test_no_function_over_60_lines_and_no_class_over_200() -> None:
    assert _too_long() == []


def test_the_batch_loop_is_split_into_decision_ledger_and_modes() -> None:
    modules = _modules()
    for name in ("batch", "decision", "ledger", "modes", "outcomes"):
        assert f"cdc_consumer.{name}" in modules
    classes = {
        node.name
        for node in ast.walk(modules["cdc_consumer.processor"])
        if isinstance(node, ast.ClassDef)
    }
    assert "_Batch" not in classes


def test_no_import_cycle() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, tree in modules.items():
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                target = node.module
                for alias in node.names:
                    candidate = f"{target}.{alias.name}"
                    imported.add(candidate if candidate in modules else target)
        graph[module] = {name for name in imported if name in modules and name != module}
    # cdc_consumer/__init__ re-exports the package: it is the root, not part of a cycle.
    graph.pop("cdc_consumer", None)
    for edges in graph.values():
        edges.discard("cdc_consumer")

    visiting: set[str] = set()
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        assert node not in visiting, " -> ".join([*path, node])
        if node in done:
            return
        visiting.add(node)
        for child in sorted(graph.get(node, ())):
            visit(child, [*path, node])
        visiting.discard(node)
        done.add(node)

    for module in sorted(graph):
        visit(module, [])
