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


def route_names(tree: ast.Module) -> list[str]:
    """Where ``tree`` names a route: a route's own package imported, or a route's specifics."""
    docs = structure.documentation(tree)
    found = []
    for node in ast.walk(tree):
        found += [
            f"imports {module}"
            for module in structure.imports(node)
            if module.startswith("cdc_consumer.routes.") and not module.startswith(PROTOCOL)
        ]
        words = [*structure.identifiers(node), structure.text(node, docs) or ""]
        found += [
            f"line {getattr(node, 'lineno', '?')}: {word[:60]!r}"
            for word in words
            if ROUTE_SPECIFICS.search(word)
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
