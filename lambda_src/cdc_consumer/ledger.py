"""The ledger: one entry per committed transaction, listing the records it applied.

Invariant: a record counts as applied if and only if a committed ledger entry lists it (or,
during an upgrade, an old per-record marker covers it: :mod:`cdc_consumer.legacy_markers`).
An entry is written *inside* the transaction whose effects it lists, so it commits or vanishes
with them. It replaces the per-record marker (2 write units per record in a transaction) by
about 4 units per transaction (the entry and the lane's head, each at most 1 KB).

Layout, on the ledger table (partition key ``id`` S, sort key ``seq`` S, TTL ``expiration``):

- a **lane** is one consumer's view of one stream: partition ``{consumer}#{stream ARN}``.
  A DynamoDB stream record names its stream but not its shard; its sequence number is unique
  within the stream, so the stream is the lane (see docs/design.md for the price);
- an **entry** is the item ``(lane, sort_key(first))``: ``first`` the lowest sequence number
  it lists, ``last`` the highest, ``records`` the listed numbers as varint deltas
  (:func:`pack`), ``expiration`` the marker lifetime. Only listed numbers count: the numbers
  between ``first`` and ``last`` that it does not list (filtered out, discarded by the event
  source mapping, quarantined, in another lane's transaction) prove nothing;
- the lane's **head** ``(lane, "~head")``: a version, bumped by every transaction that writes
  an entry of the lane, under the condition that it still holds the version read before the
  lookup; and ``span``, the widest ``last - first`` of any entry of the lane.

Lookup, one per batch and lane (:meth:`LedgerStore.read`): a consistent GetItem of the head,
then one Query of the entries whose sort key lies between ``lowest - span`` and ``highest``:
every entry listing a number of the batch starts in that window, since no entry is wider
than ``span``. Two writers of overlapping records, however they cut them into transactions,
both update the head under the version they read: the second one's transaction is cancelled,
and it reads again (the head read happens before the Query, and a GetItem is serializable with
transactions, so an entry committed before the version read is in the Query's answer).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.defaults import EXPIRATION_ATTRIBUTE, ID_ATTRIBUTE, STREAM_ATTRIBUTE
from cdc_consumer.exceptions import TransientError

#: The sort key attribute of the ledger table.
SORT_ATTRIBUTE = "seq"
#: The head's sort key: after every entry's (they start with a digit: :func:`sort_key`).
HEAD_SORT_KEY = "~head"
VERSION_ATTRIBUTE = "version"
SPAN_ATTRIBUTE = "span"
LAST_ATTRIBUTE = "last"
RECORDS_ATTRIBUTE = "records"
COUNT_ATTRIBUTE = "count"
#: :meth:`LedgerStore.read`'s ``head`` when the caller has not read it.
UNREAD: Any = object()
#: How many digits the length prefix of a sort key has: Kinesis sequence numbers have up to
#: 129 digits, DynamoDB Streams' up to 40.
LENGTH_DIGITS = 3


def sort_key(number: int) -> str:
    """``number`` as a string that sorts as the number does: its digit count (3 digits), then
    its digits. Shorter than zero-padding to the longest sequence number, and exact for any
    length a stream uses."""
    if number < 0:
        raise ValueError(f"a sequence number is a whole number >= 0, got {number}")
    digits = str(number)
    return f"{len(digits):0{LENGTH_DIGITS}d}{digits}"


def pack(numbers: Iterable[int]) -> bytes:
    """Sorted distinct ``numbers`` as unsigned LEB128 varints: the first, then each difference
    to the previous one. Sequence numbers are sparse but close within a batch, so a difference
    takes 1 to 8 bytes where the decimal number takes 21 to 40."""
    out = bytearray()
    previous = 0
    for number in sorted(set(numbers)):
        value, previous = number - previous, number
        while True:
            byte, value = value & 0x7F, value >> 7
            out.append(byte | (0x80 if value else 0))
            if not value:
                break
    return bytes(out)


def unpack(blob: bytes) -> list[int]:
    """The numbers :func:`pack` packed, ascending."""
    numbers: list[int] = []
    value = shift = previous = 0
    for byte in blob:
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            previous += value
            numbers.append(previous)
            value = shift = 0
    return numbers


def lane_key(consumer: str, stream: str | None) -> str:
    """The partition of ``consumer``'s entries for records of ``stream`` (a record's
    ``eventSourceARN``; ``-`` when a record does not say)."""
    return f"{consumer}#{stream or '-'}"


@dataclass
class LaneState:
    """What a lookup found for one lane: the head's version (None: no head yet) and span, and
    the listed numbers among those looked up. Kept up to date by the writer's own commits
    (:meth:`LedgerStore.committed`), so a batch cut into several transactions reads once."""

    lane: str
    stream: str | None
    version: int | None = None
    span: int = 0
    applied: set[int] = field(default_factory=set)

    def is_applied(self, number: int) -> bool:
        return number in self.applied


@dataclass(frozen=True)
class LedgerStore:
    """Reads and writes one consumer's entries on ``table`` with ``client`` (boto3 DynamoDB).

    ``ttl_seconds``: how long an entry is kept, the consumer's marker lifetime (the replay
    windows rule, docs/design.md §5); ``clock``: epoch seconds.
    """

    client: Any
    table: str
    consumer: str
    ttl_seconds: int
    clock: Any

    def head_key(self, stream: str | None) -> dict[str, Any]:
        """The key of the lane's head (to read it with other items: :meth:`read`'s ``head``)."""
        return self._key(lane_key(self.consumer, stream), HEAD_SORT_KEY)

    def read(self, stream: str | None, numbers: Collection[int], head: Any = UNREAD) -> LaneState:
        """The lane state around ``numbers``: one consistent GetItem of the head (unless
        ``head`` is the head item, or None, read consistently by the caller before), then one
        Query (paged only past 1 MB). Raises :class:`TransientError` when DynamoDB does not
        answer."""
        state = LaneState(lane_key(self.consumer, stream), stream)
        try:
            if head is UNREAD:
                head = self.client.get_item(
                    TableName=self.table, Key=self.head_key(stream), ConsistentRead=True
                ).get("Item")
            if head is not None:
                state.version = int(head[VERSION_ATTRIBUTE]["N"])
                state.span = int(head.get(SPAN_ATTRIBUTE, {"N": "0"})["N"])
            if head is not None and numbers:
                wanted = set(numbers)
                for entry in self._entries(state.lane, min(wanted) - state.span, max(wanted)):
                    state.applied.update(wanted.intersection(entry))
        except (ClientError, BotoCoreError) as error:
            raise TransientError(f"reading the ledger of {state.lane} failed: {error}") from error
        return state

    def _entries(self, lane: str, low: int, high: int) -> Iterable[list[int]]:
        """The listed numbers of each entry whose first number is in ``[low, high]``."""
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "#id = :lane AND #seq BETWEEN :low AND :high",
            "ExpressionAttributeNames": {"#id": ID_ATTRIBUTE, "#seq": SORT_ATTRIBUTE},
            "ExpressionAttributeValues": {
                ":lane": {"S": lane},
                ":low": {"S": sort_key(max(0, low))},
                ":high": {"S": sort_key(high)},
            },
            "ConsistentRead": True,
        }
        while True:
            page = self.client.query(**request)
            for item in page.get("Items", []):
                yield unpack(item[RECORDS_ATTRIBUTE]["B"])
            if "LastEvaluatedKey" not in page:
                return
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def actions(self, state: LaneState, numbers: Collection[int]) -> list[dict[str, Any]]:
        """The two transaction actions that record ``numbers`` (not yet applied, none listed
        in ``state``) as applied by this transaction: the entry's Put and the head's Update
        under the version ``state`` read."""
        if not numbers:
            return []
        first, last = min(numbers), max(numbers)
        expiration = int(self.clock()) + self.ttl_seconds
        entry: dict[str, Any] = {
            **self._key(state.lane, sort_key(first)),
            LAST_ATTRIBUTE: {"N": str(last)},
            RECORDS_ATTRIBUTE: {"B": pack(numbers)},
            COUNT_ATTRIBUTE: {"N": str(len(set(numbers)))},
            EXPIRATION_ATTRIBUTE: {"N": str(expiration)},
        }
        if state.stream:
            entry[STREAM_ATTRIBUTE] = {"S": state.stream}
        return [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": entry,
                    "ConditionExpression": "attribute_not_exists(#id)",
                    "ExpressionAttributeNames": {"#id": ID_ATTRIBUTE},
                }
            },
            self._head_update(state, max(state.span, last - first), expiration),
        ]

    def _head_update(self, state: LaneState, span: int, expiration: int) -> dict[str, Any]:
        names = {"#v": VERSION_ATTRIBUTE, "#span": SPAN_ATTRIBUTE, "#exp": EXPIRATION_ATTRIBUTE}
        values = {
            ":next": {"N": str((state.version or 0) + 1)},
            ":span": {"N": str(span)},
            ":exp": {"N": str(expiration)},
        }
        if state.version is None:
            condition = "attribute_not_exists(#v)"
        else:
            condition = "#v = :read"
            values[":read"] = {"N": str(state.version)}
        return {
            "Update": {
                "TableName": self.table,
                "Key": self._key(state.lane, HEAD_SORT_KEY),
                "UpdateExpression": "SET #v = :next, #span = :span, #exp = :exp",
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
        }

    @staticmethod
    def committed(state: LaneState, numbers: Collection[int]) -> None:
        """The transaction carrying :meth:`actions` for ``numbers`` committed: ``state`` now
        holds what the ledger holds (the next transaction of the batch needs no new read)."""
        if not numbers:
            return
        state.version = (state.version or 0) + 1
        state.span = max(state.span, max(numbers) - min(numbers))
        state.applied.update(numbers)

    def _key(self, lane: str, sort: str) -> dict[str, Any]:
        return {ID_ATTRIBUTE: {"S": lane}, SORT_ATTRIBUTE: {"S": sort}}


def is_head_action(action: Mapping[str, Any]) -> bool:
    """Whether ``action`` is a lane head's Update (:meth:`LedgerStore.actions`): when its
    condition fails, another writer committed in the lane since the lookup, so the records are
    read again (not a failure of any record)."""
    update = action.get("Update") if isinstance(action, Mapping) else None
    key = update.get("Key") if isinstance(update, Mapping) else None
    return isinstance(key, Mapping) and key.get(SORT_ATTRIBUTE) == {"S": HEAD_SORT_KEY}
