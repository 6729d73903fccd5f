"""Version-guarded writes: a view item that carries its own version (docs/design.md §9).

A *version guard* is a condition on a view write, ``attribute_not_exists(v) OR v < :version``:
the write takes effect only when the view holds an older version of the item (or none). A change
older than or equal to what the view holds is then a no-op, so the view converges to the newest
change whatever the delivery order and however often a change is delivered
(:mod:`cdc_consumer.versions` defines the versions and their order).

Such a write is idempotent by itself, so its record needs no processed-marker and no
transaction: its kind (:data:`GUARDED`) lets the engine write it alone, with a conditional
``PutItem`` (1 write unit per KB against 2 in a transaction), and read its failed condition as
"stale: a no-op". :class:`~cdc_consumer.sinks.latest_image.LatestImage` is built on it; use
:func:`guard` for any view write that must not be overwritten by an older change (a replica,
a search document).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc_consumer.sinks.protocol import ActionKind, OnConditionFailed, kind_of
from cdc_consumer.versions import VERSION_ATTRIBUTE

__all__ = ["GUARDED", "GUARD_PLACEHOLDER", "GUARD_VALUE", "GuardedAction", "guard", "is_guarded"]

#: The attribute name placeholder every version-guarded action uses for the version attribute.
GUARD_PLACEHOLDER = "#cdcVersion"
#: The value placeholder of the version in a guarded action.
GUARD_VALUE = ":cdcVersion"

#: A version-guarded write: idempotent by itself, written alone, a failed condition is stale.
GUARDED = ActionKind(
    "version-guarded",
    guards_itself=True,
    writes_alone=True,
    on_condition_failed=OnConditionFailed.STALE,
)


class GuardedAction(dict):  # type: ignore[type-arg]
    """A version-guarded action (a plain dict to boto3) that also says which item it writes:
    ``item_key`` (DynamoDB JSON), so the runtime keeps two writes of one item out of one
    transaction even for a Put, whose key it cannot otherwise tell from the item."""

    item_key: Mapping[str, Any] | None = None
    sink_kind = GUARDED


def guard(
    action: Mapping[str, Any],
    version: str,
    attribute: str = VERSION_ATTRIBUTE,
    *,
    key: Mapping[str, Any] | None = None,
) -> GuardedAction:
    """``action`` (a Put or Update in boto3's client shape) guarded by ``version``.

    A Put gets the version in its item; an Update gets ``SET <attribute> = :version``. Both get
    the condition ``attribute_not_exists(<attribute>) OR <attribute> < :version``, joined with
    ``AND`` to a condition the action already has. Use it for any view write that must not be
    overwritten by an older change (a replica, a search document); :class:`LatestImage` does.
    ``key``: the item's key in DynamoDB JSON (give it for a Put: see :class:`GuardedAction`).
    """
    if not isinstance(action, Mapping) or len(action) != 1:
        raise ValueError(f"expected one TransactWriteItems action, got {action!r:.200}")
    ((kind, body),) = action.items()
    if kind not in ("Put", "Update"):
        raise ValueError(f"only a Put or an Update can be version-guarded, got {kind}")
    body = dict(body)
    names = {**body.get("ExpressionAttributeNames", {}), GUARD_PLACEHOLDER: attribute}
    values = {**body.get("ExpressionAttributeValues", {}), GUARD_VALUE: {"S": version}}
    condition = (
        f"(attribute_not_exists({GUARD_PLACEHOLDER}) OR {GUARD_PLACEHOLDER} < {GUARD_VALUE})"
    )
    if body.get("ConditionExpression"):
        condition = f"({body['ConditionExpression']}) AND {condition}"
    if kind == "Put":
        body["Item"] = {**body["Item"], attribute: {"S": version}}
    else:
        update = body.get("UpdateExpression", "")
        assignment = f"{GUARD_PLACEHOLDER} = {GUARD_VALUE}"
        body["UpdateExpression"] = (
            update.replace("SET ", f"SET {assignment}, ", 1)
            if "SET " in update
            else f"SET {assignment} {update}".strip()
        )
    body.update(
        ConditionExpression=condition,
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values,
    )
    guarded = GuardedAction({kind: body})
    guarded.item_key = key if key is not None else body.get("Key")
    return guarded


def is_guarded(action: Any) -> bool:
    """Whether ``action`` is version-guarded (its failed condition means "stale: a no-op")."""
    return kind_of(action) is GUARDED
