"""Writes outside a transaction: the items of self-guarding records, each a conditional write.

A record whose every action guards itself and may be written alone
(:attr:`~cdc_consumer.sinks.protocol.ActionKind.writes_alone`: a version-guarded Put, say)
needs neither a processed-marker nor a transaction: its item carries its version, so a
redelivery fails the condition and is a no-op. Written as ``PutItem`` / ``DeleteItem`` /
``UpdateItem`` with the same condition, it costs 1 write unit per KB against 2 in a
transaction (the plan chooses: :mod:`cdc_consumer.plan`).

The records are written concurrently (:data:`~cdc_consumer.defaults.ALONE_WRITE_THREADS`
threads), in *lanes*: records sharing an item go to one lane and are written one after the
other in stream order, so one item's changes keep their order. A failure stops its lane; the
batch's answer is the first failing record in stream order, and no record after it counts
as applied (records of other lanes after it may have been written: their versions make the
redelivery a no-op). A failed condition means what the action's kind says: stale (a no-op, the
record a duplicate when none of its items was written), contended (transient) or refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from cdc_consumer.contention import Contention
from cdc_consumer.defaults import ALONE_WRITE_THREADS
from cdc_consumer.exceptions import CdcConsumerError, RejectedByDynamoDBError, TransientError
from cdc_consumer.record_writes import ItemIdentity, RecordWrites
from cdc_consumer.sinks.protocol import OnConditionFailed, kind_of

#: DynamoDB's error code for a failed condition on a single-item write.
CONDITION_FAILED_CODE = "ConditionalCheckFailedException"
#: DynamoDB's answer to a write on an item another transaction holds at that moment: nothing was
#: written; the same write succeeds once the transaction is done (cdc_consumer.contention).
TRANSACTION_CONFLICT_CODE = "TransactionConflictException"
#: The client method writing one action of each type alone.
CALLS = {"Put": "put_item", "Delete": "delete_item", "Update": "update_item"}

_pool: ThreadPoolExecutor | None = None


@dataclass
class AloneOutcome:
    """What :func:`write_alone` did, up to the first failing record (in stream order):
    records with an item written now, records whose every item was stale, and that first
    failing record with its error."""

    applied: list[RecordWrites] = field(default_factory=list)
    duplicates: list[RecordWrites] = field(default_factory=list)
    failed: RecordWrites | None = None
    error: CdcConsumerError | None = None


#: One record's result: written now (True), every item stale (False), or its error.
Result = tuple[RecordWrites, bool | CdcConsumerError]


def write_alone(
    client: Any,
    records: Sequence[RecordWrites],
    threads: int = ALONE_WRITE_THREADS,
    contention: Contention | None = None,
) -> AloneOutcome:
    """Write ``records`` (in stream order), each item alone, concurrently by lanes; a write
    DynamoDB refuses for a conflict with a transaction on its item is tried again after a
    backoff, within ``contention``'s budget."""
    lanes = _lanes(records)
    patience = contention or Contention()
    if len(lanes) == 1 or threads <= 1:
        results = [result for lane in lanes for result in _run_lane(client, lane, patience)]
    else:
        done = _executor(threads).map(
            _run_lane, [client] * len(lanes), lanes, [patience] * len(lanes)
        )
        results = [result for lane_results in done for result in lane_results]
    results.sort(key=_stream_order)
    outcome = AloneOutcome()
    for record, result in results:
        if isinstance(result, CdcConsumerError):
            outcome.failed, outcome.error = record, result
            break
        (outcome.applied if result else outcome.duplicates).append(record)
    return outcome


def _stream_order(result: Result) -> int:
    """Where a result's record stands in the batch."""
    return result[0].position


def _lanes(records: Sequence[RecordWrites]) -> list[list[RecordWrites]]:
    """The records in lanes: records sharing an item share a lane, in stream order."""
    lane_of: dict[ItemIdentity, int] = {}
    lanes: dict[int, list[RecordWrites]] = {}
    for record in records:
        joined = sorted({lane_of[key] for key in record.identities if key in lane_of})
        lane = joined[0] if joined else record.position  # a lane is named by its first record
        members = lanes.setdefault(lane, [])
        for other in joined[1:]:  # the record links two lanes: they become one
            for moved in lanes.pop(other):
                members.append(moved)
                lane_of.update(dict.fromkeys(moved.identities, lane))
            members.sort(key=attrgetter("position"))
        members.append(record)
        lane_of.update(dict.fromkeys(record.identities, lane))
    return list(lanes.values())


def _run_lane(client: Any, lane: list[RecordWrites], contention: Contention) -> list[Result]:
    """Write a lane's records one after the other; stop at the first failure."""
    results: list[Result] = []
    for record in lane:
        result = _write_record(client, record, contention)
        results.append((record, result))
        if isinstance(result, CdcConsumerError):
            break
    return results


def _write_record(
    client: Any, record: RecordWrites, contention: Contention
) -> bool | CdcConsumerError:
    """Write a record's items in order; its first error stops it (the items written before
    it guard themselves: the retry is a no-op there)."""
    written = False
    for action in record.items:
        result = _write_item(client, action, contention)
        if isinstance(result, CdcConsumerError):
            return result
        written = written or result
    return written


def _write_item(client: Any, action: Any, contention: Contention) -> bool | CdcConsumerError:
    """Write one action alone: True written, False stale, or the error."""
    ((kind, body),) = action.items()
    while True:
        try:
            getattr(client, CALLS[kind])(**body)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code")
            if code == TRANSACTION_CONFLICT_CODE and contention.back_off():
                continue  # nothing was written: the same write, once the transaction is done
            return _refused(action, kind, error)
        except ParamValidationError as error:
            return RejectedByDynamoDBError(f"botocore refused the record's {kind}: {error}")
        except BotoCoreError as error:
            return TransientError(f"{CALLS[kind]} failed: {error}")
        return True


def _refused(action: Any, kind: str, error: ClientError) -> bool | CdcConsumerError:
    code = error.response.get("Error", {}).get("Code")
    message = error.response.get("Error", {}).get("Message", "")
    if code == CONDITION_FAILED_CODE:
        meaning = kind_of(action).on_condition_failed
        if meaning is OnConditionFailed.STALE:
            return False
        if meaning is OnConditionFailed.CONTENDED:
            return TransientError(f"{code}: another writer replaced what the {kind} expected")
        return RejectedByDynamoDBError(f"DynamoDB refused the record's {kind}: {code}: {message}")
    if code == "ValidationException":
        return RejectedByDynamoDBError(f"DynamoDB rejected the record's {kind}: {message}")
    failure = TransientError(f"{CALLS[kind]} failed: {code}: {message}")
    failure.__cause__ = error  # so an AccessDenied is told apart (cdc_consumer.outcomes)
    return failure


def _executor(threads: int) -> ThreadPoolExecutor:
    """The process's pool (kept across invocations of a warm function)."""
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="cdc-write")
    return _pool
