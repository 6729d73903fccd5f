"""The library's units stay small enough to hold in one's head, and its modules import each
other without a cycle."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from cdc_constructs import StreamConsumer
from cdc_constructs.consumer_options import ConsumerOptions
from tests import structure

MODULES = structure.modules(Path(__file__).resolve().parents[2] / "cdc_constructs")


def test_no_function_is_over_60_lines():
    functions = structure.units(MODULES, (ast.FunctionDef, ast.AsyncFunctionDef))
    too_long = [u for u in functions if u[1] > structure.MAX_FUNCTION_LINES]
    assert not too_long, too_long


def test_no_class_is_over_200_lines():
    too_long = [
        u for u in structure.units(MODULES, ast.ClassDef) if u[1] > structure.MAX_CLASS_LINES
    ]
    assert not too_long, too_long


def test_no_import_cycle():
    cycle = structure.import_cycle(MODULES, "cdc_constructs")
    assert cycle is None, cycle


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
        print(f"\nlargest {kind.__name__}s:", structure.units(MODULES, kind)[:3])


ROUTES = "cdc_constructs.routes"
#: What names a route in code: its service (aws_kinesis, KinesisEventSource, a "kinesis"
#: string) or aws-cdk-lib's event source classes for a stream.
ROUTE_WORDS = ("kinesis", "dynamoeventsource")
#: The DynamoDB stream route's own public construct keeps its path (cdc_constructs.StreamConsumer,
#: the library's default): the one module outside the routes that makes a route.
DEFAULT_ROUTE_USERS = {"cdc_constructs.stream_consumer": {f"{ROUTES}.dynamodb_stream"}}
#: Public names kept where they were (issue 39: props and escape hatches keep working):
#: ChangeCaptureTable(kinesis=...) and the attributes the destination sets on it.
KEPT_PUBLIC_NAMES = {
    "cdc_constructs.change_capture_table": {
        "kinesis",
        "kinesis_stream",
        "kinesis_retention",
        "kinesis_precision",
    }
}


def _reexports(node: ast.stmt) -> bool:
    """An import, or the ``__all__`` list: what the package's ``__init__`` re-exports."""
    if isinstance(node, ast.ImportFrom):
        return True
    targets = node.targets if isinstance(node, ast.Assign) else []
    return any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)


def _imports_a_route(module: str, imported: str) -> bool:
    """Whether ``imported`` is a route's module (not the protocol's) ``module`` may not use."""
    allowed = {f"{ROUTES}.route", f"{ROUTES}.templates", *DEFAULT_ROUTE_USERS.get(module, set())}
    return imported.startswith(f"{ROUTES}.") and imported not in allowed


def route_specifics(module: str, tree: ast.Module) -> set[str]:
    """What ``module`` (outside the routes) names of a route: a route module it imports, and
    each identifier, import or string key (docstrings and messages aside) with a route's word in
    it.
    The package's ``__init__`` re-exports the routes' public names: its imports and
    ``__all__`` are allowed."""
    docs, kept = structure.documentation(tree), KEPT_PUBLIC_NAMES.get(module, set())
    reexports = (
        {id(inner) for node in tree.body if _reexports(node) for inner in ast.walk(node)}
        if module == "cdc_constructs"
        else set()
    )
    found = set()
    for node in ast.walk(tree):
        if id(node) in reexports:
            continue
        if isinstance(node, ast.ImportFrom) and _imports_a_route(module, node.module or ""):
            found.add(f"imports {node.module}")
        words = structure.identifiers(node)
        value = structure.text(node, docs)
        # A key (a resource type, an ARN part, a property) acts on a route; a docstring or a
        # message (words, with spaces) only mentions one.
        if value is not None and not any(c.isspace() for c in value):
            words.append(value)
        found.update(
            f"names {word!r}"
            for word in words
            if word not in kept and any(w in word.lower() for w in ROUTE_WORDS)
        )
    return found


def test_no_module_outside_the_routes_names_one():
    """A route is one module (or one small package) under ``cdc_constructs/routes/``: the
    consumer core, the redrive, the monitoring, the checks ask the route (issue 39)."""
    named = {
        f"{module}: {what}"
        for module, tree in MODULES.items()
        if module != ROUTES and not module.startswith(f"{ROUTES}.")
        for what in route_specifics(module, tree)
    }
    assert named == set()


def test_the_route_check_sees_a_module_that_names_a_route():
    tree = ast.parse(
        '"""A module about Kinesis (a docstring: allowed)."""\n'
        "from aws_cdk import aws_kinesis as kinesis\n"
        "from aws_cdk.aws_lambda_event_sources import DynamoEventSource\n"
        "from cdc_constructs.routes.kinesis.route import KinesisRoute\n"
        "from cdc_constructs.routes.route import Route\n"
        "KIND = 'kinesis'\n"
        "WHY = 'a message may mention Kinesis'\n"
        "def f(route: Route, stream_kind: str = 'x') -> bool:\n"
        "    return isinstance(route, KinesisRoute) or route.is_kinesis\n"
    )
    assert route_specifics("cdc_constructs.example", tree) == {
        "imports cdc_constructs.routes.kinesis.route",
        "names 'cdc_constructs.routes.kinesis.route'",
        "names 'aws_kinesis'",
        "names 'kinesis'",
        "names 'DynamoEventSource'",
        "names 'KinesisRoute'",
        "names 'is_kinesis'",
    }
