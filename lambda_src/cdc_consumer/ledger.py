"""The ledger: one entry per committed transaction, listing the records it applied.

Invariant: a record counts as applied if and only if a committed ledger entry lists it (or a
per-record marker covers it: :mod:`cdc_consumer.legacy_markers`). An entry is written *inside*
the transaction whose effects it lists, so it commits or vanishes with them. It replaces the
per-record marker (2 write units per record in a transaction) by about 4 units per transaction
(the entry and the lane's head, each at most 1 KB).

Layout, on the ledger table (partition key ``id`` S, sort key ``seq`` S, TTL ``expiration``):

- a **lane** is one consumer's view of one shard of one stream: partition
  ``{consumer}#{stream ARN}#{shard id}``. Only deliveries of one shard can carry the same record,
  so two shards never meet in a lane (a lane per stream made every shard bump one item). A
  DynamoDB stream record does not name its shard; the event does when the mapping has a tumbling
  window (:data:`~cdc_consumer.windows.SHARD_ID_KEY`), and so do a failed batch's record and a
  quarantine message, which the redrive replays with it. Records that reach the runtime without a
  shard are never listed: they keep per-record markers (:mod:`cdc_consumer.batch_ledger`);
- an **entry** is the item ``(lane, sort_key(last))``: ``last`` the highest sequence number it
  lists, ``first`` the lowest, ``records`` the listed numbers as varint deltas (:func:`pack`, at
  most :data:`MAX_LISTING_BYTES`), ``expiration`` the marker lifetime. Only listed numbers count:
  the numbers between ``first`` and ``last`` that it does not list (filtered out, discarded by the
  event source mapping, quarantined) prove nothing;
- the lane's **head** ``(lane, "~head")``: a version, bumped by every transaction that writes an
  entry of the lane, under the condition that it still holds the version read before the lookup;
  and an ``expiration`` never lower than any entry's (each writer sets the larger of the one it
  read and its entry's, under that same condition), so the head outlives every entry of its lane
  whatever the writers' clocks.

Lookup, one per batch and lane (:meth:`LedgerStore.read`): a consistent GetItem of the head, then
one Query of the entries whose ``last`` is at or above the batch's lowest number. Every entry that
lists a number of the batch is among them (its ``last`` is at least that number), and nothing
written before the batch is: the lookup's cost does not grow with what the lane holds below it.
(What it holds above it is what a redrive of old records reads: at most one shard's life, about
four hours of entries.) Two writers of overlapping records, however they cut them into
transactions, both update the head under the version they read: the second one's transaction is
cancelled, and it reads again (the head read happens before the Query, and a GetItem is
serializable with transactions, so an entry committed before the version read is in the Query's
answer). What the batch does after such a meeting is :mod:`cdc_consumer.transactions`'s.
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
#: On the head: until when the lane's registration lasts (:mod:`cdc_consumer.lane_registry`), and
#: the creation times (epoch seconds) of the oldest and newest record the lane lists.
REGISTERED_ATTRIBUTE = "registered"
OLDEST_ATTRIBUTE = "oldest"
NEWEST_ATTRIBUTE = "newest"
FIRST_ATTRIBUTE = "first"
RECORDS_ATTRIBUTE = "records"
COUNT_ATTRIBUTE = "count"
SHARD_ATTRIBUTE = "shard"
#: :meth:`LedgerStore.read`'s ``head`` when the caller has not read it.
UNREAD: Any = object()
#: How many digits the length prefix of a sort key has: a route's sequence numbers have up to
#: 129 digits (DynamoDB Streams' up to 40).
LENGTH_DIGITS = 3
#: The most bytes an entry's packed listing takes: with its key, ``first``, the stream ARN and
#: the other attributes the entry stays under 1 KB, one write unit's size (2 units in a
#: transaction). A transaction lists no more records than fit (:class:`Listing`): a merged
#: hot-aggregate transaction would otherwise list thousands in one entry.
MAX_LISTING_BYTES = 600


def sort_key(number: int) -> str:
    """``number`` as a string that sorts as the number does: its digit count (3 digits), then
    its digits. Shorter than zero-padding to the longest sequence number, and exact for any
    length a stream uses."""
    if number < 0:
        raise ValueError(f"a sequence number is a whole number >= 0, got {number}")
    digits = str(number)
    return f"{len(digits):0{LENGTH_DIGITS}d}{digits}"


def varint_bytes(value: int) -> int:
    """How many bytes :func:`pack` takes for one difference ``value`` (>= 0)."""
    return max(1, (value.bit_length() + 6) // 7)


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


@dataclass
class Listing:
    """The packed size of the numbers a transaction group lists in one lane, kept as records
    join (:meth:`fits` before :meth:`add`), so an entry stays within :data:`MAX_LISTING_BYTES`."""

    highest: int | None = None
    size: int = 0

    def size_with(self, number: int) -> int:
        """The packed size once ``number`` joins: exact for a number above the highest (records
        join in stream order); otherwise an upper bound (the difference it splits becomes two,
        each at most the highest number)."""
        if self.highest is None:
            return varint_bytes(number)
        if number > self.highest:
            return self.size + varint_bytes(number - self.highest)
        return self.size + varint_bytes(self.highest)

    def fits(self, number: int) -> bool:
        return self.highest is None or self.size_with(number) <= MAX_LISTING_BYTES

    def add(self, number: int) -> None:
        self.size = self.size_with(number)
        self.highest = number if self.highest is None else max(self.highest, number)


Lane = tuple[str | None, str]
"""A lane of one consumer: (stream ARN, shard id)."""


def lane_key(consumer: str, stream: str | None, shard: str) -> str:
    """The partition of ``consumer``'s entries for records of ``shard`` of ``stream`` (a record's
    ``eventSourceARN``; ``-`` when a record does not say)."""
    return f"{consumer}#{stream or '-'}#{shard}"


@dataclass
class LaneState:
    """What a lookup found for one lane: the head's version (None: no head yet) and expiration,
    and the listed numbers among those looked up. Kept up to date by the writer's own commits
    (:meth:`LedgerStore.committed`), so a batch cut into several transactions reads once; read
    again after a meeting (:meth:`LedgerStore.read`)."""

    lane: str
    stream: str | None
    shard: str
    version: int | None = None
    expiration: int = 0
    registered: int = 0
    #: Creation times (epoch seconds) of the oldest and newest record the lane lists.
    oldest: int | None = None
    newest: int | None = None
    applied: set[int] = field(default_factory=set)

    def read_head(self, head: Mapping[str, Any]) -> None:
        """Take what the head item says."""
        self.version = int(head[VERSION_ATTRIBUTE]["N"])
        self.expiration = _number(head, EXPIRATION_ATTRIBUTE) or 0
        self.registered = _number(head, REGISTERED_ATTRIBUTE) or 0
        self.oldest = _number(head, OLDEST_ATTRIBUTE)
        self.newest = _number(head, NEWEST_ATTRIBUTE)

    def spans(self, oldest: int, newest: int) -> bool:
        """Whether records created between ``oldest`` and ``newest`` may be listed here."""
        if self.oldest is None or self.newest is None:
            return self.version is not None
        return self.oldest <= newest and oldest <= self.newest

    def widened(self, created: tuple[int, int] | None) -> tuple[int | None, int | None]:
        """The lane's (oldest, newest) once records created in ``created`` are listed."""
        if created is None:
            return self.oldest, self.newest
        low, high = created
        return (
            low if self.oldest is None else min(self.oldest, low),
            high if self.newest is None else max(self.newest, high),
        )

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

    def head_key(self, lane: Lane) -> dict[str, Any]:
        """The key of the lane's head (to read it with other items: :meth:`read`'s ``head``)."""
        return self._key(lane_key(self.consumer, *lane), HEAD_SORT_KEY)

    def read(self, lane: Lane, numbers: Collection[int], head: Any = UNREAD) -> LaneState:
        """The lane state around ``numbers``: one consistent GetItem of the head (unless
        ``head`` is the head item, or None, read consistently by the caller before), then one
        Query (paged only past 1 MB). Raises :class:`TransientError` when DynamoDB does not
        answer."""
        state = LaneState(lane_key(self.consumer, *lane), *lane)
        try:
            if head is UNREAD:
                head = self.client.get_item(
                    TableName=self.table, Key=self.head_key(lane), ConsistentRead=True
                ).get("Item")
            if head is not None:
                state.read_head(head)
            if head is not None and numbers:
                wanted = set(numbers)
                for entry in self._entries(state.lane, min(wanted)):
                    state.applied.update(wanted.intersection(entry))
        except (ClientError, BotoCoreError) as error:
            raise TransientError(f"reading the ledger of {state.lane} failed: {error}") from error
        return state

    def _entries(self, lane: str, lowest: int) -> Iterable[list[int]]:
        """The listed numbers of each entry whose last number is at or above ``lowest``."""
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "#id = :lane AND #seq BETWEEN :low AND :high",
            "ExpressionAttributeNames": {"#id": ID_ATTRIBUTE, "#seq": SORT_ATTRIBUTE},
            "ExpressionAttributeValues": {
                ":lane": {"S": lane},
                ":low": {"S": sort_key(lowest)},
                # Below the head's key: every entry's key starts with a digit.
                ":high": {"S": HEAD_SORT_KEY[0]},
            },
            "ProjectionExpression": "#records",
            "ConsistentRead": True,
        }
        request["ExpressionAttributeNames"]["#records"] = RECORDS_ATTRIBUTE
        while True:
            page = self.client.query(**request)
            for item in page.get("Items", []):
                yield unpack(item[RECORDS_ATTRIBUTE]["B"])
            if "LastEvaluatedKey" not in page:
                return
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def actions(
        self,
        state: LaneState,
        numbers: Collection[int],
        created: tuple[int, int] | None = None,
    ) -> list[dict[str, Any]]:
        """The two transaction actions that record ``numbers`` (not yet applied, none listed
        in ``state``) as applied by this transaction: the entry's Put and the head's Update
        under the version ``state`` read (``created``: the records' oldest and newest creation
        times, which widen the head's)."""
        if not numbers:
            return []
        first, last = min(numbers), max(numbers)
        expiration = int(self.clock()) + self.ttl_seconds
        entry: dict[str, Any] = {
            **self._key(state.lane, sort_key(last)),
            FIRST_ATTRIBUTE: {"N": str(first)},
            RECORDS_ATTRIBUTE: {"B": pack(numbers)},
            COUNT_ATTRIBUTE: {"N": str(len(set(numbers)))},
            EXPIRATION_ATTRIBUTE: {"N": str(expiration)},
            SHARD_ATTRIBUTE: {"S": state.shard},
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
            self._head_update(state, max(state.expiration, expiration), created),
        ]

    def _head_update(
        self, state: LaneState, expiration: int, created: tuple[int, int] | None
    ) -> dict[str, Any]:
        names = {
            "#v": VERSION_ATTRIBUTE,
            "#exp": EXPIRATION_ATTRIBUTE,
            "#reg": REGISTERED_ATTRIBUTE,
        }
        values = {
            ":next": {"N": str((state.version or 0) + 1)},
            ":exp": {"N": str(expiration)},
            ":reg": {"N": str(state.registered)},
        }
        update = "SET #v = :next, #exp = :exp, #reg = :reg"
        oldest, newest = state.widened(created)
        if oldest is not None and newest is not None:
            names.update({"#old": OLDEST_ATTRIBUTE, "#new": NEWEST_ATTRIBUTE})
            values.update({":old": {"N": str(oldest)}, ":new": {"N": str(newest)}})
            update += ", #old = :old, #new = :new"
        if state.version is None:
            condition = "attribute_not_exists(#v)"
        else:
            condition = "#v = :read"
            values[":read"] = {"N": str(state.version)}
        return {
            "Update": {
                "TableName": self.table,
                "Key": self._key(state.lane, HEAD_SORT_KEY),
                "UpdateExpression": update,
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
        }

    def committed(
        self,
        state: LaneState,
        numbers: Collection[int],
        created: tuple[int, int] | None = None,
    ) -> None:
        """The transaction carrying :meth:`actions` for ``numbers`` committed: ``state`` now
        holds what the ledger holds (the next transaction of the batch needs no new read)."""
        if not numbers:
            return
        state.oldest, state.newest = state.widened(created)
        state.version = (state.version or 0) + 1
        state.expiration = max(state.expiration, int(self.clock()) + self.ttl_seconds)
        state.applied.update(numbers)

    def _key(self, lane: str, sort: str) -> dict[str, Any]:
        return {ID_ATTRIBUTE: {"S": lane}, SORT_ATTRIBUTE: {"S": sort}}


def _number(item: Mapping[str, Any], name: str) -> int | None:
    value = item.get(name)
    return int(value["N"]) if isinstance(value, Mapping) and "N" in value else None
