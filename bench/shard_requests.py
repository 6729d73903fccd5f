"""A shard's requests in the scale section: modelled round trips, conflicts, and their counts.

:meth:`ShardRequests.install` registers botocore handlers on one shard's clients (the clients
its consumer is given), so every request that consumer makes

1. charges the shard's CPU so far and waits for the shard's turn in modelled time
   (bench/modelled_time.py);
2. when it writes an item another shard's in-flight transaction holds, is answered with
   DynamoDB's conflict instead of reaching moto (bench/conflicts.py);
3. advances the shard's clock by its modelled round trip (bench/cost.py), and is counted
   (:class:`ShardCounts`): commits, cancelled transactions, conflicts, and *meetings* - a
   transaction cancelled at a ledger item (a failed condition or a conflict there), i.e. at
   another writer's bookkeeping, which the runtime meets by reading its lane again.

The cost meter (bench/local_aws.py's instrumentation, on the same clients) sees the modelled
answers too, so a cancelled transaction's write units are charged.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse

from bench.conflicts import TRANSACTION, InFlight, KeySchemas, cancelled, refused
from bench.cost import modelled_latency_ms, request_items
from bench.modelled_time import ShardClock

#: The reasons of a cancelled transaction that mean "another writer got there first".
MEETING_REASONS = frozenset({"ConditionalCheckFailed", "TransactionConflict"})


@dataclass
class ShardCounts:
    """What one shard's requests met (module docstring)."""

    requests: Counter[str] = field(default_factory=Counter)
    commits: int = 0
    cancelled: int = 0
    conflicts: int = 0
    meetings: int = 0
    refused_single_writes: int = 0

    @property
    def contention(self) -> int:
        """Everything that says another shard's writes got in the way."""
        return self.cancelled + self.refused_single_writes


@dataclass
class Row:
    """What a shard's requests use during one row of the section: its clock, the in-flight
    transactions of all shards, the tables' key schemas, and its counts."""

    clock: ShardClock
    in_flight: InFlight
    schemas: KeySchemas
    counts: ShardCounts = field(default_factory=ShardCounts)


@dataclass
class ShardRequests:
    """The handlers of one shard's clients (module docstring); ``row`` is set for each row, and
    ``thread`` to the thread the shard runs in."""

    shard: int
    ledger_table: str
    row: Row | None = None
    thread: int | None = None

    def _row(self) -> Row:
        if self.row is None:
            raise RuntimeError(f"shard {self.shard}'s client was used outside a row")
        return self.row

    def install(self, client: Any) -> None:
        service = client.meta.service_model.service_name
        events = client.meta.events
        events.register(f"before-parameter-build.{service}", self._params)
        events.register(f"before-call.{service}", self._before_call)
        events.register(f"after-call.{service}", self._after_call)
        events.register(f"after-call-error.{service}", self._after_error)

    def _params(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["scale_params"] = params

    def _before_call(self, event_name: str, model: Any, context: dict[str, Any], **_: Any) -> Any:
        if threading.get_ident() != self.thread:
            raise RuntimeError(
                f"shard {self.shard}'s client sent {model.name} from another thread: the scale "
                "section charges a shard's requests to its own thread's clock"
            )
        row = self._row()
        service, operation = event_name.split(".")[1], model.name
        params = context.get("scale_params", {})
        sent = row.clock.before_request()
        round_trip = modelled_latency_ms(service, operation, request_items(operation, params))
        context["scale_sent"], context["scale_round_trip"] = sent, round_trip / 1000
        row.counts.requests[f"{service}.{operation}"] += 1
        written = row.schemas.written(operation, params) if service == "dynamodb" else []
        context["scale_written"] = written
        held = row.in_flight.conflicting(written, sent, self.shard)
        if not held:
            return None
        answer = cancelled(len(written), held) if operation == TRANSACTION else refused()
        return AWSResponse("http://bench-conflict-model", 400, {}, None), answer

    def _after_call(
        self, model: Any, http_response: Any, parsed: Any, context: dict[str, Any], **_: Any
    ) -> None:
        row = self._row()
        if model.name == TRANSACTION:
            self._transaction(row, http_response.status_code < 300, parsed or {}, context)
        elif (parsed or {}).get("Error", {}).get("Code") == "TransactionConflictException":
            row.counts.refused_single_writes += 1
        row.clock.after_request(context.get("scale_round_trip", 0.0))

    def _after_error(self, context: dict[str, Any], **_: Any) -> None:
        self._row().clock.after_request(context.get("scale_round_trip", 0.0))

    def _transaction(
        self, row: Row, committed: bool, parsed: dict[str, Any], context: dict[str, Any]
    ) -> None:
        written = context.get("scale_written", [])
        if committed:
            row.counts.commits += 1
            sent = context["scale_sent"]
            row.in_flight.hold(written, sent, sent + context["scale_round_trip"], self.shard)
            return
        codes = [reason.get("Code") for reason in parsed.get("CancellationReasons") or []]
        row.counts.cancelled += 1
        row.counts.conflicts += "TransactionConflict" in codes
        row.counts.meetings += any(
            code in MEETING_REASONS and item[0] == self.ledger_table
            for code, item in zip(codes, written, strict=False)
        )
