"""Consumer names, unique in the app: a consumer's name namespaces its idempotency markers, so
two consumers writing markers under one name into one idempotency table would each treat the
other's records as duplicates and apply nothing.

- A name given (``consumer_name=...``) is refused when another consumer of the same app (any
  stack) already writes under it into the same idempotency table; the error names both paths.
- The default name is the construct id when no other consumer of the app has that id or that
  name, so existing names stay as they were; otherwise it is the consumer's construct path with
  ``-`` for ``/`` (``Stack-Orders-Consumer``), unique in the app. It is decided once the app is
  built (a lazy value, resolved at synthesis), so a consumer added later is taken into account.
"""

from __future__ import annotations

import weakref
from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

import jsii
from aws_cdk import IStableStringProducer, Lazy, Token
from constructs import Construct

from cdc_constructs.exceptions import Problem
from cdc_constructs.validation import check_name

__all__ = ["ConsumerNames", "check_consumer_name"]


@dataclass(frozen=True)
class _Entry:
    path: str
    construct_id: str
    name: str | None  # None: the default
    table: str | None  # the idempotency table's identity, None when the consumer makes its own


@jsii.implements(IStableStringProducer)
class _DefaultName:
    def __init__(self, names: ConsumerNames, entry: _Entry) -> None:
        self._names, self._entry = names, entry

    def produce(self) -> str:
        return self._names.default_name(self._entry)


class ConsumerNames:
    """The consumers of one app and their names (one registry per app root)."""

    _registries: ClassVar[weakref.WeakKeyDictionary[Any, ConsumerNames]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self) -> None:
        self._entries: list[_Entry] = []

    @classmethod
    def of(cls, scope: Construct) -> ConsumerNames:
        root = scope.node.root
        registry = cls._registries.get(root)
        if registry is None:
            registry = cls._registries[root] = cls()
        return registry

    def problems(
        self, scope: Construct, construct_id: str, name: str | None, table: Any
    ) -> list[Problem]:
        """A given ``name`` another consumer already writes under into the same table."""
        key = table_identity(table)
        if name is None or key is None:
            return []
        path = f"{scope.node.path}/{construct_id}" if scope.node.path else construct_id
        return [
            Problem(
                "consumer_name",
                name,
                f"a name no other consumer writes markers under into this idempotency table: "
                f"{entry.path} already does, so each of {entry.path} and {path} would take the "
                "other's records for duplicates and apply nothing",
            )
            for entry in self._entries
            if entry.table == key and entry.name == name
        ]

    def register(self, consumer: Construct, name: str | None, table: Any) -> str:
        """The consumer's name: ``name``, or its default (a lazy string, see the module)."""
        entry = _Entry(consumer.node.path, consumer.node.id, name, table_identity(table))
        self._entries.append(entry)
        if name is not None:
            return name
        return Lazy.string(_DefaultName(self, entry))

    def default_name(self, entry: _Entry) -> str:
        ids = Counter(e.construct_id for e in self._entries if e.name is None)
        given = {e.name for e in self._entries if e.name is not None}
        if ids[entry.construct_id] == 1 and entry.construct_id not in given:
            return entry.construct_id
        return entry.path.replace("/", "-")


def check_consumer_name(
    scope: Construct, construct_id: str, name: Any, idempotency_table: Any
) -> list[Problem]:
    """A given name is a non-empty string without ``#`` (the marker key's separator) that no
    other consumer of the app writes markers under into the same idempotency table."""
    if name is None:
        return []
    problems = check_name("consumer_name", name, forbidden="#")
    return problems or ConsumerNames.of(scope).problems(
        scope, construct_id, name, idempotency_table
    )


def table_identity(table: Any) -> str | None:
    """What makes two ``idempotency_table`` props the same table: its physical name when known
    at synthesis, else the construct path of the table (shared across stacks by reference)."""
    if table is None:
        return None
    inner = getattr(table, "table", table)  # IdempotencyTable wraps a TableV2
    name = getattr(inner, "table_name", None)
    if isinstance(name, str) and not Token.is_unresolved(name):
        return f"name:{name}"
    node = getattr(inner, "node", None)
    return f"path:{node.path}" if node is not None else f"object:{id(inner)}"
