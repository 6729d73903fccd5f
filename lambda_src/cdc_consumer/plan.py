"""The write plan of a batch: which records go into transactions and which are written alone.

The batch's pipeline is decide (:mod:`cdc_consumer.decision`: a record's actions) -> plan
(this module: where each record's writes go) -> write (:mod:`cdc_consumer.modes`: the
transactions, :mod:`cdc_consumer.transactions`, and the writes alone,
:mod:`cdc_consumer.alone`). A record joins the plan until it no longer fits; the plan is then
written and a new one starts.

**The rule** (docs/design.md, "The write plan"): a record is written alone when every action
of it may be (:attr:`~cdc_consumer.sinks.protocol.ActionKind.writes_alone`) and that costs
less than its place in a transaction by the cost model the bench prices with
(bench/cost.py), compared in this order: write units, then requests, then Lambda time. An item
in a transaction costs 2 write units per KB, a conditional ``PutItem`` 1, so a self-guarding
record is always cheaper alone (half the write units), though it makes one request per item
where a transaction carries up to 100 items; every other record goes into a transaction (its
marker, a merge, a swap or a plain action need one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from cdc_consumer.defaults import ALONE_PENDING_RECORDS, ALONE_WRITE_THREADS
from cdc_consumer.service_limits import MAX_TRANSACTION_ACTIONS
from cdc_consumer.transactions import ItemIdentity, RecordWrites, TransactionGroup

#: Write units per KB of an item: a standard write, and an item in TransactWriteItems (AWS,
#: "Amazon DynamoDB Transactions: How it works"; bench/cost.py prices the same).
STANDARD_WRITE_UNITS = 1
TRANSACTIONAL_WRITE_UNITS = 2
#: Modelled latency of one request, ms: the published p50s bench/cost.py prices Lambda time
#: with (PutItem; TransactWriteItems of 25 items).
WRITE_MS = 7.55
TRANSACTION_MS = 32.1


@dataclass(frozen=True, order=True)
class Cost:
    """What a record's writes cost, compared field by field (write units first)."""

    write_units: float
    requests: float
    time_ms: float


def _kilobytes(writes: RecordWrites) -> int:
    """Write units per item a record's items take at 1 per KB (rounded up per item)."""
    per_item = writes.size / max(1, len(writes.items))
    return max(1, math.ceil(per_item / 1024)) * len(writes.items)


def in_transaction(writes: RecordWrites) -> Cost:
    """A record's writes in a shared transaction: its share of one request."""
    share = len(writes.items) / MAX_TRANSACTION_ACTIONS
    return Cost(TRANSACTIONAL_WRITE_UNITS * _kilobytes(writes), share, TRANSACTION_MS * share)


def alone(writes: RecordWrites) -> Cost:
    """A record's writes alone: one request per item, spread over the writing threads."""
    requests = len(writes.items)
    time_ms = WRITE_MS * requests / ALONE_WRITE_THREADS
    return Cost(STANDARD_WRITE_UNITS * _kilobytes(writes), requests, time_ms)


def writes_alone(writes: RecordWrites) -> bool:
    """Whether the plan writes a record alone (the rule of the module docstring)."""
    return writes.alone and bool(writes.items) and alone(writes) < in_transaction(writes)


@dataclass
class Plan:
    """The records waiting to be written: a transaction group and the records written alone.
    An item is in one of the two only, so one item's writes keep their order."""

    group: TransactionGroup = field(default_factory=TransactionGroup)
    single: list[RecordWrites] = field(default_factory=list)
    single_items: set[ItemIdentity] = field(default_factory=set)

    def fits(self, writes: RecordWrites) -> bool:
        """Whether ``writes`` can join without a write of the plan first."""
        if writes_alone(writes):
            return len(self.single) < ALONE_PENDING_RECORDS and not (
                writes.identities & self.group.identities
            )
        return self.group.fits(writes) and not (writes.identities & self.single_items)

    def add(self, writes: RecordWrites) -> None:
        if writes_alone(writes):
            self.single.append(writes)
            self.single_items.update(writes.identities)
        else:
            self.group.add(writes)

    def take(self) -> tuple[list[RecordWrites], list[RecordWrites]]:
        """The records written alone and those of the transaction group; the plan is empty."""
        single, self.single, self.single_items = self.single, [], set()
        return single, self.group.take()

    def __bool__(self) -> bool:
        return bool(self.single) or bool(self.group)
