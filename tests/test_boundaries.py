"""The package boundaries: the library is the library, and the contract is defined once.

- ``cdc_constructs``, ``cdc_consumer`` and ``cdc_local`` import nothing from the orders example
  (``reference_app``), not even inside a function or by name (importlib), and the example's
  names appear nowhere in the library and the runtime.
- Every name and message shape they share with the runtime, redrive, the local pipeline and
  CdcChecks (``cdc_consumer.contract``) has one literal definition: the contract's. A second
  literal of a contract value (an environment variable, a metric, a message field, a service
  limit) anywhere else in the library, the runtime, cdc_local or the nag pack fails here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from cdc_consumer import contract

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
CONTRACT_FILE = REPO / "lambda_src" / "cdc_consumer" / "contract.py"

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
    """Every string value the contract defines -> its name in the contract."""
    values: dict[str, str] = {}
    for name in contract.__all__:
        value = getattr(contract, name)
        if isinstance(value, str):
            values[value] = name
        elif isinstance(value, contract.Metric):
            values[value.name] = name
    shapes = (
        contract.QuarantineMessage(None, "arn", contract.ErrorDescription("E", "m"), {}, "t"),
        contract.OnFailureMessage(
            batch=contract.StreamBatchInfo("shard", "1", "2", "arn"),
            request_context=contract.OnFailureRequestContext("id", "fn", "c", 1),
            response_context=contract.OnFailureResponseContext(200, "$LATEST", None),
            timestamp="t",
            payload="{}",
        ),
        contract.OutboxEventDetail(contract.OutboxItem("e", "t", "{}", "o"), "s", "1"),
    )
    for shape in shapes:
        for key in _keys(shape.to_dict()):
            values.setdefault(key, f"{type(shape).__name__} field")
    # Too common to be a definition of the contract wherever they appear.
    # ("sequenceNumber" is also a field of Kinesis records, which the runtime reads.)
    for generic in (
        "version",
        "error",
        "record",
        "consumer",
        "payload",
        "timestamp",
        "type",
        "sequenceNumber",
        contract.QUARANTINE_MESSAGE_VERSION,  # "1": a version, too short to be a definition
        contract.ON_FAILURE_MESSAGE_VERSION,
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


LIMITS = {contract.MAX_TRANSACTION_BYTES: "MAX_TRANSACTION_BYTES"}
"""Limits whose value is distinctive enough to flag wherever it appears."""

#: A day is also Kinesis' minimum retention and a safety margin of the Kinesis route, so the
#: stream retention is flagged where it is defined as a retention: assigned to a name that
#: says so.
RETENTION = contract.STREAM_RETENTION_SECONDS


def _retention_definitions(tree: ast.Module) -> Iterator[ast.Assign | ast.AnnAssign]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = any("RETENTION" in ast.unparse(t).upper() for t in targets)
            if named and _constant_value(node.value) == RETENTION:
                yield node


def test_the_contract_knows_the_names_this_scan_looks_for() -> None:
    strings = _contract_strings()
    for expected in ("CDC_CONSUMER_NAME", "RedriveLostRecords", "DDBStreamBatchInfo", "eventType"):
        assert expected in strings


def test_each_contract_name_and_shape_has_one_literal_definition() -> None:
    strings = _contract_strings()
    found = []
    for path in _python_files(*CONTRACT_USERS):
        if path == CONTRACT_FILE:
            continue
        tree = ast.parse(path.read_text())
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            where = f"{path.relative_to(REPO)}:{getattr(node, 'lineno', '?')}"
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and node.value in strings
            ):
                found.append(f"{where} {node.value!r} (contract.{strings[node.value]})")
            elif isinstance(node, ast.BinOp | ast.Constant) and _constant_value(node) in LIMITS:
                limit = LIMITS[_constant_value(node)]  # type: ignore[index]
                found.append(f"{where} {ast.unparse(node)} (contract.{limit})")
        for node in _retention_definitions(tree):
            where = f"{path.relative_to(REPO)}:{node.lineno}"
            found.append(f"{where} {ast.unparse(node)} (contract.STREAM_RETENTION_SECONDS)")
    assert found == [], "import these from cdc_consumer.contract instead:\n" + "\n".join(found)


def test_the_scan_catches_a_second_definition(tmp_path: Path) -> None:
    """The check above on a module that redefines an environment variable and the retention."""
    module = tmp_path / "copy.py"
    module.write_text(
        'NAME = "CDC_CONSUMER_NAME"\nSTREAM_RETENTION = 24 * 3600\nMARGIN = 24 * 3600\n'
        '"""a docstring: CDC_CONSUMER_NAME"""\nLIMIT = 4 * 1024 * 1024\n'
    )
    tree = ast.parse(module.read_text())
    strings = _contract_strings()
    literals = [
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in strings
    ]
    limits = [_constant_value(n) for n in ast.walk(tree) if _constant_value(n) in LIMITS]
    retention = [ast.unparse(n) for n in _retention_definitions(tree)]
    assert literals == ["CDC_CONSUMER_NAME"]  # the docstring's mention is not a definition
    assert limits == [contract.MAX_TRANSACTION_BYTES]
    assert retention == ["STREAM_RETENTION = 24 * 3600"]
