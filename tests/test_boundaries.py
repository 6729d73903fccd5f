"""The package boundaries: the library is the library, and the contract is defined once.

- ``cdc_constructs``, ``cdc_consumer`` and ``cdc_local`` import nothing from the orders example
  (``reference_app``), not even inside a function or by name (importlib), and the example's
  names appear nowhere in the library and the runtime.
- Every name and message shape they share with the runtime, redrive, the local pipeline and
  CdcChecks (the contract: ``CONTRACT_MODULES``, one module per concern) has one literal
  definition, in its module. A second literal of a contract value (an environment variable, a
  metric, a message field, a service limit) anywhere else in the library, the runtime, cdc_local
  or the nag pack fails here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from cdc_consumer import (
    environment_variables,
    group_member_spec,
    handler_paths,
    message_fields,
    metric_names,
    quarantine_shapes,
    redrive_shapes,
    replay_windows,
    service_limits,
    windows,
)
from cdc_consumer.backfill import shapes as backfill_shapes
from cdc_consumer.sinks import outbox_shapes

REPO = Path(__file__).resolve().parents[1]
LIBRARY = {"cdc_constructs": REPO / "cdc_constructs", "cdc_consumer": REPO / "lambda_src"}
#: What the wheel installs: the library, the runtime and the local pipeline, none of which may
#: need the example (an installed wheel does not have it).
INSTALLED = {**LIBRARY, "cdc_local": REPO / "cdc_local"}
EXAMPLE_MODULES = ("reference_app", "app", "handlers")
CONTRACT_USERS = (
    REPO / "cdc_constructs",  # the nag pack (cdc_constructs/nag) included
    REPO / "lambda_src" / "cdc_consumer",
    REPO / "cdc_local",
)
CONTRACT_MODULES = (
    environment_variables,
    metric_names,
    service_limits,
    replay_windows,
    handler_paths,
    message_fields,
    windows,
    quarantine_shapes,
    redrive_shapes,
    group_member_spec,
    outbox_shapes,
    backfill_shapes,
)
"""The contract by concern: every name and message shape the packages share, each defined in
one of these (standard library only, so the constructs import them without the runtime)."""
CONTRACT_FILES = {Path(module.__file__ or "").resolve() for module in CONTRACT_MODULES}

#: Names of the orders example.
EXAMPLE_NAMES = (
    "reference_app",
    "order_stats",
    "orders_schema",
    "ORDER#",
    "CUSTOMER#",
    "VIEW_TABLE_NAME",
    "ARCHIVE_BUCKET_NAME",
    "expired-orders",
    "OrderWorkload",
    "CdcReferenceStack",
    "paid_amount",
    # The example's table, stream, keys and event source: the testing helpers' defaults and the
    # messages' suggestions use neutral names instead.
    '"orders"',
    "table/orders",
    "orders-changes",
    "orderId",
    "com.example.orders",
    "OrderPaid",
)


def _python_files(*roots: Path) -> Iterator[Path]:
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" not in path.parts:
                yield path


def _imported_modules(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def _dynamic_imports(tree: ast.Module) -> Iterator[str]:
    """Modules named by a literal to importlib.import_module / __import__."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in ("importlib.import_module", "import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value


def _example_imports(root: Path) -> list[str]:
    return [
        f"{path.relative_to(root.parent)} imports {module}"
        for path in _python_files(root)
        for tree in [ast.parse(path.read_text())]
        for module in (*_imported_modules(tree), *_dynamic_imports(tree))
        if module.split(".")[0] in EXAMPLE_MODULES
    ]


@pytest.mark.parametrize("package", sorted(INSTALLED))
def test_the_library_imports_nothing_from_the_example(package: str) -> None:
    """ast.walk sees every import: at module level, in a function (a lazy import is still an
    import the installed wheel cannot satisfy), and by name through importlib."""
    assert _example_imports(INSTALLED[package]) == []


def test_the_import_scan_sees_lazy_and_dynamic_imports(tmp_path: Path) -> None:
    (tmp_path / "cli.py").write_text(
        "import importlib\n"
        "def main():\n"
        "    from reference_app.demo import run_demo\n"
        "    importlib.import_module('reference_app.workload')\n"
    )
    found = _example_imports(tmp_path)
    assert [line.split(" imports ")[1] for line in found] == [
        "reference_app.demo",
        "reference_app.workload",
    ]


def test_the_local_pipeline_does_not_name_the_example() -> None:
    found = [
        path.relative_to(REPO).as_posix()
        for path in _python_files(INSTALLED["cdc_local"])
        if "reference_app" in path.read_text() or "CdcReferenceStack" in path.read_text()
    ]
    assert found == []


@pytest.mark.parametrize("package", sorted(INSTALLED))
def test_the_examples_names_appear_nowhere_in_the_library(package: str) -> None:
    found = []
    for path in _python_files(INSTALLED[package]):
        text = path.read_text()
        found += [f"{path.relative_to(REPO)}: {name!r}" for name in EXAMPLE_NAMES if name in text]
    assert found == []


# --- one definition of the contract ---------------------------------------------------------


def _contract_strings() -> dict[str, str]:
    """Every string value the contract defines -> its module and name."""
    values: dict[str, str] = {}
    for module in CONTRACT_MODULES:
        for name in module.__all__:
            value = getattr(module, name)
            where = f"{module.__name__}.{name}"
            if isinstance(value, str):
                values[value] = where
            elif isinstance(value, metric_names.Metric):
                values[value.name] = where
    shapes = (
        quarantine_shapes.QuarantineMessage(
            None, "arn", quarantine_shapes.ErrorDescription("E", "m"), {}, "t"
        ),
        redrive_shapes.OnFailureMessage(
            batch=redrive_shapes.StreamBatchInfo("shard", "1", "2", "arn"),
            request_context=redrive_shapes.OnFailureRequestContext("id", "fn", "c", 1),
            response_context=redrive_shapes.OnFailureResponseContext(200, "$LATEST", None),
            timestamp="t",
            payload="{}",
        ),
        outbox_shapes.OutboxEventDetail(outbox_shapes.OutboxItem("e", "t", "{}", "o"), "s", "1"),
    )
    for shape in shapes:
        for key in _keys(shape.to_dict()):
            values.setdefault(key, f"{type(shape).__module__}.{type(shape).__name__} field")
    # Too common to be a definition of the contract wherever they appear.
    # ("sequenceNumber" is also a field of Kinesis records, which the runtime reads; "window"
    # also the redrive's setting of how many messages it holds at once.)
    for generic in (
        "version",
        "error",
        "record",
        "consumer",
        "payload",
        "timestamp",
        "type",
        "sequenceNumber",
        "window",
        quarantine_shapes.QUARANTINE_MESSAGE_VERSION,  # "1": a version, too short to be one
        redrive_shapes.ON_FAILURE_MESSAGE_VERSION,
    ):
        values.pop(generic, None)
    values.pop("message", None)
    return values


def _keys(document: object) -> Iterator[str]:
    if isinstance(document, dict):
        for key, value in document.items():
            yield key
            yield from _keys(value)


def _docstrings(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for statement in body:
                if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                    ids.add(id(statement.value))
    return ids


_OPERATORS = {ast.Mult: int.__mul__, ast.Add: int.__add__, ast.Pow: int.__pow__}


def _constant_value(node: ast.AST) -> object:
    """The value of an integer expression of literals (``24 * 3600``), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _constant_value(node.left), _constant_value(node.right)
        small = type(node.op) is not ast.Pow or (isinstance(right, int) and abs(right) < 64)
        if isinstance(left, int) and isinstance(right, int) and small:
            return _OPERATORS[type(node.op)](left, right)
    return None


LIMITS = {service_limits.MAX_TRANSACTION_BYTES: "service_limits.MAX_TRANSACTION_BYTES"}
"""Limits whose value is distinctive enough to flag wherever it appears."""

#: A day is also Kinesis' minimum retention and a safety margin of the Kinesis route, so the
#: stream retention is flagged where it is defined as a retention: assigned to a name that
#: says so.
RETENTION = service_limits.STREAM_RETENTION_SECONDS


def _retention_definitions(tree: ast.Module) -> Iterator[ast.Assign | ast.AnnAssign]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = any("RETENTION" in ast.unparse(t).upper() for t in targets)
            if named and _constant_value(node.value) == RETENTION:
                yield node


def _public_definitions(module: object) -> set[str]:
    tree = ast.parse(Path(getattr(module, "__file__", "")).read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {name for name in names if not name.startswith("_")}


def test_each_contract_module_lists_its_names_and_no_name_is_in_two() -> None:
    """The scan below reads each module's ``__all__``: a name left out of it would escape it."""
    seen: dict[str, str] = {}
    for module in CONTRACT_MODULES:
        assert set(module.__all__) == _public_definitions(module), module.__name__
        for name in module.__all__:
            assert name not in seen, f"{name}: in {seen[name]} and {module.__name__}"
            seen[name] = module.__name__


def test_the_contract_knows_the_names_this_scan_looks_for() -> None:
    strings = _contract_strings()
    for expected in ("CDC_CONSUMER_NAME", "RedriveLostRecords", "DDBStreamBatchInfo", "eventType"):
        assert expected in strings


def _defined_in(label: str) -> Path:
    """The file of the contract module a label (``module.NAME``) names."""
    module = next(m for m in CONTRACT_MODULES if label.startswith(f"{m.__name__}."))
    return Path(module.__file__ or "").resolve()


def _second_definitions(path: Path, source: str, strings: dict[str, str]) -> list[str]:
    """Each literal of a contract value in ``path`` outside the module defining it (docstrings
    aside), each distinctive limit outside service_limits, each stream retention defined."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    limits_file = Path(service_limits.__file__ or "").resolve()
    found = []
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', '?')}"
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and node.value in strings
            and _defined_in(strings[node.value]) != path.resolve()
        ):
            found.append(f"{where} {node.value!r} ({strings[node.value]})")
        elif (
            isinstance(node, ast.BinOp | ast.Constant)
            and _constant_value(node) in LIMITS
            and path.resolve() != limits_file
        ):
            limit = LIMITS[_constant_value(node)]  # type: ignore[index]
            found.append(f"{where} {ast.unparse(node)} ({limit})")
    if path.resolve() != limits_file:
        for node in _retention_definitions(tree):
            where = f"{path.name}:{node.lineno}"
            found.append(f"{where} {ast.unparse(node)} (service_limits.STREAM_RETENTION_SECONDS)")
    return found


def test_each_contract_name_and_shape_has_one_literal_definition() -> None:
    strings = _contract_strings()
    found = []
    for path in _python_files(*CONTRACT_USERS):
        relative = path.relative_to(REPO)
        found += [
            f"{relative.parent}/{f}" for f in _second_definitions(path, path.read_text(), strings)
        ]
    assert found == [], "import these from the contract's modules instead:\n" + "\n".join(found)


def test_the_scan_catches_a_second_definition(tmp_path: Path) -> None:
    """The check above on a module that redefines an environment variable and the retention,
    and on a contract module that redefines another one's name."""
    module = tmp_path / "copy.py"
    source = (
        'NAME = "CDC_CONSUMER_NAME"\nSTREAM_RETENTION = 24 * 3600\nMARGIN = 24 * 3600\n'
        '"""a docstring: CDC_CONSUMER_NAME"""\nLIMIT = 4 * 1024 * 1024\n'
    )
    strings = _contract_strings()
    assert _second_definitions(module, source, strings) == [
        "copy.py:1 'CDC_CONSUMER_NAME' (cdc_consumer.environment_variables.CONSUMER_NAME_ENV)",
        "copy.py:5 4 * 1024 * 1024 (service_limits.MAX_TRANSACTION_BYTES)",
        "copy.py:2 STREAM_RETENTION = 24 * 3600 (service_limits.STREAM_RETENTION_SECONDS)",
    ]  # the docstring's mention is not a definition
    elsewhere = Path(metric_names.__file__ or "")
    assert _second_definitions(elsewhere, 'NAME = "CDC_CONSUMER_NAME"\n', strings) != []
    own = Path(environment_variables.__file__ or "")
    assert _second_definitions(own, 'NAME = "CDC_CONSUMER_NAME"\n', strings) == []
