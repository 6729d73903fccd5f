"""The library's units stay small enough to hold in one's head, and its modules import each
other without a cycle."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from cdc_constructs import StreamConsumer
from cdc_constructs.consumer_options import ConsumerOptions

PACKAGE = Path(__file__).resolve().parents[2] / "cdc_constructs"
MAX_FUNCTION_LINES = 60
MAX_CLASS_LINES = 200
# Units other engineers are rewriting this session (each says whose work brings it in line).
PENDING: dict[str, str] = {}


def _modules() -> dict[str, ast.Module]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(relative.parts).removesuffix(".__init__")
        found[name] = ast.parse(path.read_text(), filename=str(path))
    return found


def _units(kind: type) -> list[tuple[str, int]]:
    """(module:name, lines from ``def``/``class`` to its last line) of every unit of ``kind``."""
    units = []
    for module, tree in _modules().items():
        for node in ast.walk(tree):
            if isinstance(node, kind):
                assert node.end_lineno is not None
                units.append((f"{module}:{node.name}", node.end_lineno - node.lineno + 1))
    return sorted(units, key=lambda unit: -unit[1])


def test_no_function_is_over_60_lines():
    too_long = [
        u for u in _units(ast.FunctionDef) if u[1] > MAX_FUNCTION_LINES and u[0] not in PENDING
    ]
    assert not too_long, too_long


def test_no_class_is_over_200_lines():
    too_long = [u for u in _units(ast.ClassDef) if u[1] > MAX_CLASS_LINES and u[0] not in PENDING]
    assert not too_long, too_long


def _imports(module: str, tree: ast.Module) -> set[str]:
    """The cdc_constructs modules ``module`` imports when it is imported (not those imported
    only for type checking)."""
    found = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.ImportFrom) and inner.module and inner.level == 0:
                if inner.module.startswith("cdc_constructs"):
                    found.add(inner.module)
                    found.update(f"{inner.module}.{alias.name}" for alias in inner.names)
            elif isinstance(inner, ast.Import):
                found.update(a.name for a in inner.names if a.name.startswith("cdc_constructs"))
    return found


def test_no_import_cycle():
    modules = _modules()
    graph = {
        name: {m for m in _imports(name, tree) if m in modules and m != name}
        for name, tree in modules.items()
    }
    # A package imports its own submodules to re-export them: that is not a cycle.
    for name in graph:
        graph[name] = {m for m in graph[name] if not m.startswith(name + ".")}

    def cycle_from(start: str, path: list[str]) -> list[str] | None:
        for target in sorted(graph[start]):
            if target == path[0]:
                return [*path, target]
            if target not in path:
                found = cycle_from(target, [*path, target])
                if found:
                    return found
        return None

    cycles = [c for name in sorted(graph) if (c := cycle_from(name, [name]))]
    assert not cycles, cycles[0]


def test_every_stream_consumer_prop_belongs_to_one_concern():
    props = [
        name
        for name, parameter in inspect.signature(StreamConsumer.__init__).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    grouped = ConsumerOptions.prop_names()
    assert len(grouped) == len(set(grouped))
    source_props = {"table", "stream_view_type", "consumer_name", "members"}
    assert sorted(set(props) - source_props) == sorted(grouped)


@pytest.mark.parametrize("kind", [ast.FunctionDef, ast.ClassDef], ids=["function", "class"])
def test_report_the_largest_units(kind, capsys):
    with capsys.disabled():
        print(f"\nlargest {kind.__name__}s:", _units(kind)[:3])
