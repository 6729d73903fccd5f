"""The local pipeline's units stay small enough to hold in one's head, its modules import each
other without a cycle, and no module outside ``cdc_local.routes`` names a route (issue 39): the
event source mapping, the runner and serve mode ask the route (``cdc_local.routes``)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests import structure

PACKAGE = Path(__file__).resolve().parents[2] / "cdc_local"
MODULES = structure.modules(PACKAGE)
#: What may stay longer than the limits until it is split, at most this long (it may shrink,
#: never grow): the pipeline's facade and two units older than this test.
KNOWN_LONG = {
    "cdc_local.runner:LocalPipeline": 471,
    "cdc_local.backfill_cli:build_parser": 81,
    "cdc_local.shards:apply": 67,
}
#: The routes package's modules every module may import: the registry and the protocol.
ROUTES_PROTOCOL = {"cdc_local.routes", "cdc_local.routes.protocol"}
#: Words that name a route (case-insensitive).
ROUTE_WORDS = ("kinesis",)


def _too_long() -> dict[str, int]:
    found = {}
    for line in structure.too_long(MODULES):
        unit, _, size = line.rpartition(" (")
        found[unit] = int(size.split()[0])
    return found


def test_no_function_over_60_lines_and_no_class_over_200() -> None:
    too_long = _too_long()
    grown = {u: n for u, n in too_long.items() if n > KNOWN_LONG.get(u, 0)}
    assert grown == {}


def test_the_event_source_mapping_is_one_small_class_for_every_route() -> None:
    classes = dict(structure.units(MODULES, ast.ClassDef))
    assert classes["cdc_local.event_source_mapping:EventSourceMapping"] <= structure.MAX_CLASS_LINES
    assert "cdc_local.kinesis" not in MODULES
    assert {"cdc_local.routes.dynamodb_stream", "cdc_local.routes.kinesis"} <= set(MODULES)


def test_no_import_cycle() -> None:
    cycle = structure.import_cycle(MODULES, "cdc_local")
    assert cycle is None, " -> ".join(cycle or [])


def test_no_import_cycle_through_type_only_imports_either() -> None:
    cycle = structure.import_cycle(MODULES, "cdc_local", type_only=True)
    assert cycle is None, " -> ".join(cycle or [])


def route_mentions(tree: ast.Module, route_modules: set[str]) -> set[str]:
    """Where ``tree`` imports a route module or names a route in an identifier, an import or a
    string constant (docstrings and other bare string statements left out)."""
    docs, found = structure.documentation(tree), set()
    for node in ast.walk(tree):
        found.update(f"imports {m}" for m in structure.imports(node) if m in route_modules)
        words = [*structure.identifiers(node), structure.text(node, docs) or ""]
        found.update(
            f"line {getattr(node, 'lineno', '?')}: {word!r}"
            for word in words
            if any(route in word.lower() for route in ROUTE_WORDS)
        )
    return found


def test_no_module_outside_the_routes_names_a_route() -> None:
    route_modules = {
        name for name in MODULES if name.startswith("cdc_local.routes.")
    } - ROUTES_PROTOCOL
    assert {"cdc_local.routes.dynamodb_stream", "cdc_local.routes.kinesis"} <= route_modules
    named = {
        f"{module} {mention}"
        for module, tree in MODULES.items()
        if module != "cdc_local.routes" and not module.startswith("cdc_local.routes.")
        for mention in route_mentions(tree, route_modules)
    }
    assert named == set()


def test_the_check_sees_a_route_named() -> None:
    routes = {"cdc_local.routes.kinesis"}
    source = '''
"""A docstring may say Kinesis."""
from cdc_local.routes.kinesis import KinesisRoute
from cdc_local.routes import kinesis
import moto.kinesis
x = {"service": "kinesis"}
def read(kinesis_client): return kinesis_client.get(stream_name=1)
f(Kinesis=1)
'''
    found = route_mentions(ast.parse(source), routes)
    assert {m for m in found if m.startswith("imports")} == {"imports cdc_local.routes.kinesis"}
    assert {m.split(": ", 1)[1] for m in found if m.startswith("line")} == {
        "'cdc_local.routes.kinesis'",
        "'KinesisRoute'",
        "'kinesis'",
        "'moto.kinesis'",
        "'kinesis_client'",
        "'Kinesis'",
    }
    assert route_mentions(ast.parse('"""Kinesis in a docstring only."""\n'), routes) == set()
