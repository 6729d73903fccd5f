"""Synth-time check of a function's handler against its code asset on disk.

A ``handler="user.handler"`` for a ``users.py`` otherwise passes synthesis and cdk-nag and is
found only when the first record is delivered (``cdc-local``, or in AWS after the deploy).
The asset directory (or zip file) of ``lambda_.Code.from_asset`` is on disk at synthesis, so
the handler's module and function are looked up there: the module's source is *read* (parsed
with ``ast``), never imported, so nothing of the user's code runs at synthesis and its
dependencies need not be installed. A miss names the handler, the asset's path and what
exists there, with the closest name when one is close (``difflib``).

Code that is not a local asset (inline code, an S3 bucket, an image) is not checked, nor a
module whose names cannot be known without running it (``from x import *``).
"""

from __future__ import annotations

import ast
import difflib
import zipfile
from pathlib import Path

from aws_cdk import aws_lambda as lambda_

from cdc_constructs.exceptions import Problem

__all__ = ["check_handler_on_disk"]


def check_handler_on_disk(code: object, handler: str, prop: str = "handler") -> list[Problem]:
    """The problem with ``handler`` (``module.function``, the module dotted for a package) in
    ``code``, when ``code`` is a local asset (``lambda_.Code.from_asset``); else none."""
    if not isinstance(code, lambda_.AssetCode) or "." not in handler:
        return []
    asset = Path(code.path).resolve()
    module, _, function = handler.rpartition(".")
    files: _DirectoryAsset | _ZipAsset
    if asset.is_dir():
        files = _DirectoryAsset(asset)
    elif zipfile.is_zipfile(asset):
        files = _ZipAsset(asset)
    else:
        return []
    found = _module_source(files, module)
    if found is None:
        return [_missing_module(prop, handler, asset, files, module, function)]
    relative, source = found
    try:
        names = _module_names(ast.parse(source, filename=relative))
    except SyntaxError as error:
        return [
            Problem(
                prop,
                handler,
                f"a module that parses: {relative} in the code asset {asset} has a syntax "
                f"error at line {error.lineno}: {error.msg}",
            )
        ]
    if names is None or function in names:
        return []
    return [_missing_function(prop, handler, asset, relative, module, function, names)]


class _DirectoryAsset:
    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, relative: str) -> str | None:
        path = self.root / relative
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None

    def python_modules(self) -> list[str]:
        return sorted(
            path.relative_to(self.root).as_posix()
            for path in self.root.rglob("*.py")
            if not any(part.startswith(".") or part == "__pycache__" for part in path.parts)
        )[:200]


class _ZipAsset:
    def __init__(self, path: Path) -> None:
        self.archive = zipfile.ZipFile(path)

    def read(self, relative: str) -> str | None:
        try:
            return self.archive.read(relative).decode("utf-8", errors="replace")
        except KeyError:
            return None

    def python_modules(self) -> list[str]:
        return sorted(name for name in self.archive.namelist() if name.endswith(".py"))[:200]


def _module_source(files: _DirectoryAsset | _ZipAsset, module: str) -> tuple[str, str] | None:
    """(path in the asset, source) of ``module``: ``a/b.py`` or ``a/b/__init__.py``."""
    base = module.replace(".", "/")
    for relative in (f"{base}.py", f"{base}/__init__.py"):
        source = files.read(relative)
        if source is not None:
            return relative, source
    return None


def _module_names(tree: ast.Module) -> set[str] | None:
    """The names a module binds at its top level (functions, classes, assignments, imports,
    also inside top-level ``if``/``try`` blocks); None when a star import makes them
    unknowable without running it."""
    names: set[str] = set()
    statements = list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.If | ast.Try | ast.With):
            for block in ("body", "orelse", "finalbody", "handlers"):
                statements.extend(getattr(node, block, []))
        elif isinstance(node, ast.ExceptHandler):
            statements.extend(node.body)
    return names


def _missing_module(
    prop: str,
    handler: str,
    asset: Path,
    files: _DirectoryAsset | _ZipAsset,
    module: str,
    function: str,
) -> Problem:
    modules = files.python_modules()
    dotted = [
        name.removesuffix(".py").removesuffix("/__init__").replace("/", ".") for name in modules
    ]
    close = difflib.get_close_matches(module, dotted, n=1)
    hint = f"; did you mean '{close[0]}.{function}'?" if close else ""
    exists = ", ".join(modules[:20]) or "no Python module"
    return Problem(
        prop,
        handler,
        f"module.function naming a module of the code asset {asset}: there is no "
        f"{module.replace('.', '/')}.py (there is: {exists}){hint}",
    )


def _missing_function(
    prop: str,
    handler: str,
    asset: Path,
    relative: str,
    module: str,
    function: str,
    names: set[str],
) -> Problem:
    public = sorted(name for name in names if not name.startswith("_"))
    close = difflib.get_close_matches(function, public, n=1)
    hint = f"; did you mean '{module}.{close[0]}'?" if close else ""
    return Problem(
        prop,
        handler,
        f"module.function naming a function of {relative} in the code asset {asset}: it "
        f"has no {function!r} (it defines: {', '.join(public[:20]) or 'nothing'}){hint}",
    )
