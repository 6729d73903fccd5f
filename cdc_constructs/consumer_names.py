"""Consumer names: a consumer's name namespaces its idempotency markers, so two consumers writing
markers under one name into one idempotency table would each treat the other's records as
duplicates and apply nothing.

- A consumer's name is a function of that consumer alone: ``consumer_name`` when given, else its
  construct id (the last part of its own construct path). It never depends on what else the app
  holds, so adding a consumer (a group member, a consumer in another stack) never renames one
  that exists: a rename would forget every marker it wrote, and on a shared idempotency table
  hand its old namespace to the newcomer, which would skip every record the other had applied.
- A name that would collide, given or default (another consumer of the same app, any stack,
  already writes under it into the same idempotency table), is refused at synthesis with both
  construct paths in the error, never renamed.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, ClassVar

from aws_cdk import Token
from constructs import Construct

from cdc_constructs.exceptions import Problem
from cdc_constructs.validation import check_name

__all__ = ["ConsumerNames", "check_consumer_name"]


@dataclass(frozen=True)
class _Entry:
    path: str  # the consumer's construct path (a group member's: "<path> (member <name>)")
    name: str
    given: bool  # False: the default, the construct id
    table: str | None  # the idempotency table's identity, None when the consumer makes its own


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
        self,
        scope: Construct,
        construct_id: str,
        name: str | None,
        table: Any,
        *,
        member: bool = False,
    ) -> list[Problem]:
        """``name`` (None: the default, ``construct_id``) when another consumer already writes
        under it into the same table. ``member``: ``name`` is a group member's of the consumer
        ``construct_id``."""
        key = table_identity(table)
        resolved = construct_id if name is None else name
        if key is None:
            return []
        path = _path(scope, construct_id, name if member else None)
        return [
            Problem(
                "consumer_name",
                f"{resolved} (the default: the construct id)" if name is None else resolved,
                f"a name no other consumer writes markers under into this idempotency table: "
                f"{entry.path} already does, so each of {entry.path} and {path} would take the "
                "other's records for duplicates and apply nothing; give one of them a "
                "consumer_name of its own (a consumer keeps its name when others are added: "
                "names are never changed to make room)",
            )
            for entry in self._entries
            if entry.table == key and entry.name == resolved
        ]

    def register(
        self, consumer: Construct, name: str | None, table: Any, *, member: bool = False
    ) -> str:
        """The consumer's name: ``name``, or its construct id. ``member``: ``name`` is one of
        the consumer's group members'."""
        resolved = consumer.node.id if name is None else name
        path = f"{consumer.node.path} (member {name})" if member else consumer.node.path
        self._entries.append(_Entry(path, resolved, name is not None, table_identity(table)))
        return resolved


def _path(scope: Construct, construct_id: str, member: str | None) -> str:
    path = f"{scope.node.path}/{construct_id}" if scope.node.path else construct_id
    return f"{path} (member {member})" if member is not None else path


def check_consumer_name(
    scope: Construct, construct_id: str, name: Any, idempotency_table: Any
) -> list[Problem]:
    """A given name is a non-empty string without ``#`` (the marker key's separator); given or
    the default (the construct id), no other consumer of the app writes markers under it into
    the same idempotency table."""
    problems = [] if name is None else check_name("consumer_name", name, forbidden="#")
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
