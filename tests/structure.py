"""What the packages' structure tests share: parse a package, measure its units (a function or
class from ``def``/``class`` to its last line), and find an import cycle among its modules."""

from __future__ import annotations

import ast
from pathlib import Path

MAX_FUNCTION_LINES = 60
MAX_CLASS_LINES = 200


def modules(package: Path) -> dict[str, ast.Module]:
    """Each module of ``package`` (a directory) by dotted name, parsed."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package.parent).with_suffix("")
        name = ".".join(relative.parts).removesuffix(".__init__")
        found[name] = ast.parse(path.read_text(), filename=str(path))
    return found


def units(parsed: dict[str, ast.Module], kind: type | tuple[type, ...]) -> list[tuple[str, int]]:
    """(module:name, lines) of every unit of ``kind``, the largest first."""
    found = []
    for module, tree in parsed.items():
        for node in ast.walk(tree):
            if isinstance(node, kind):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append((f"{module}:{node.name}", lines))
    return sorted(found, key=lambda unit: -unit[1])


def too_long(parsed: dict[str, ast.Module]) -> list[str]:
    """Every function over MAX_FUNCTION_LINES and class over MAX_CLASS_LINES, with its size."""
    functions = units(parsed, (ast.FunctionDef, ast.AsyncFunctionDef))
    classes = units(parsed, ast.ClassDef)
    return [
        f"{unit} ({lines} lines)"
        for found, limit in ((functions, MAX_FUNCTION_LINES), (classes, MAX_CLASS_LINES))
        for unit, lines in found
        if lines > limit
    ]


def import_cycle(
    parsed: dict[str, ast.Module], root: str, *, type_only: bool = False
) -> list[str] | None:
    """A cycle of imports made when the modules are imported (``TYPE_CHECKING`` blocks left
    out, unless ``type_only``: then a cycle through a type-only import counts too), or None.
    A package importing its own submodules re-exports them, and the ``root`` package
    re-exports the whole library: neither is a cycle."""
    graph = {
        name: {
            target
            for target in _imported(tree, root, parsed, type_only)
            if target != name and target != root and not target.startswith(name + ".")
        }
        for name, tree in parsed.items()
    }

    def cycle_from(start: str, path: list[str]) -> list[str] | None:
        for target in sorted(graph.get(start, ())):
            if target == path[0]:
                return [*path, target]
            if target not in path and (found := cycle_from(target, [*path, target])):
                return found
        return None

    return next((c for name in sorted(graph) if (c := cycle_from(name, [name]))), None)


def imported(tree: ast.Module, root: str, parsed: dict[str, ast.Module]) -> set[str]:
    """The modules of ``parsed`` under ``root`` that ``tree`` imports, anywhere in it (inside a
    function, or for types only, too)."""
    return _imported(tree, root, parsed, type_only=True)


def _imported(
    tree: ast.Module, root: str, parsed: dict[str, ast.Module], type_only: bool = False
) -> set[str]:
    found = set()
    for node in tree.body:
        if not type_only and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.ImportFrom) and inner.module and inner.level == 0:
                found.add(inner.module)
                found.update(f"{inner.module}.{alias.name}" for alias in inner.names)
            elif isinstance(inner, ast.Import):
                found.update(alias.name for alias in inner.names)
    return {name for name in found if name in parsed and name.startswith(root)}


def documentation(tree: ast.Module) -> set[int]:
    """The ids of the string constants that are documentation: every bare string statement (a
    module's, class's or function's docstring, an attribute's after its assignment)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def imports(node: ast.AST) -> list[str]:
    """The modules ``node`` imports: a from-import's module and ``module.name`` for each of its
    names (a submodule imported by name), or an import's names."""
    if isinstance(node, ast.ImportFrom) and node.module:
        return [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return []


def identifiers(node: ast.AST) -> list[str]:
    """The identifiers ``node`` itself holds: a name, an attribute, a definition's name, an
    argument, a keyword, an imported name and its alias, a from-import's module."""
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    found = [getattr(node, field, None) for field in ("id", "attr", "name", "arg", "asname")]
    return [name for name in found if isinstance(name, str)]


def text(node: ast.AST, docs: set[int]) -> str | None:
    """``node``'s value when it is a string constant that is not documentation (``docs``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
        return node.value
    return None
