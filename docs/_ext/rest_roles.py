"""A griffe extension for the API reference (mkdocs.yml): the docstrings are reST, so their
cross-reference roles (:class:`~cdc_constructs.StreamConsumer`, :attr:`function`,
:func:`ttl_after`, ...) become Markdown cross-references that mkdocs-autorefs links, once the
package is loaded and every name can be resolved. A short name is looked up in the object's
own scope, then its class's and module's, then in the package's public names; a name that
resolves to nothing public (a private module, an aws-cdk-lib type) becomes code. Links are
autorefs' *optional* references: one to an object the reference does not render (an option
class, a private helper) shows as code instead of failing the strict build;
tests/docs/test_api_reference.py checks that the public names' references link."""

from __future__ import annotations

import re
from functools import partial
from typing import Any

import griffe

_ROLE = re.compile(
    r":(?:py:)?(class|attr|meth|func|mod|exc|data|obj|const):`(~?)([^`<>]+?)(?:\(\))?`"
)


class RestRoles(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for obj in _walk(pkg, set()):
            if obj.docstring is not None:
                obj.docstring.value = _ROLE.sub(partial(_link, obj, pkg), obj.docstring.value)


def _walk(obj: griffe.Object, seen: set[str]):
    if obj.path in seen:
        return
    seen.add(obj.path)
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member, seen)


def _link(obj: griffe.Object, pkg: griffe.Module, match: re.Match[str]) -> str:
    shorten, name = match[2] == "~", match[3].strip()
    text = name.rsplit(".", 1)[-1] if shorten else name
    if match[1] in ("meth", "func"):
        text += "()"
    target = _resolve(obj, pkg, name, members_only=match[1] in ("attr", "meth"))
    if target is None:
        return f"`{text}`"
    # A constant is named for its value or its reason, which the reader must be able to reach:
    # a reference to one the reference does not render fails the strict build.
    optional = "" if match[1] in ("data", "const") else " optional"
    return f'<autoref identifier="{target}"{optional}><code>{text}</code></autoref>'


def _resolve(obj: griffe.Object, pkg: griffe.Module, name: str, members_only: bool) -> str | None:
    """The path ``name`` means in ``obj``'s docstring. An attribute or a method (``members_only``)
    is looked up in the enclosing classes only (not mistaken for a module of the same name)."""
    scopes: list[griffe.Object] = []
    scope: griffe.Object | None = obj
    while scope is not None:
        if not members_only or scope.is_class:
            scopes.append(scope)
        scope = scope.parent
    candidates = [f"{scope.path}.{name}" for scope in scopes]
    if not members_only or "." in name:
        candidates += [name, f"{pkg.path}.{name}"]
    for candidate in candidates:
        found = _lookup(pkg, candidate)
        if found is not None:
            return found
    return None


def _lookup(pkg: griffe.Module, path: str) -> str | None:
    head, _, rest = path.partition(".")
    if head != pkg.name:
        return None
    try:
        found = pkg[rest] if rest else pkg
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    if any(part.startswith("_") for part in path.split(".")):
        return None
    try:
        target = found.final_target if found.is_alias else found
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    if any(part.startswith("_") for part in target.path.split(".")):
        return None
    return path
