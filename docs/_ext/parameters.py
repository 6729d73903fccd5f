"""A griffe extension for the API reference (mkdocs.yml), run before the one that links the reST
roles (rest_roles.py): every parameter of a documented signature gets a row that says something.

- A Google-style ``Args:`` section becomes reST ``:param name:`` lines, so one parser reads
  every docstring.
- A parameter its own docstring does not describe takes the description of the docstring that
  documents it: a constructor's props are grouped into option classes
  (``StreamMappingOptions``, ``FunctionOptions``, ...), named in its docstring by a ``:class:``
  reference; their ``:param name:`` lines are the props' descriptions. Only ``scope`` and
  ``construct_id`` have a fixed text.
- A default that names a constant (``batch_size: int = defaults.BATCH_SIZE``) shows the
  constant's value (``100``), in the signature and in the table; a constant of
  :mod:`cdc_constructs.defaults` also links to its entry, which gives the reason.

tests/docs/test_api_reference.py checks the built page: values, not constants' names; no
parameter without a description.
"""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

import griffe

#: The module whose constants are the constructs' defaults, each with its reason (rendered in
#: the API reference, docs/api.md).
DEFAULTS_MODULE = "cdc_constructs.defaults"
#: Packages of the project whose constants a default may name, read by importing them (they are
#: loaded after the constructs; the runtime's contract is standard library only).
OTHER_PACKAGES = ("cdc_consumer.",)

# What a parameter no docstring describes says in the table (the constructs' first two).
FIXED = {
    "scope": "The parent construct.",
    "construct_id": "The construct's id, unique within ``scope``.",
}
# What a parameter of these common names is, when no docstring says more (the last resort).
FALLBACK = {
    "message": "What went wrong, with the values involved: the exception's text.",
    "event": 'The Lambda event, as Lambda passes it to the handler (``{"Records": [...]}``).',
    "context": "The Lambda context of the invocation, as Lambda passes it to the handler.",
    "function": "The function registered (the decorated function, used as a decorator).",
    "record": 'A DynamoDB stream record, as Lambda delivers it in ``event["Records"]``.',
    "records": 'The batch\'s records, as Lambda delivers them in ``event["Records"]``.',
}
# A stream record's fields (of Change and SnapshotChange only): what DynamoDB Streams calls them.
RECORD_CLASSES = ("cdc_consumer.change.Change", "cdc_consumer.snapshots.SnapshotChange")
RECORD_FIELDS = {
    "event_id": "The record's ``eventID`` (unique per record; markers are keyed by it).",
    "event_name": "``INSERT``, ``MODIFY`` or ``REMOVE`` (the record's ``eventName``).",
    "sequence_number": "The record's ``SequenceNumber``: its order in its shard.",
    "is_ttl_expiry": "Whether DynamoDB's TTL deleted the item (a REMOVE whose ``userIdentity`` "
    "is the DynamoDB service).",
    "source_arn": "The stream's ARN (the record's ``eventSourceARN``).",
}

#: The package whose every rendered parameter must be described (the constructs' pages): the
#: build fails on one that is not. Elsewhere (the runtime) such a row says so.
STRICT_PACKAGE = "cdc_constructs"
NOT_DESCRIBED = "Not described by its docstring yet (its type and default are in the signature)."

#: Parameters no docstring describes (the build fails on any: on_package).
UNDESCRIBED: list[str] = []

_ARGS = re.compile(r"^(?P<indent>[ \t]*)(?:Args|Arguments|Parameters):[ \t]*$", re.M)
_ARG = re.compile(r"^(?P<names>\w+(?:\s*/\s*\w+)*)(?:\s*\([^)]*\))?:\s*(?P<text>.*)$")
_CLASS_ROLE = re.compile(r":(?:py:)?class:`~?([\w.]+)`")


class ParameterDescriptions(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        objects = [obj for obj in _walk(pkg, set()) if obj.docstring is not None]
        for obj in objects:
            obj.docstring.value = google_args_as_fields(obj.docstring.value)
        rendered = _rendered(pkg)
        for obj in objects:
            if obj.path in rendered:
                obj.docstring.value = fields_last(obj.docstring.value)
                _describe_every_parameter(obj, pkg)
            _show_default_values(obj, pkg)
        if UNDESCRIBED:
            raise ValueError(
                "parameters described by no docstring (add a :param name: line to the "
                "docstring, or to an option class it names with :class:): " + ", ".join(UNDESCRIBED)
            )


def _rendered(pkg: griffe.Module) -> set[str]:
    """The paths the API reference renders: each public name of the package (``__all__``, its
    subpackages' too) and its public members."""
    paths: set[str] = set()
    modules = [pkg, *(m for m in pkg.modules.values() if m.is_package)]
    for module in modules:
        for name in module.exports or ():
            try:
                target = module[name]
                target = target.final_target if target.is_alias else target
            except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
                continue
            paths.add(target.path)
            paths.update(
                member.path
                for member_name, member in target.members.items()
                if not member_name.startswith("_") and not member.is_alias
            )
    return paths


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
        if entry and (not fields or indent <= base + 4):
            names = [name.strip() for name in entry["names"].split("/")]
            fields += [[f"{match['indent']}:param {name}: {entry['text']}"] for name in names]
        elif fields and line.strip():
            for field in fields[-1:]:
                field.append(f"{match['indent']}    {line.strip()}")
    rest = "\n".join(lines[consumed:])
    body = "\n".join("\n".join(field) for field in fields)
    return text[: match.start()] + body + ("\n" + rest if rest else "")


def fields_last(text: str) -> str:
    """The docstring with its ``:param`` paragraphs after its prose: the reST parser reads
    every paragraph after a field as that field's text, so prose written after the fields
    ("The function: ``code``, ...") would land in the last parameter's row."""
    paragraphs = re.split(r"\n[ \t]*\n", text.strip("\n"))
    fields = [p for p in paragraphs if p.lstrip().startswith(":")]
    prose = [p for p in paragraphs if not p.lstrip().startswith(":")]
    return "\n\n".join(prose + fields)


def param_description(text: str, name: str) -> str | None:
    """The text of ``:param name:`` in a reST docstring (its continuation lines joined), or
    None."""
    match = re.search(
        rf"^(?P<indent>[ \t]*):param\s+(?:[^:\n]*\s)?{re.escape(name)}\s*:(?P<first>.*)$",
        text,
        re.M,
    )
    if match is None:
        return None
    parts = [match["first"].strip()]
    for line in text[match.end() :].split("\n")[1:]:
        indented = len(line) - len(line.lstrip()) > len(match["indent"])
        if not line.strip() or not indented:
            break
        parts.append(line.strip())
    return " ".join(part for part in parts if part)


def _parameters(obj: griffe.Object) -> list[griffe.Parameter]:
    if not (obj.is_function or obj.is_class):
        return []
    try:
        return [
            parameter
            for parameter in obj.parameters  # a class: its __init__'s
            if parameter.name not in ("self", "cls")
            and parameter.kind
            not in (griffe.ParameterKind.var_positional, griffe.ParameterKind.var_keyword)
        ]
    except (AttributeError, griffe.AliasResolutionError):
        return []


def _describe_every_parameter(obj: griffe.Object, pkg: griffe.Module) -> None:
    """Add a ``:param:`` line for each parameter the docstring leaves out, from the docstring
    that documents it (an option class it names), so every row of the table describes its
    parameter."""
    parameters = _parameters(obj)
    text = obj.docstring.value
    missing = [p.name for p in parameters if param_description(text, p.name) is None]
    if not missing:
        return
    lines = []
    for name in missing:
        sources = _named_classes(obj, pkg, name)
        found = (
            FIXED.get(name)
            or _attribute_docstring(obj, name)
            or next((d for source in sources if (d := param_description(source, name))), None)
            or prose_description(text, name, {p.name for p in parameters})
            or FALLBACK.get(name)
            or (RECORD_FIELDS.get(name) if obj.path in RECORD_CLASSES else None)
        )
        if found is None and obj.path.startswith(STRICT_PACKAGE + "."):
            UNDESCRIBED.append(f"{obj.path}({name})")
            continue
        found = found or NOT_DESCRIBED
        lines.append(f":param {name}: {found}")
    obj.docstring.value = text.rstrip() + "\n\n" + "\n".join(lines)


# Prose that describes a parameter, where an entry starts (a line or list item, or after "; "
# or ". "): "``name``: text", "``name`` (default x): text", or a sentence "``name`` lists ...".
_PROSE_ENTRY = re.compile(
    r"(?:^[ \t]*(?:- )?|;\s+|\.\s+)"
    r"(?P<names>``\w+``(?:\s*(?:/|,|and)\s*``\w+``)*)(?P<paren>\s*\([^)]*\))?(?P<colon>:)?\s",
    re.M,
)


def prose_description(text: str, name: str, parameters: set[str]) -> str | None:
    """The text a docstring's prose gives ``name`` ("``name``: text", "``a`` / ``b``: text"
    naming several, or a sentence that starts with it), up to the next entry of another of
    ``parameters``, list item or paragraph."""

    def names(match: re.Match[str]) -> set[str]:
        return set(re.findall(r"``(\w+)``", match["names"]))

    for match in _PROSE_ENTRY.finditer(text):
        if name not in names(match):
            continue
        rest = text[match.end() :]
        end = len(rest)
        others = parameters - {name}
        following = (m for m in _PROSE_ENTRY.finditer(rest) if names(m) & others)
        for stop in (next(following, None), re.search(r"\n\s*(?:- |\n)", rest)):
            if stop is not None:
                end = min(end, stop.start())
        if match["colon"]:
            head = (match["paren"] or "").strip()
        elif len(names(match)) == 1 and re.match(r"[a-z]", rest):
            head = match["names"] + (match["paren"] or "")  # a sentence about it: its subject
        else:  # a list of names ("Reading the stream: ``a``, ``b``, ..."), not a description
            continue
        described = " ".join(f"{head} {rest[:end]}".split()).rstrip(";,")
        if described:
            return described
    return None


def _attribute_docstring(obj: griffe.Object, name: str) -> str | None:
    """A class's attribute of the parameter's name documented where it is declared (a
    dataclass field with a docstring under it)."""
    member = obj.members.get(name) if obj.is_class else None
    if member is None or member.is_alias or member.docstring is None:
        return None
    return " ".join(member.docstring.value.split())


def _named_classes(obj: griffe.Object, pkg: griffe.Module, parameter: str) -> list[str]:
    """The docstrings that may document ``parameter``: a class's bases' (an inherited
    ``__init__``), then those of the classes ``obj``'s docstring names with ``:class:``: first
    those named in a paragraph of prose that mentions the parameter ("``batch_size``, ...
    (:class:`StreamMappingOptions`)"), then the others, in order."""
    found = []
    for base in obj.resolved_bases if obj.is_class else ():
        if base.docstring is not None:
            found.append(google_args_as_fields(base.docstring.value))
    paragraphs = [p for p in re.split(r"\n\s*\n", obj.docstring.value) if p.strip()]
    mentioned = [f"``{parameter}``" in p and not p.lstrip().startswith(":") for p in paragraphs]
    roles = [
        (not mentioned[index], name)
        for index, paragraph in enumerate(paragraphs)
        for name in _CLASS_ROLE.findall(paragraph)
    ]
    for _, name in sorted(roles, key=lambda role: role[0]):  # stable: in order otherwise
        target = _find(pkg, name, obj)
        if target is not None and target.docstring is not None and target is not obj:
            found.append(google_args_as_fields(target.docstring.value))
    return found


def _find(pkg: griffe.Module, name: str, near: griffe.Object) -> griffe.Object | None:
    candidates = [name, f"{pkg.path}.{name}", f"{near.module.path}.{name}"]
    for candidate in candidates:
        head, _, rest = candidate.partition(".")
        if head != pkg.name:
            continue
        try:
            found = pkg[rest] if rest else pkg
            return found.final_target if found.is_alias else found
        except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            continue
    return None


#: "Default 256 MB (...)", "Default: 60 s: ...": the default a description states, up to the
#: end of its clause.
_STATED_DEFAULT = re.compile(r"\bDefault:?\s+(?P<value>[^.;:(,]+?)\s*(?P<end>[.;:(,]|$)")
_REST_ROLE = re.compile(r":(?:py:)?\w+:`~?(?:[\w.]*\.)?([^`.]+?)(?:\(\))?`")
#: The longest stated default shown in a signature; a longer one is prose, left to the text.
MAX_STATED_DEFAULT = 48


def stated_default(description: str | None) -> str | None:
    """The default a parameter's description states ("Default 256 MB (enough for ...)" gives
    ``256 MB``; "Default: the runtime's (5 s)" gives ``the runtime's (5 s)``), None when it
    states none, "none", or prose too long for a signature."""
    text = _REST_ROLE.sub(r"\1", description or "").replace("``", "")
    found = _STATED_DEFAULT.search(text)
    if found is None:
        return None
    value = " ".join(found["value"].split())
    if found["end"] == "(" and value.endswith("'s"):  # "the runtime's (5 s)"
        value += " (" + text[found.end() :].split(")", 1)[0] + ")"
    conditional = value.split(" ", 1)[0].lower() in ("with", "without", "if", "when")
    if not value or value.lower() == "none" or conditional or len(value) > MAX_STATED_DEFAULT:
        return None  # none, a default under a condition, or prose: the description says it
    return value


def _show_default_values(obj: griffe.Object, pkg: griffe.Module) -> None:
    """A default naming a constant shows the constant's value; a constant of the defaults
    module also links, in the description, to its entry (the reason). A ``None`` default whose
    description states the real one (``memory_size=None``: "Default 256 MB") shows that."""
    for parameter in _parameters(obj):
        if str(parameter.default) == "None":
            stated = stated_default(param_description(obj.docstring.value, parameter.name))
            if stated is not None:
                parameter.default = stated
            continue
        default = parameter.default
        if not isinstance(default, griffe.ExprName | griffe.ExprAttribute):
            continue
        path = default.canonical_path
        value = _constant_value(path, obj)
        if value is None:
            continue
        parameter.default = value
        if path.startswith(DEFAULTS_MODULE + "."):
            obj.docstring.value = _add_reason_link(obj.docstring.value, parameter.name, path)


def _constant_value(path: str, obj: griffe.Object) -> str | None:
    """The value of the module-level constant at ``path`` (``cdc_constructs.defaults.BATCH_SIZE``)
    as its source writes it; a constant of another package of the project (the runtime's
    contract, loaded after this one) by importing it, when it is a plain value."""
    try:
        found = obj.modules_collection.get_member(path)
        found = found.final_target if found.is_alias else found
    except (KeyError, ValueError, AttributeError, griffe.AliasResolutionError):
        found = None
    except griffe.CyclicAliasError:
        return None
    if found is not None:
        plain = found.is_attribute and found.value is not None and found.parent.is_module
        return str(found.value) if plain else None
    module, _, name = path.rpartition(".")
    if not module.startswith(OTHER_PACKAGES):
        return None
    try:
        value = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    if isinstance(value, str):
        return json.dumps(value)  # as the source writes a string, whichever way it is loaded
    return repr(value) if isinstance(value, int | float | bool) else None


def _add_reason_link(text: str, name: str, path: str) -> str:
    """Append "Why this default: NAME" (a link to the constant's entry) to ``:param name:``."""
    match = re.search(
        rf"^(?P<indent>[ \t]*):param\s+(?:[^:\n]*\s)?{re.escape(name)}\s*:.*$", text, re.M
    )
    if match is None:
        return text
    end = match.end()
    for line in text[end:].split("\n")[1:]:
        if not line.strip() or len(line) - len(line.lstrip()) <= len(match["indent"]):
            break
        end += len(line) + 1
    return text[:end] + f" Why this default: :data:`~{path}`." + text[end:]


def _walk(obj: griffe.Object, seen: set[str]):
    if obj.path in seen:
        return
    seen.add(obj.path)
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member, seen)
