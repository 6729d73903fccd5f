"""Hot aggregates: view updates the runtime may merge across records in one transaction.

A view item that many records update (a per-customer total, a global counter) would otherwise
cut the transaction at every record: DynamoDB allows one action per item in a transaction. An
update built with :func:`increment` or :func:`update_aggregate` says, in structure rather than
in an expression the runtime would have to parse, what it does to the item:

* ``add``: ADD a number to an attribute (a counter, a total);
* ``put``: SET an attribute to a value; records arrive in stream order, so the later record's
  value is the newer one;
* ``add_to_set`` / ``delete_from_set``: ADD or DELETE elements of a string, number or binary set.

Consecutive records' aggregates on the same item are merged into one ``Update`` action inside
the transaction, each record keeping its own processed-marker: the merged action is *exactly*
the effect of applying the records' updates one after the other (numbers summed, the last
SET kept, each set element's last ADD or DELETE kept). When a record turns out to be a
duplicate (its marker exists), the merged action is rebuilt from the other records only, so a
duplicate neither drops nor doubles anyone's contribution. Updates that cannot be combined
(the same attribute ADDed by one record and SET by another, a set element both added and
deleted in the result, set elements of two types, a sum DynamoDB's 38 digits would round,
different tables or keys) are not merged: the transaction is cut there as for any other action,
and DynamoDB decides each record's update on its own.

An aggregate is an ordinary TransactWriteItems ``Update`` action in boto3's client shape (a
``dict``), so it can be returned from any projection, inspected, or committed by any code. It
carries no condition: an aggregate is applied exactly once by its record's marker.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from decimal import Decimal, DecimalException
from typing import Any

from boto3.dynamodb.types import TypeSerializer

from cdc_consumer import decimals
from cdc_consumer.exceptions import InvalidActionError
from cdc_consumer.sinks.protocol import ActionKind

__all__ = ["AGGREGATE", "Aggregate", "increment", "merge_aggregates", "update_aggregate"]

_serializer = TypeSerializer()

Number = int | Decimal


def _merge(earlier: Any, later: Any) -> Aggregate | None:
    if isinstance(earlier, Aggregate) and isinstance(later, Aggregate):
        return earlier.then(later)
    return None


#: An aggregate's kind: merged with the next aggregate of the same item (hot aggregates); applied
#: exactly once by its record's processed-marker, as any plain action.
AGGREGATE = ActionKind("aggregate", merge=_merge)


class Aggregate(dict[str, Any]):
    """A mergeable ``Update`` action: ``{"Update": {...}}`` plus what it does, in structure.

    Build it with :func:`increment` or :func:`update_aggregate`; merge with :meth:`then`.
    """

    sink_kind = AGGREGATE

    table: str
    key: dict[str, Any]
    adds: dict[str, Decimal]
    puts: dict[str, Any]
    #: attribute -> {element: True (ADDed) / False (DELETEd)}, the element's last operation.
    set_ops: dict[str, dict[Any, bool]]

    def __init__(
        self,
        table: str,
        key: Mapping[str, Any],
        adds: Mapping[str, Decimal],
        puts: Mapping[str, Any],
        set_ops: Mapping[str, Mapping[Any, bool]],
    ) -> None:
        self.table = table
        self.key = dict(key)
        self.adds = dict(adds)
        self.puts = dict(puts)
        self.set_ops = {name: dict(ops) for name, ops in set_ops.items()}
        super().__init__({"Update": _update_body(self)})

    @property
    def identity(self) -> tuple[str, str]:
        """(table, key) in the form the transaction module compares items with."""
        return self.table, json.dumps(self["Update"]["Key"], sort_keys=True, default=str)

    def then(self, later: Aggregate) -> Aggregate | None:
        """This update followed by ``later`` as one update, or None when they cannot merge:
        not the same item, an attribute used two ways, a set ADDed and DELETEd, a set whose
        elements would mix types, or a sum DynamoDB could not hold exactly. Not merged, each
        goes to DynamoDB as its own action, which decides each against the item exactly as
        applying them one after the other would (a merged action would fail or round for
        both records instead of for the one at fault)."""
        if later.identity != self.identity:
            return None
        adds, puts = dict(self.adds), dict(self.puts)
        set_ops = {name: dict(ops) for name, ops in self.set_ops.items()}
        for name, value in later.adds.items():
            if name in puts or name in set_ops:
                return None
            total = _exact_sum(adds.get(name, Decimal(0)), value)
            if total is None:
                return None
            adds[name] = total
        for name, value in later.puts.items():
            if name in adds or name in set_ops:
                return None
            puts[name] = value
        for name, ops in later.set_ops.items():
            if name in adds or name in puts:
                return None
            merged = set_ops.setdefault(name, {})
            merged.update(ops)  # each element keeps its last operation
            if len(set(merged.values())) > 1 or len({_set_type(e) for e in merged}) > 1:
                # ADD and DELETE of one attribute cannot share an UpdateExpression; a set
                # holds elements of one type (a string and a number: two records at odds).
                return None
        return Aggregate(self.table, self.key, adds, puts, set_ops)


def _exact_sum(earlier: Decimal, later: Decimal) -> Decimal | None:
    """``earlier + later`` in DynamoDB's number context (38 significant digits), or None when
    the sum would be rounded or out of its range (then the two must not be merged)."""
    try:
        return decimals.add(earlier, later)
    except DecimalException:  # Inexact, Rounded, Overflow, Underflow, Clamped: all trapped
        return None


def _set_type(element: Any) -> str:
    """The DynamoDB set type an element belongs to: SS, NS or BS."""
    return "NS" if isinstance(element, Decimal) else "BS" if isinstance(element, bytes) else "SS"


def merge_aggregates(updates: Iterable[Aggregate]) -> Aggregate | None:
    """Updates of one item, in record order, as one; None when any pair cannot merge."""
    merged: Aggregate | None = None
    for update in updates:
        if merged is None:
            merged = update
            continue
        merged = merged.then(update)
        if merged is None:
            return None
    return merged


def increment(table: str, key: Mapping[str, Any], counters: Mapping[str, Number]) -> Aggregate:
    """ADD each of ``counters`` (attribute -> int or Decimal, negative to subtract) to the item
    ``key`` (attribute -> Python value, e.g. ``{"pk": "GROUP#42"}``) of ``table``.

    DynamoDB's ADD creates the item and the attribute (from 0) when missing. Consecutive
    records' increments of one item merge into one action (the sum).
    """
    return update_aggregate(table, key, add=counters)


def update_aggregate(
    table: str,
    key: Mapping[str, Any],
    *,
    add: Mapping[str, Number] | None = None,
    put: Mapping[str, Any] | None = None,
    add_to_set: Mapping[str, Iterable[Any]] | None = None,
    delete_from_set: Mapping[str, Iterable[Any]] | None = None,
) -> Aggregate:
    """One mergeable update of the item ``key`` of ``table`` (values are Python values).

    ``add``: numbers to ADD; ``put``: values to SET (the latest record's wins when merged);
    ``add_to_set`` / ``delete_from_set``: elements (str, int/Decimal or bytes; one type per
    attribute) to ADD to / DELETE from a set attribute. An attribute may appear in one of them
    only. Raises :class:`InvalidActionError` (poison: the same change builds the same update)
    naming the problem: no attribute, an attribute twice, a float or bool as a number, an
    empty set, or a key or value DynamoDB cannot hold.
    """
    if not isinstance(table, str) or not table:
        raise InvalidActionError(f"an aggregate needs a table name, got {table!r}")
    if not isinstance(key, Mapping) or not key:
        raise InvalidActionError(f"an aggregate needs the item's key attributes, got {key!r}")
    adds: dict[str, Decimal] = {}
    for name, value in (add or {}).items():
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            raise InvalidActionError(
                f"aggregate ADD {name!r}: give an int or Decimal, got {type(value).__name__} "
                f"{value!r} (DynamoDB numbers are exact: no floats)"
            )
        adds[name] = Decimal(value)
    set_ops: dict[str, dict[Any, bool]] = {}
    for elements_by_name, is_add in ((add_to_set, True), (delete_from_set, False)):
        for name, elements in (elements_by_name or {}).items():
            if name in set_ops:
                raise InvalidActionError(
                    f"aggregate attribute {name!r} is both added to and deleted from; "
                    "DynamoDB takes one of ADD and DELETE per attribute in an update"
                )
            members = {_element(name, element) for element in elements}
            if not members:
                raise InvalidActionError(f"aggregate set {name!r}: DynamoDB sets cannot be empty")
            set_ops[name] = dict.fromkeys(members, is_add)
    puts = dict(put or {})
    names = [*adds, *puts, *set_ops]
    if not names:
        raise InvalidActionError("an aggregate must change at least one attribute")
    if len(set(names)) != len(names):
        raise InvalidActionError(
            f"an aggregate names an attribute in two of add / put / sets: {sorted(names)}"
        )
    if any(name in key for name in names):
        raise InvalidActionError("an aggregate cannot change the item's key attributes")
    try:
        return Aggregate(table, key, adds, puts, set_ops)
    except (TypeError, ValueError, ArithmeticError) as error:
        raise InvalidActionError(f"an aggregate holds a value DynamoDB cannot: {error}") from error


def _element(name: str, element: Any) -> Any:
    if isinstance(element, int) and not isinstance(element, bool):
        return Decimal(element)
    if isinstance(element, (str, bytes, Decimal)):
        return element
    raise InvalidActionError(
        f"aggregate set {name!r}: elements are str, int/Decimal or bytes, got {element!r}"
    )


def _update_body(update: Aggregate) -> dict[str, Any]:
    """The ``Update`` action DynamoDB receives (client shape)."""
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    clauses: dict[str, list[str]] = {"SET": [], "ADD": [], "DELETE": []}

    def alias(name: str, value: Any) -> tuple[str, str]:
        index = len(names)
        names[f"#g{index}"] = name
        values[f":g{index}"] = _serializer.serialize(value)
        return f"#g{index}", f":g{index}"

    for name in sorted(update.adds):
        n, v = alias(name, update.adds[name])
        clauses["ADD"].append(f"{n} {v}")
    for name in sorted(update.puts):
        n, v = alias(name, update.puts[name])
        clauses["SET"].append(f"{n} = {v}")
    for name in sorted(update.set_ops):
        ops = update.set_ops[name]
        is_add = next(iter(ops.values()))
        n, v = alias(name, set(ops))
        clauses["ADD" if is_add else "DELETE"].append(f"{n} {v}")
    expression = " ".join(
        f"{keyword} {', '.join(parts)}" for keyword, parts in clauses.items() if parts
    )
    return {
        "TableName": update.table,
        "Key": {name: _serializer.serialize(value) for name, value in update.key.items()},
        "UpdateExpression": expression,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }
