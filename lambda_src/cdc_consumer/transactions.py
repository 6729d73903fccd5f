"""Group consecutive records' writes into DynamoDB transactions and commit them.

Each record contributes its *processed-marker* (a Put of ``{consumer}#{eventID}`` on the
idempotency table, conditioned on ``attribute_not_exists(id)``) followed by its projection's
actions. Marker and effects commit together or not at all, so an effect is applied exactly
once however often the record is delivered.

Consecutive records share one ``TransactWriteItems`` while it stays within DynamoDB's limits:
100 actions, 4 MB, and no item twice (a record touching an item already in the group starts
the next transaction). When DynamoDB cancels a transaction, its ``CancellationReasons`` (one
per action, in order) say which markers already existed (duplicates: dropped, the rest
retried) and which record failed first: the records before it are committed, the failing
record is returned with its error, and nothing after it is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from cdc_consumer.contention import Contention
from cdc_consumer.defaults import EXPIRATION_ATTRIBUTE, ID_ATTRIBUTE, STREAM_ATTRIBUTE
from cdc_consumer.exceptions import (
    CdcConsumerError,
    ForeignMarkerError,
    InvalidActionError,
    RejectedByDynamoDBError,
    TransientError,
)
from cdc_consumer.ledger import Lane, Listing
from cdc_consumer.service_limits import MAX_TRANSACTION_ACTIONS, MAX_TRANSACTION_BYTES
from cdc_consumer.sinks.protocol import OnConditionFailed, item_key, kind_of

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
CONDITION_FAILED = "ConditionalCheckFailed"
#: The cancellation reason of an item another transaction or write held at the same moment.
TRANSACTION_CONFLICT = "TransactionConflict"
#: Cancellation reasons no retry can fix; every other reason (TransactionConflict,
#: ThrottlingError, ProvisionedThroughputExceeded, ItemCollectionSizeLimitExceeded...) is
#: transient.
PERMANENT_REASONS = frozenset({CONDITION_FAILED, "ValidationError"})

ItemIdentity = tuple[str, str]
#: The actions a ledger lane adds to a transaction: its entry's Put and its head's Update.
LEDGER_ACTIONS = 2
#: The most bytes an entry and a head take in a transaction's request (an entry lists at most
#: 98 records, each in at most 19 bytes: a 129-digit difference).
MAX_ENTRY_BYTES = 4096
#: Where a request item comes from: (index of the record among those written, index of the
#: item in that record's items, its marker being 0).
Owner = tuple[int, int]


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


@dataclass
class TransactionGroup:
    """Consecutive records that will be committed in one transaction."""

    records: list[RecordWrites] = field(default_factory=list)
    actions: int = 0
    size: int = 0
    identities: set[ItemIdentity] = field(default_factory=set)
    #: Items so far touched only by mergeable actions, and their merge (hot aggregates).
    merged: dict[ItemIdentity, Any] = field(default_factory=dict)
    #: The ledger lanes of the listed records, with what they list: each adds its entry and its
    #: head, and an entry lists no more than :data:`~cdc_consumer.ledger.MAX_LISTING_BYTES` take.
    lanes: dict[Lane, Listing] = field(default_factory=dict)

    def fits(self, writes: RecordWrites) -> bool:
        """Whether ``writes`` can join without breaking a DynamoDB transaction limit. An item
        already in the group is allowed only where both sides are actions that merge; each
        ledger lane takes two actions (its entry and its head) and at most
        :data:`MAX_ENTRY_BYTES`, and its entry a bounded listing."""
        if not writes.items:  # a record without effect always fits
            return True
        shared = self._merges(writes)
        lanes = len(self.lanes.keys() | ({writes.listed[0]} if writes.listed else set()))
        listing = self.lanes.get(writes.listed[0]) if writes.listed else None
        return (
            shared is not None
            and (listing is None or writes.listed is None or listing.fits(writes.listed[1]))
            and self.actions + len(writes.items) - len(shared) + LEDGER_ACTIONS * lanes
            <= MAX_TRANSACTION_ACTIONS
            and self.size + writes.size + MAX_ENTRY_BYTES * lanes <= MAX_TRANSACTION_BYTES
        )

    def _merges(self, writes: RecordWrites) -> dict[ItemIdentity, Any] | None:
        """The merged actions of the items ``writes`` shares with the group; None when it
        shares an item that cannot be merged."""
        shared: dict[ItemIdentity, Any] = {}
        for identity in self.identities & writes.identities:
            earlier, later = self.merged.get(identity), writes.mergeable.get(identity)
            merged = _merge(earlier, later)
            if merged is None:
                return None
            shared[identity] = merged
        return shared

    def add(self, writes: RecordWrites) -> None:
        self.records.append(writes)
        if not writes.items:
            return
        shared = self._merges(writes) or {}
        self.actions += len(writes.items) - len(shared)
        self.size += writes.size
        for identity in writes.identities - self.identities:
            if identity in writes.mergeable:
                self.merged[identity] = writes.mergeable[identity]
        self.merged.update(shared)
        self.identities.update(writes.identities)
        if writes.listed is not None:
            self.lanes.setdefault(writes.listed[0], Listing()).add(writes.listed[1])

    def take(self) -> list[RecordWrites]:
        """The records, leaving the group empty."""
        records = self.records
        self.records, self.actions, self.size, self.identities = [], 0, 0, set()
        self.merged, self.lanes = {}, {}
        return records

    def __bool__(self) -> bool:
        return bool(self.records)


def _merge(earlier: Any, later: Any) -> Any:
    """``earlier`` then ``later`` (two actions of one item) as one action, or None."""
    if earlier is None or later is None:
        return None
    kind = kind_of(earlier)
    if kind.merge is None or kind_of(later) is not kind:
        return None
    return kind.merge(earlier, later)


def merged_request(records: Sequence[RecordWrites]) -> tuple[list[Any], list[list[Owner]]]:
    """The TransactItems of consecutive records, each mergeable action merged into the first
    action of the same item that it merges with, and, per request item, the (record, item)
    pairs it carries (the first is where it stands).

    Actions that do not merge with the one before them stand as they are (the transaction
    group cuts before such a record: see :class:`TransactionGroup`).
    """
    items: list[Any] = []
    owners: list[list[Owner]] = []
    merged_at: dict[ItemIdentity, int] = {}
    for r, record in enumerate(records):
        for i, item in enumerate(record.items):
            identity = record.keys[i]
            if identity is not None and kind_of(item).merge is not None:
                at = merged_at.get(identity)
                merged = _merge(items[at], item) if at is not None else None
                if at is not None and merged is not None:
                    items[at] = merged
                    owners[at].append((r, i))
                    continue
                merged_at[identity] = len(items)
            items.append(item)
            owners.append([(r, i)])
    return items, owners


class TransactionLedger(Protocol):
    """What :func:`commit` needs of the batch's ledger (:mod:`cdc_consumer.batch_ledger`)."""

    def actions(self, records: Sequence[RecordWrites]) -> list[dict[str, Any]]:
        """The entry and head actions that list ``records`` (each has ``listed``)."""
        ...

    def committed(self, records: Sequence[RecordWrites]) -> None:
        """The transaction carrying :meth:`actions` for ``records`` committed."""
        ...

    def refresh(self, records: Sequence[RecordWrites]) -> list[RecordWrites]:
        """Read every lane again (another writer committed in one): the listed records of
        ``records`` now found applied. Raises :class:`TransientError` on a failed read."""
        ...

    def listed_now(self, records: Sequence[RecordWrites]) -> list[RecordWrites]:
        """The records of ``records`` the lanes list, as last read (no request)."""
        ...


@dataclass
class CommitOutcome:
    """What :func:`commit` did: records applied now, records found already applied, and the
    first record that failed (with a :class:`PermanentError` or :class:`TransientError`),
    after which nothing was written."""

    committed: list[RecordWrites] = field(default_factory=list)
    duplicates: list[RecordWrites] = field(default_factory=list)
    failed: RecordWrites | None = None
    error: CdcConsumerError | None = None
    #: Ledger entries the committed transactions wrote (one per transaction and lane).
    entries: int = 0
    #: Transactions that met another writer in a ledger lane, or that DynamoDB cancelled for a
    #: conflict (:mod:`cdc_consumer.contention`); whether the batch stopped for contention.
    meetings: int = 0
    conflicts: int = 0
    contended: bool = False

    @property
    def markers(self) -> int:
        """Processed-markers the committed transactions wrote."""
        return sum(1 for record in self.committed if record.marker and record.items)

    @property
    def listed(self) -> int:
        """Records the committed ledger entries list."""
        return sum(1 for record in self.committed if record.listed is not None)


@dataclass
class _Attempt:
    """What one TransactWriteItems call said about the records it carried.

    ``duplicates``: records whose marker already existed. ``failed`` / ``error``: the first
    record DynamoDB named as failing (None: the call committed, or only duplicates failed).
    ``one_at_a_time``: DynamoDB (or botocore) refused the request without naming a record.
    """

    committed: bool = False
    duplicates: list[RecordWrites] = field(default_factory=list)
    failed: RecordWrites | None = None
    error: CdcConsumerError | None = None
    one_at_a_time: bool = False
    #: A ledger action's condition failed: another writer committed in the lane since it was
    #: read (the records are read again, not failed).
    meeting: bool = False
    #: DynamoDB cancelled the call for a ``TransactionConflict`` only (nothing was written).
    conflict: bool = False
    #: Ledger entries the call committed.
    entries: int = 0


def commit(
    client: Any,
    records: Sequence[RecordWrites],
    ledger: TransactionLedger | None = None,
    contention: Contention | None = None,
) -> CommitOutcome:
    """Commit ``records`` (in order) in as few TransactWriteItems calls as DynamoDB allows.

    Never writes anything of a record after the first failing one. Records without items
    count as committed once every record before them is. Before every call the records the
    ledger's lanes now list are dropped as duplicates (a record is new only under the version it
    was read at, and the call's head update requires the version last read). Each call either
    commits what it carries, or shrinks what is left: duplicates are dropped, a failing record
    and everything after it are cut off (the records before it are tried again, and an earlier
    failure found then replaces it), a refusal that names no record sends the records one at a
    time, and a meeting or a conflict reads the lanes again and tries again
    (:mod:`cdc_consumer.contention`).
    """
    outcome = CommitOutcome()
    contention = contention or Contention()
    todo = list(records)
    one_at_a_time = False
    while todo:
        known = ledger.listed_now(todo) if ledger is not None else []
        if known:  # another writer listed them since they were decided: duplicates
            outcome.duplicates += known
            todo = [record for record in todo if record not in known]
            continue
        chunk = todo[:1] if one_at_a_time else todo
        if not any(record.items for record in chunk):
            outcome.committed += chunk
            todo = todo[len(chunk) :]
            continue
        attempt = _attempt(client, chunk, ledger)
        if attempt.one_at_a_time:
            one_at_a_time = True
            continue
        if attempt.meeting or attempt.conflict:
            stop = _contended(attempt, chunk, ledger, contention, outcome)
            if stop is None:
                continue
            attempt = stop
        if attempt.committed:
            outcome.committed += chunk
            outcome.entries += attempt.entries
            todo = todo[len(chunk) :]
            continue
        if attempt.failed is None:  # only duplicates: commit the rest without them
            outcome.duplicates += attempt.duplicates
            todo = [record for record in todo if record not in attempt.duplicates]
            continue
        cut = attempt.failed.position
        outcome.duplicates += [d for d in attempt.duplicates if d.position < cut]
        outcome.failed, outcome.error = attempt.failed, attempt.error
        todo = [r for r in chunk if r.position < cut and r not in attempt.duplicates]
    known = [record for record in outcome.committed if record.duplicate]
    if known:  # found applied by the ledger's lookup: nothing was written for them
        outcome.committed = [r for r in outcome.committed if not r.duplicate]
        outcome.duplicates += known
    return outcome


def _contended(
    attempt: _Attempt,
    chunk: list[RecordWrites],
    ledger: TransactionLedger | None,
    contention: Contention,
    outcome: CommitOutcome,
) -> _Attempt | None:
    """After a meeting or a conflict: None to try again (the lanes read again first), or the
    attempt that stops the batch at ``chunk``'s first record (the budget is spent, or the read
    failed)."""
    outcome.meetings += attempt.meeting
    outcome.conflicts += attempt.conflict
    patient = contention.back_off() if attempt.conflict else contention.may_retry()
    if not patient:
        outcome.contended = True
        return _fail_first(chunk, TransientError(_contention_spent(outcome, contention)))
    if ledger is not None and any(record.listed is not None for record in chunk):
        try:
            ledger.refresh(chunk)
        except TransientError as error:
            return _fail_first(chunk, error)
    return None


def _contention_spent(outcome: CommitOutcome, contention: Contention) -> str:
    return (
        f"the transaction met other writers {outcome.meetings} time(s) in the ledger lane and "
        f"DynamoDB cancelled it {outcome.conflicts} time(s) for a TransactionConflict within "
        f"{contention.budget:g} s (or the invocation's deadline); the record is reported and "
        "retried"
    )


def _attempt(client: Any, chunk: list[RecordWrites], ledger: TransactionLedger | None) -> _Attempt:
    """One TransactWriteItems call carrying ``chunk``'s items (and, for its listed records,
    the ledger's entry and head), read into an :class:`_Attempt`."""
    writing = [record for record in chunk if record.items]
    # Consecutive records' mergeable actions of one item travel as one (hot aggregates): rebuilt
    # from the records still to write at every attempt, so a duplicate dropped after one
    # attempt neither drops nor doubles the others' contributions.
    request, owners = merged_request(writing)
    listed = [record for record in writing if record.listed is not None]
    ledger_actions = ledger.actions(listed) if ledger is not None and listed else []
    request = [*request, *ledger_actions]
    try:
        client.transact_write_items(TransactItems=request)
    except ClientError as error:
        if listed and _ledger_condition_failed(error, len(owners)):
            return _Attempt(meeting=True)
        if _conflict_only(error):
            return _Attempt(conflict=True)
        return _refused(chunk, writing, owners, error)
    except ParamValidationError as error:
        # botocore refused the request before sending it (e.g. a value in boto3's resource
        # shape instead of the client shape): as deterministic as a ValidationException,
        # and it does not say which record either.
        if len(writing) > 1:
            return _Attempt(one_at_a_time=True)
        return _fail_first(
            chunk, RejectedByDynamoDBError(f"botocore refused the record's actions: {error}")
        )
    except BotoCoreError as error:
        return _fail_first(chunk, TransientError(f"TransactWriteItems failed: {error}"))
    if ledger is not None and listed:
        ledger.committed(listed)
    return _Attempt(committed=True, entries=len(ledger_actions) // LEDGER_ACTIONS)


def _conflict_only(error: ClientError) -> bool:
    """Whether DynamoDB cancelled the call for ``TransactionConflict`` and for nothing a record
    decides (no failed condition, no validation error): nothing was written, and the same call
    can succeed once the other writer is done."""
    reasons = error.response.get("CancellationReasons")
    if error.response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return False
    codes = {_code(reason) for reason in reasons} if isinstance(reasons, list) else set()
    return TRANSACTION_CONFLICT in codes and not codes & PERMANENT_REASONS


def _ledger_condition_failed(error: ClientError, carried: int) -> bool:
    """Whether a cancellation's reasons past the ``carried`` records' items (the ledger's
    entry and head) name a failed condition."""
    reasons = error.response.get("CancellationReasons")
    if not isinstance(reasons, list):
        return False
    return any(_code(reason) == CONDITION_FAILED for reason in reasons[carried:])


def _refused(
    chunk: list[RecordWrites], writing: list[RecordWrites], owners: Any, error: ClientError
) -> _Attempt:
    code = error.response.get("Error", {}).get("Code")
    if code == "TransactionCanceledException":
        reasons = error.response.get("CancellationReasons")
        if isinstance(reasons, list) and len(reasons) > len(owners):
            reasons = reasons[: len(owners)]  # the rest are the ledger's (entry, head)
        attempt, stale = _read_reasons(writing, owners, reasons)
        for record, indexes in stale.items():
            record.drop_stale(indexes)  # no-ops now: the next attempt goes without them
        unattributed = attempt.failed is None and not attempt.duplicates and not stale
        if unattributed and not attempt.one_at_a_time:
            return _fail_first(chunk, TransientError(_unattributed(error)))
        return attempt
    if code == "ValidationException" and len(writing) > 1:
        # DynamoDB does not say which record it rejects (for instance two Puts on one item of
        # a table whose key we cannot see): commit them one at a time.
        return _Attempt(one_at_a_time=True)
    if code == "ValidationException":
        return _fail_first(
            chunk,
            RejectedByDynamoDBError(
                f"DynamoDB rejected the record's transaction: {_message(error)}"
            ),
        )
    failure = TransientError(f"TransactWriteItems failed: {code}: {_message(error)}")
    failure.__cause__ = error  # so an AccessDenied is told apart (cdc_consumer.outcomes)
    return _fail_first(chunk, failure)


def _fail_first(chunk: list[RecordWrites], error: CdcConsumerError) -> _Attempt:
    """The first record with items fails as a whole (those before it had nothing to write)."""
    return _Attempt(failed=next(record for record in chunk if record.items), error=error)


def _read_reasons(
    writing: list[RecordWrites], owners: list[list[Owner]], reasons: Any
) -> tuple[_Attempt, dict[RecordWrites, set[int]]]:
    """What a cancellation's reasons (one per request item; ``owners``: the records' items
    each carries, see :func:`merged_request`) say: the duplicates and the first failing record
    with its error, and the stale items by record. A failed condition means what the action's
    kind says (:class:`~cdc_consumer.sinks.protocol.OnConditionFailed`): on a version-guarded
    action it is not a failure: the change is older than or equal to what the view holds, so
    that action is a no-op (docs/design.md §9).

    A merged aggregate carries several records' updates, and DynamoDB's reason names the
    action, not the record. A transient reason (a conflict, a throttle) is the first record's:
    the batch stops there and nothing later is written. A permanent one (a ValidationError)
    was caused by one record's update, which cannot be told from the merge: the attempt asks
    for the records one at a time, unmerged, so the culprit alone is refused (and
    quarantined), never a good record merged with it."""
    stale: dict[RecordWrites, set[int]] = {}
    if not isinstance(reasons, list) or len(reasons) != len(owners):
        return _Attempt(), stale
    duplicates: list[RecordWrites] = []
    for reason, carried in zip(reasons, owners, strict=True):
        code = _code(reason)
        if code in (None, "None"):
            continue
        r, index = carried[0]
        record = writing[r]
        if record in duplicates:
            continue
        is_marker = index == 0 and record.marker
        if is_marker and code == CONDITION_FAILED:
            existing = reason.get("Item") if isinstance(reason, Mapping) else None
            other = foreign_stream(record.items[0]["Put"]["Item"], existing)
            if other is None:
                duplicates.append(record)
                continue
            foreign = ForeignMarkerError(_foreign(record, other))
            return _Attempt(duplicates=duplicates, failed=record, error=foreign), stale
        meaning = kind_of(record.items[index]).on_condition_failed
        if code == CONDITION_FAILED and not is_marker and meaning is OnConditionFailed.STALE:
            stale.setdefault(record, set()).add(index)
            continue
        if code == CONDITION_FAILED and not is_marker and meaning is OnConditionFailed.CONTENDED:
            # Another writer replaced the version this record read (a backfill's row and a
            # stream change of one item at once): retried, it reads the new version.
            detail = "another writer replaced the contribution it read; it is retried"
            contended = TransientError(f"{CONDITION_FAILED}: {detail}")
            return _Attempt(duplicates=duplicates, failed=record, error=contended), stale
        if code in PERMANENT_REASONS and len(carried) > 1:
            return _Attempt(one_at_a_time=True), stale
        message = _cancelled_at(record, index, is_marker, len(carried), code, reason)
        error: CdcConsumerError = (
            RejectedByDynamoDBError(message)
            if code in PERMANENT_REASONS
            else TransientError(message)
        )
        return _Attempt(duplicates=duplicates, failed=record, error=error), stale
    return _Attempt(duplicates=duplicates), stale


def _cancelled_at(
    record: RecordWrites, index: int, is_marker: bool, carried: int, code: str, reason: Any
) -> str:
    action = index - 1 if record.marker else index
    what = "its processed-marker" if is_marker else f"its action {action}"
    if carried > 1:
        what += f" (merged with {carried - 1} later record(s)' updates of that item)"
    detail = f"{code}: {reason.get('Message', '')}".rstrip(": ")
    return f"DynamoDB cancelled the transaction at {what}: {detail}"


def _foreign(record: RecordWrites, other: str) -> str:
    marker_id = record.items[0]["Put"]["Item"][ID_ATTRIBUTE]["S"]
    return (
        f"processed-marker {marker_id} exists but was written for another stream ({other}): "
        "two consumers write markers under one name into this idempotency table, so this is "
        "not a duplicate; the record is not skipped. Give the consumers different names"
    )


def _code(reason: Any) -> str | None:
    return reason.get("Code") if isinstance(reason, Mapping) else None


def _message(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Message", error))


def _unattributed(error: ClientError) -> str:
    return (
        f"DynamoDB cancelled the transaction without reasons that name a record: {_message(error)}"
    )
