"""The runtime's units stay small enough to hold in one's head (issue 17), and its modules import
each other without a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

from tests import structure

MODULES = structure.modules(Path(__file__).resolve().parents[2] / "lambda_src" / "cdc_consumer")


def test_no_function_over_60_lines_and_no_class_over_200() -> None:
    assert structure.too_long(MODULES) == []


#: The steps of the write path, in the order a record takes them (docs/design.md §4, the walk
#: of one record): each a module named after its step.
STEPS = ("decide", "plan", "write", "account")
#: What calls the steps: the batch loop, and the modules above it on the way from the handler.
DRIVERS = ("batch", "intake", "processor")
#: The modules a record's write passes through, from the loop to TransactWriteItems.
WRITE_PATH = (
    "batch",
    "decide",
    "record_writes",
    "plan",
    "write",
    "alone",
    "transactions",
    "account",
    "deadline",
    "contention",
)
#: Callables a write-path module may take: the clock and the sleep tests replace, the jitter
#: of a backoff, and how a record is decoded (a stream record or a backfill's row).
SEAMS = {"clock", "sleep", "jitter", "decode"}


def _reached(name: str) -> set[str]:
    """Every runtime module ``name`` imports, directly or not (type-only imports too)."""
    found: set[str] = set()
    todo = [name]
    while todo:
        for target in structure.imported(MODULES[todo.pop()], "cdc_consumer", MODULES):
            if target not in found and target != "cdc_consumer":
                found.add(target)
                todo.append(target)
    return found


def test_the_write_path_is_a_line_of_steps() -> None:
    """decide -> plan -> write -> account (issue 39): the loop calls each step in turn and no
    step reaches, through any import, a later step or the loop that calls it, so no step calls
    another back and no module is visited twice on a record's way to its write."""
    steps = [f"cdc_consumer.{step}" for step in STEPS]
    drivers = {f"cdc_consumer.{driver}" for driver in DRIVERS}
    assert set(steps) <= set(MODULES)
    later = {
        f"{step} reaches {target}"
        for index, step in enumerate(steps)
        for target in _reached(step) & ({*steps[index + 1 :]} | drivers)
    }
    assert later == set()
    assert set(steps) <= _reached("cdc_consumer.batch")


def test_no_continuation_is_passed_down_the_write_path() -> None:
    """No lambda and no function made inside another (a closure to be called back), and no
    callable taken but the seams: the trail of a record reads in the code as it runs."""
    found: list[str] = []
    for module in WRITE_PATH:
        tree = MODULES[f"cdc_consumer.{module}"]
        for node in ast.walk(tree):
            if isinstance(node, ast.Lambda):
                found.append(f"{module}:{node.lineno} lambda")
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found += [
                    f"{module}:{inner.lineno} {inner.name} inside {node.name}"
                    for inner in ast.walk(node)
                    if inner is not node
                    and isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
            for name, annotation in _typed_names(node):
                if "Callable" in ast.unparse(annotation) and name not in SEAMS:
                    found.append(f"{module}:{node.lineno} {name} takes a callable")
    assert found == []


def _typed_names(node: ast.AST) -> list[tuple[str, ast.expr]]:
    """The parameters of a function, or the field a class body annotates, with their types."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        return [(a.arg, a.annotation) for a in arguments if a.annotation is not None]
    if isinstance(node, ast.ClassDef):
        return [
            (item.target.id, item.annotation)
            for item in node.body
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
        ]
    return []


def test_no_import_cycle() -> None:
    cycle = structure.import_cycle(MODULES, "cdc_consumer")
    assert cycle is None, " -> ".join(cycle or [])


def test_no_import_cycle_through_type_only_imports_either() -> None:
    """intake and processor formed one (processor imports intake in handle; intake imported
    processor for its types): a cycle a type checker walks is a cycle of the design."""
    cycle = structure.import_cycle(MODULES, "cdc_consumer", type_only=True)
    assert cycle is None, " -> ".join(cycle or [])


#: The engine: what takes a batch from intake through decide, plan, write and account.
ENGINE = (*WRITE_PATH, "intake", "outcomes", "tally", "processor", "claims")
#: What the engine may import of the sinks package: the protocol, and nothing else.
PROTOCOL = {"cdc_consumer.sinks", "cdc_consumer.sinks.protocol"}
#: The sinks the runtime ships (each a module of cdc_consumer.sinks), side effects no longer
#: among them: a side effect is a callable the engine runs under a claim (cdc_consumer.claims).
SINKS = ("aggregates", "guarded", "latest_image", "contributions", "outbox")


def test_the_engine_names_no_sink() -> None:
    """The engine knows sinks by the protocol only (issue 29): it imports no module of
    ``cdc_consumer.sinks`` but the protocol (today's sinks and any added later), neither the
    aggregate merger nor the version guard, not even inside a function or for types only."""
    sink_modules = {name for name in MODULES if name.startswith("cdc_consumer.sinks.")} - PROTOCOL
    assert {f"cdc_consumer.sinks.{sink}" for sink in SINKS} <= sink_modules
    named = {
        f"{module} imports {target}"
        for module in ENGINE
        for node in ast.walk(MODULES[f"cdc_consumer.{module}"])
        if isinstance(node, ast.ImportFrom) and node.module
        for target in [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        if target in sink_modules
    }
    assert named == set()


def test_the_engine_runs_side_effects_without_a_sink_module() -> None:
    """The side effects' claims are the engine's bookkeeping (cdc_consumer.claims), so the
    batch loop builds them without naming a sink: it was exempted while it imported
    cdc_consumer.sinks.side_effects."""
    assert "cdc_consumer.sinks.side_effects" not in MODULES
    imported = {
        node.module
        for node in ast.walk(MODULES["cdc_consumer.batch"])
        if isinstance(node, ast.ImportFrom)
    }
    assert "cdc_consumer.claims" in imported


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


#: The routes' own packages: only cdc_consumer.routes imports them (its registry).
ROUTE_PACKAGES = ("cdc_consumer.routes.kinesis", "cdc_consumer.routes.dynamodb_stream")
#: What names a route's specifics, in an identifier or a string (lower case): its name...
ROUTE_WORDS = ("kinesis",)
#: ... an event source Lambda gives a route's records (a whole string: an ARN may hold one) ...
ROUTE_EVENT_SOURCES = ("aws:dynamodb", "aws:kinesis")
#: ... or where an on-failure destination's message describes a route's batch.
ROUTE_BATCH_INFOS = ("ddbstreambatchinfo", "kinesisbatchinfo")
#: Modules this test does not read: the redrive's own structure test covers the redrive
#: (cdc_consumer.redrive and its handler), and the routes are where a route is named.
NOT_READ = ("cdc_consumer.routes", "cdc_consumer.redrive", "cdc_consumer.redrive_handler")
#: Modules that still name a route, each with why. redrive_shapes.py: AWS's on-failure record
#: is one shape whose batch info sits under a key per source (DDBStreamBatchInfo,
#: KinesisBatchInfo); each route's replay module picks its own key from there.
STILL_NAMING = {"cdc_consumer.redrive_shapes"}


def _named_routes(tree: ast.Module) -> list[str]:
    """Where ``tree`` imports a route's package or names a route's specifics outside its
    documentation (see ROUTE_WORDS and the lists after it)."""
    docs = structure.documentation(tree)
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        found += [
            f"{line}: imports {module}"
            for module in structure.imports(node)
            if module.startswith(ROUTE_PACKAGES)
        ]
        words = structure.identifiers(node)
        value = structure.text(node, docs)
        if value is not None:
            lowered = value.lower()
            if lowered in ROUTE_EVENT_SOURCES or any(i in lowered for i in ROUTE_BATCH_INFOS):
                found.append(f"{line}: the string {value!r:.60}")
            words.append(value)
        found += [
            f"{line}: {word!r:.60}"
            for word in words
            if any(route in word.lower() for route in ROUTE_WORDS)
        ]
    return found


def test_no_module_outside_the_routes_names_a_route() -> None:
    """The engine reads every record through its route (issue 39: cdc_consumer.routes.route_of);
    no other module imports a route's package, nor has an identifier or a string (docstrings
    aside) naming a route's specifics: a third source is one more package in routes/."""
    named = {
        name: found
        for name, tree in MODULES.items()
        if not name.startswith(NOT_READ) and name not in STILL_NAMING
        if (found := _named_routes(tree))
    }
    assert named == {}


def test_the_routes_and_the_modules_still_naming_one_are_read_where_expected() -> None:
    """The test above can fail: it finds the routes' own modules naming themselves, and each
    module still allowed to name a route does (else it leaves STILL_NAMING)."""
    assert _named_routes(MODULES["cdc_consumer.routes.kinesis.records"])
    assert _named_routes(MODULES["cdc_consumer.routes.dynamodb_stream.records"])
    assert all(_named_routes(MODULES[name]) for name in STILL_NAMING)
