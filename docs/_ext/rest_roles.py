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


# What a parameter the docstring does not describe says in the table.
_UNDESCRIBED = {
    "scope": "The parent construct.",
    "construct_id": "The construct's id, unique within ``scope``.",
}


class RestRoles(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for obj in _walk(pkg, set()):
            if obj.docstring is not None:
                obj.docstring.value = google_args_as_fields(obj.docstring.value)
                obj.docstring.value = _ROLE.sub(partial(_link, obj, pkg), obj.docstring.value)
                _describe_every_parameter(obj)


_ARGS = re.compile(r"^(?P<indent>[ \t]*)(?:Args|Arguments|Parameters):[ \t]*$", re.M)
_ARG = re.compile(r"^(?P<names>\w+(?:\s*/\s*\w+)*)(?:\s*\([^)]*\))?:\s*(?P<text>.*)$")


def google_args_as_fields(text: str) -> str:
    """A Google-style ``Args:`` section as reST ``:param name:`` lines (``a / b: text`` gives
    each name the text), so one parser reads every docstring."""
    match = _ARGS.search(text)
    if match is None:
        return text
    base = len(match["indent"])
    lines = text[match.end() :].split("\n")[1:]
    fields: list[list[str]] = []
    consumed = 0
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if line.strip() and indent <= base:
            break
        consumed += 1
        entry = _ARG.match(line.strip())
        if entry and fields is not None and (not fields or indent <= base + 4):
            names = [name.strip() for name in entry["names"].split("/")]
            fields += [[f"{match['indent']}:param {name}: {entry['text']}"] for name in names]
        elif fields and line.strip():
            for field in fields[-1:]:
                field.append(f"{match['indent']}    {line.strip()}")
    rest = "\n".join(lines[consumed:])
    body = "\n".join("\n".join(field) for field in fields)
    return text[: match.start()] + body + ("\n" + rest if rest else "")


def _describe_every_parameter(obj: griffe.Object) -> None:
    """Add a ``:param:`` line for each parameter of the signature the docstring leaves out, so
    every entry with parameters has a table with each one's type and default."""
    if not (obj.is_function or obj.is_class) or obj.docstring is None:
        return
    try:
        parameters = list(obj.parameters)  # a class: its __init__'s
    except (AttributeError, griffe.AliasResolutionError):
        return
    text = obj.docstring.value
    missing = [
        parameter.name
        for parameter in parameters
        if parameter.name not in ("self", "cls")
        and parameter.kind
        not in (griffe.ParameterKind.var_positional, griffe.ParameterKind.var_keyword)
        and not re.search(rf":param\s+(?:[^:]*\s)?{re.escape(parameter.name)}\s*:", text)
    ]
    if missing:
        lines = [
            f":param {name}: {_UNDESCRIBED.get(name, 'See the description above.')}"
            for name in missing
        ]
        obj.docstring.value = text.rstrip() + "\n\n" + "\n".join(lines)


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
    return f'<autoref identifier="{target}" optional><code>{text}</code></autoref>'


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
