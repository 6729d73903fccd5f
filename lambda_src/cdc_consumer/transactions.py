"""Commit a plan's transaction group: as few ``TransactWriteItems`` calls as DynamoDB allows,
with the ledger's meeting rule (docs/design.md §12).

The records come grouped by the plan (:mod:`cdc_consumer.plan`), each with its marker or its
ledger listing (:mod:`cdc_consumer.record_writes`). Before every call, the records the batch's
ledger (:class:`~cdc_consumer.batch_ledger.BatchLedger`) now lists are dropped as duplicates;
each call carries the entry and head of its listed records' lanes. When DynamoDB cancels a
transaction, its ``CancellationReasons`` (one per action, in order) say which markers already
existed (duplicates: dropped, the rest retried), whether the ledger's entry or head met another
writer (every lane read again, then retried) and which record failed first: the records before
it are committed, the failing record is returned with its error, and nothing after it is
written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from cdc_consumer.batch_ledger import BatchLedger
from cdc_consumer.contention import Contention
from cdc_consumer.defaults import ID_ATTRIBUTE
from cdc_consumer.exceptions import (
    CdcConsumerError,
    ForeignMarkerError,
    RejectedByDynamoDBError,
    TransientError,
)
from cdc_consumer.plan import LEDGER_ACTIONS, merge
from cdc_consumer.record_writes import ItemIdentity, RecordWrites, foreign_stream
from cdc_consumer.sinks.protocol import OnConditionFailed, kind_of

CONDITION_FAILED = "ConditionalCheckFailed"
#: The cancellation reason of an item another transaction or write held at the same moment.
TRANSACTION_CONFLICT = "TransactionConflict"
#: Cancellation reasons no retry can fix; every other reason (TransactionConflict,
#: ThrottlingError, ProvisionedThroughputExceeded, ItemCollectionSizeLimitExceeded...) is
#: transient.
PERMANENT_REASONS = frozenset({CONDITION_FAILED, "ValidationError"})
#: Where a request item comes from: (index of the record among those written, index of the
#: item in that record's items, its marker being 0).
Owner = tuple[int, int]


def merged_request(records: Sequence[RecordWrites]) -> tuple[list[Any], list[list[Owner]]]:
    """The TransactItems of consecutive records, each mergeable action merged into the first
    action of the same item that it merges with, and, per request item, the (record, item)
    pairs it carries (the first is where it stands).

    Actions that do not merge with the one before them stand as they are (the transaction
    group cuts before such a record: see :class:`~cdc_consumer.plan.TransactionGroup`).
    """
    items: list[Any] = []
    owners: list[list[Owner]] = []
    merged_at: dict[ItemIdentity, int] = {}
    for r, record in enumerate(records):
        for i, item in enumerate(record.items):
            identity = record.keys[i]
            if identity is not None and kind_of(item).merge is not None:
                at = merged_at.get(identity)
                merged = merge(items[at], item) if at is not None else None
                if at is not None and merged is not None:
                    items[at] = merged
                    owners[at].append((r, i))
                    continue
                merged_at[identity] = len(items)
            items.append(item)
            owners.append([(r, i)])
    return items, owners


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
    ledger: BatchLedger | None = None,
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
    ledger: BatchLedger | None,
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


def _attempt(client: Any, chunk: list[RecordWrites], ledger: BatchLedger | None) -> _Attempt:
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
