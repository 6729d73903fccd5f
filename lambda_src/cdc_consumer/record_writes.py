"""What one record writes: its processed-marker (when it needs one) and its projections' actions.

The first step of the write path (docs/design.md §4, the walk of one record) builds one
:class:`RecordWrites` per record (:mod:`cdc_consumer.decide`): the actions validated, the item
each writes, whether it needs a marker, whether it may be written alone and where the batch's
ledger lists it. The later steps read it: the plan groups it (:mod:`cdc_consumer.plan`), the
write step writes it (:mod:`cdc_consumer.write`).

The *processed-marker* is a Put of ``{consumer}#{eventID}`` on the idempotency table,
conditioned on ``attribute_not_exists(id)``: marker and effects commit together or not at all,
so an effect is applied exactly once however often the record is delivered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.defaults import EXPIRATION_ATTRIBUTE, ID_ATTRIBUTE, STREAM_ATTRIBUTE
from cdc_consumer.exceptions import InvalidActionError
from cdc_consumer.ledger import Lane
from cdc_consumer.service_limits import MAX_TRANSACTION_ACTIONS, MAX_TRANSACTION_BYTES
from cdc_consumer.sinks.protocol import item_key, kind_of

#: TransactWriteItems action types and the attribute each needs to name its item.
ACTION_TYPES: dict[str, str] = {
    "Put": "Item",
    "Update": "Key",
    "Delete": "Key",
    "ConditionCheck": "Key",
}
#: What each action type requires besides TableName and its item.
REQUIRED_EXPRESSIONS: dict[str, str] = {
    "Update": "UpdateExpression",
    "ConditionCheck": "ConditionExpression",
}
#: The cancellation reason of a condition that did not hold (on a marker: a duplicate).

ItemIdentity = tuple[str, str]


def marker_action(
    table: str, marker_id: str, expiration: int, stream: str | None = None
) -> dict[str, Any]:
    """The processed-marker Put: fails its condition when the record was already applied.

    ``stream`` (the record's ``eventSourceARN``) is kept on the marker, and a failed condition
    returns the existing marker (``ReturnValuesOnConditionCheckFailure``, no extra request),
    so a marker written for another stream is told from a duplicate (:func:`commit`).
    """
    item = {ID_ATTRIBUTE: {"S": marker_id}, EXPIRATION_ATTRIBUTE: {"N": str(expiration)}}
    if stream:
        item[STREAM_ATTRIBUTE] = {"S": stream}
    return {
        "Put": {
            "TableName": table,
            "Item": item,
            "ConditionExpression": "attribute_not_exists(#id)",
            "ExpressionAttributeNames": {"#id": ID_ATTRIBUTE},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }


def foreign_stream(written: Any, existing: Any) -> str | None:
    """The stream ``existing`` (an idempotency item) was written for, when it is not the stream
    of ``written`` (the item we tried to write); None when they agree or either does not say
    (markers written before streams were recorded count as this stream's)."""
    theirs = _stream_of(existing)
    ours = _stream_of(written)
    return theirs if theirs and ours and theirs != ours else None


def _stream_of(item: Any) -> str | None:
    value = item.get(STREAM_ATTRIBUTE) if isinstance(item, Mapping) else None
    stream = value.get("S") if isinstance(value, Mapping) else None
    return stream if isinstance(stream, str) else None


@dataclass(eq=False, slots=True)
class RecordWrites:
    """One record's writes: its marker first (when it needs one), then its projections' actions.

    A record whose projections returned no actions has no items at all (no marker either:
    there is no effect to make exactly-once, so a marker would be a write for nothing).

    ``quarantined`` marks a poison record's compensating writes (the actions of the
    :class:`~cdc_consumer.exceptions.PermanentError` its projection raised): committed like any
    record's, but the record counts as quarantined, not as processed or duplicate.
    """

    position: int
    items: list[Any]
    #: The item each of ``items`` writes ((table, key); None for a Put on a table whose key
    #: schema is unknown), in the same order.
    keys: list[ItemIdentity | None]
    identities: frozenset[ItemIdentity]
    size: int
    quarantined: bool = False
    #: The record's mergeable actions by item (their kind has ``merge``, e.g. hot aggregates):
    #: these may share the item with other records' (merged into one action).
    mergeable: dict[ItemIdentity, Any] = field(default_factory=dict)
    #: Whether ``items`` starts with the record's processed-marker. A record whose every
    #: action guards itself (:class:`~cdc_consumer.sinks.protocol.ActionKind`, e.g.
    #: LatestImage's version-guarded Put) has none: a redelivery is not newer than what the
    #: view holds, so its guard fails and it is dropped as stale; nor has a record with an
    #: action that guards its record (a Contributions swap: once applied, the version it
    #: expects is gone).
    marker: bool = True
    #: Whether every item may be written alone (a conditional PutItem / DeleteItem /
    #: UpdateItem, no transaction): the plan then writes it so when that costs less
    #: (:mod:`cdc_consumer.plan`).
    alone: bool = False
    #: (lane, sequence number) when the ledger lists the record in its transaction's entry
    #: (:mod:`cdc_consumer.ledger`): instead of a processed-marker, or beside one when the record
    #: may have a marker already (:mod:`cdc_consumer.marker_horizon`).
    listed: tuple[Lane, int] | None = None
    #: The ledger found the record applied before its writes were planned: a duplicate.
    duplicate: bool = False

    @classmethod
    def build(
        cls,
        position: int,
        marker: dict[str, Any],
        actions: Any,
        idempotency_table: str,
        *,
        quarantined: bool = False,
        listed: tuple[Lane, int] | None = None,
        marked: bool = False,
    ) -> RecordWrites:
        """Validate a projection's ``actions`` and pair them with ``marker`` when they need it
        (with ``listed``, its ledger reference, the transaction's ledger entry lists it instead;
        ``marked``: and the marker is written too).

        Raises :class:`InvalidActionError` (poison: the same change always yields the same
        actions) naming the problem when the actions are not a list of TransactWriteItems
        actions in boto3's client shape, when one record needs more than 99 actions (the
        marker takes the 100th) or 4 MB, or touches one item twice.
        """
        actions = action_list(actions)
        if not actions:
            return cls(position, [], [], frozenset(), 0, quarantined)
        if len(actions) + 1 > MAX_TRANSACTION_ACTIONS:
            raise InvalidActionError(
                f"a projection returned {len(actions)} actions for one record; at most "
                f"{MAX_TRANSACTION_ACTIONS - 1} fit in a transaction beside its marker"
            )
        keys, mergeable = _keys(actions, idempotency_table)
        kinds = [kind_of(action) for action in actions]
        guarded = all(k.guards_itself for k in kinds) or any(k.guards_record for k in kinds)
        needs_marker = quarantined or not guarded
        items = [marker, *actions] if needs_marker else actions
        # The JSON of the actions is larger than DynamoDB's item size (type tags, quotes), so
        # staying under the limit measured this way stays under DynamoDB's.
        size = len(json.dumps(items, default=str))
        if size > MAX_TRANSACTION_BYTES:
            raise InvalidActionError(
                f"a projection's actions for one record take {size} bytes; a transaction "
                f"holds at most {MAX_TRANSACTION_BYTES}"
            )
        identities = {key for key in keys if key is not None}
        if needs_marker and listed is not None and not marked:  # the ledger's entry lists it
            made = cls(position, actions, keys, frozenset(identities), size, quarantined, mergeable)
            made.marker, made.listed = False, listed
            return made
        if not needs_marker:
            alone = all(k.writes_alone for k in kinds)
            return cls(
                position, items, keys, frozenset(identities), size, False, mergeable, False, alone
            )
        marker_identity = _identity(marker, -1, idempotency_table)
        assert marker_identity is not None
        identities.add(marker_identity)
        keys = [marker_identity, *keys]
        made = cls(position, items, keys, frozenset(identities), size, quarantined, mergeable)
        made.listed = listed  # with a marker: it may have one already (see ``marked``)
        return made

    def drop_stale(self, indexes: set[int]) -> None:
        """Remove the items at ``indexes`` whose guard did not hold: the view holds that
        version or a newer one, and versions only grow, so they stay no-ops."""
        kept = [i for i in range(len(self.items)) if i not in indexes]
        self.items = [self.items[i] for i in kept]
        self.keys = [self.keys[i] for i in kept]
        self.size = len(json.dumps(self.items, default=str))
        # Every item stale: the view holds this change's effect or a newer one's, as when the
        # record is written alone (cdc_consumer.alone): a duplicate, not processed again.
        self.duplicate = self.duplicate or not self.items


def _keys(
    actions: list[Any], idempotency_table: str
) -> tuple[list[ItemIdentity | None], dict[ItemIdentity, Any]]:
    """The item of each action, and the mergeable actions by item; :class:`InvalidActionError`
    when two actions touch one item."""
    keys: list[ItemIdentity | None] = []
    mergeable: dict[ItemIdentity, Any] = {}
    for index, action in enumerate(actions):
        identity = _identity(action, index, idempotency_table)
        if identity is not None and identity in keys:
            raise InvalidActionError(
                f"action {index} touches an item an earlier action of the same record "
                f"already touches ({identity[0]} {identity[1]}); DynamoDB allows one "
                "action per item in a transaction: combine them into one"
            )
        keys.append(identity)
        if identity is not None and kind_of(action).merge is not None:
            mergeable[identity] = action
    return keys, mergeable


def action_list(actions: Any) -> list[Any]:
    """``actions`` as a list; :class:`InvalidActionError` when it is not a sequence of them."""
    if isinstance(actions, (str, bytes, Mapping)) or not isinstance(actions, Sequence):
        raise InvalidActionError(
            "a projection must return a list of TransactWriteItems actions, "
            f"got {type(actions).__name__}"
        )
    return list(actions)


def _identity(action: Any, index: int, idempotency_table: str) -> ItemIdentity | None:
    """(table, key) of the item an action touches; None for a Put on a table whose key
    schema we do not know (DynamoDB then reports a clash itself, see :func:`commit`)."""
    if not isinstance(action, Mapping) or len(action) != 1:
        raise InvalidActionError(
            f"action {index} must be a dict with exactly one of {sorted(ACTION_TYPES)}, "
            f"got {action!r:.200}"
        )
    ((kind, body),) = action.items()
    if kind not in ACTION_TYPES:
        raise InvalidActionError(
            f"action {index} is {kind!r}; a transaction action is one of {sorted(ACTION_TYPES)}"
        )
    item_field = ACTION_TYPES[kind]
    if (
        not isinstance(body, Mapping)
        or not isinstance(body.get("TableName"), str)
        or not isinstance(body.get(item_field), Mapping)
    ):
        raise InvalidActionError(
            f"action {index} ({kind}) needs TableName (str) and {item_field} (a map of "
            f"attribute values), got {body!r:.200}"
        )
    required = REQUIRED_EXPRESSIONS.get(kind)
    if required and not isinstance(body.get(required), str):
        raise InvalidActionError(f"action {index} ({kind}) needs {required} (str)")
    table = body["TableName"]
    if kind == "Put":
        known = item_key(action)  # a Put that says its key (sink protocol)
        if known is not None:
            key = dict(known)
        elif table != idempotency_table or ID_ATTRIBUTE not in body["Item"]:
            return None
        else:
            key = {ID_ATTRIBUTE: body["Item"][ID_ATTRIBUTE]}
    else:
        key = body["Key"]
    return table, json.dumps(key, sort_keys=True, default=str)
