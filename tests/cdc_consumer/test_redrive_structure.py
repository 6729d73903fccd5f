"""The redrive names no route (issue 39): no module of ``cdc_consumer/redrive/`` nor
``redrive_handler.py`` imports a route's own package (``cdc_consumer.routes.<route>``) or names a
route's specifics in an identifier, an import or a string (docstrings aside); it asks the routes
through :mod:`cdc_consumer.routes.replay`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests import structure

RUNTIME = Path(__file__).resolve().parents[2] / "lambda_src" / "cdc_consumer"
#: What only a route may name: its stream, its client, its failure record's batch info.
ROUTE_SPECIFICS = re.compile(r"kinesis|DDBStreamBatchInfo|KinesisBatchInfo|dynamodbstreams", re.I)
#: The routes' shared protocol, which the redrive asks (not a route's own package).
PROTOCOL = "cdc_consumer.routes.replay"


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring constants of the module, its classes and functions."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _names(node: ast.AST) -> list[str]:
    """The identifiers, imported names and string constants ``node`` itself holds."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword):
        return [node.arg] if node.arg else []
    if isinstance(node, ast.alias):
        return [node.name, node.asname or ""]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    return []


def route_names(tree: ast.Module) -> list[str]:
    """Where ``tree`` names a route: a route's own package imported, or a route's specifics."""
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom | ast.Import):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            modules += [alias.name for alias in node.names]
            found += [
                f"imports {m}"
                for m in modules
                if m.startswith("cdc_consumer.routes.") and not m.startswith(PROTOCOL)
            ]
        if id(node) in docstrings:
            continue
        found += [
            f"line {getattr(node, 'lineno', '?')}: {name[:60]!r}"
            for name in _names(node)
            if ROUTE_SPECIFICS.search(name)
        ]
    return found


def _redrive_modules() -> dict[str, ast.Module]:
    modules = structure.modules(RUNTIME)
    return {
        name: tree
        for name, tree in modules.items()
        if name.startswith("cdc_consumer.redrive.")
        or name in ("cdc_consumer.redrive", "cdc_consumer.redrive_handler")
    }


def test_no_redrive_module_names_a_route() -> None:
    modules = _redrive_modules()
    assert "cdc_consumer.redrive_handler" in modules and "cdc_consumer.redrive.driver" in modules
    named = {f"{name}: {where}" for name, tree in modules.items() for where in route_names(tree)}
    assert named == set()


def test_the_check_sees_a_route_named_in_an_import_an_identifier_and_a_string() -> None:
    source = '''
"""A docstring may say Kinesis and DDBStreamBatchInfo."""
from cdc_consumer.routes.dynamodb_stream.replay import ROUTE
from cdc_consumer.redrive.kinesis_sources import KinesisQueue
from cdc_consumer.routes.replay import route_of_stream

def read(record):
    """Kinesis here too."""
    key = "KinesisBatchInfo"
    return record["ddbstreambatchinfo"], record.kinesis_client
'''
    found = route_names(ast.parse(source))
    assert "imports cdc_consumer.routes.dynamodb_stream.replay" in found
    assert not any("docstring" in where or "here too" in where for where in found)
    assert any("KinesisQueue" in where for where in found)
    assert any("'KinesisBatchInfo'" in where for where in found)
    assert any("'ddbstreambatchinfo'" in where for where in found)
    assert any("'kinesis_client'" in where for where in found)
    assert not any("routes.replay" in where for where in found)
