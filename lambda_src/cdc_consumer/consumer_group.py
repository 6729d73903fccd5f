"""ConsumerGroup: several consumers behind one event source mapping, one reader of the stream.

DynamoDB Streams serves two concurrent readers per shard (one on a global table's stream), so
a table with more consumers than that runs them behind one mapping. Each member is a
:class:`~cdc_consumer.StreamProcessor` of its own and keeps its own name (its idempotency
markers' namespace and its ``Consumer`` metric dimension; its quarantine messages carry it),
its filter, and its projections and side effects::

    totals = StreamProcessor("totals")          # tables and queue from the environment
    archive = StreamProcessor("archive")
    group = ConsumerGroup([
        GroupMember(totals, filters=[EVERY_CHANGE_BUT_TTL_DELETIONS]),
        GroupMember(archive, filters=[TTL_DELETIONS]),
    ])                                          # the patterns StreamFilters builds

    def handler(event, context):
        return group.handle(event, context)

With ``StreamConsumer(members=[ConsumerGroupMember("totals", filters=[...]), ...])`` the
construct declares the members (``CDC_CONSUMER_GROUP``) and makes one mapping whose filter is
the union of theirs; the handler then takes the order and filters from there::

    group = ConsumerGroup.from_environment([totals, archive])

Dispatch: each member, in the order given, handles the records of the batch its filter matches,
in stream order (a member with no filter gets every record). A batch of any route is dispatched
the same way: filters match what Lambda's match for the record's route, and records are reported
by their route's sequence numbers (:mod:`cdc_consumer.routes`). What the members share, since
they share one function and one mapping:

- **A failing member holds the batch for the others.** When a member reports a record failed,
  the members after it only handle records before that one, and the group reports the earliest
  record any member failed on; Lambda redelivers from there to every member. A member that had
  already applied later records skips them as duplicates (its markers), so each member applies
  each record exactly once.
- **One deadline**: the function's timeout, as read at the group's start. Every member keeps
  the safety margin that timeout gives (not a fifth of the time left when its turn comes) and
  stops near it, reporting where it stopped; a member whose turn comes with less than the
  margin left reports its first record, so the group reports the lowest stop point (only an
  invocation that took no record at all fails with ``DeadlineError``).
- **One retry budget and one record age** (the mapping's): when they run out, the batch goes
  to the on-failure destination for every member, and a redrive replays it through the group.
- A poison record is quarantined by the member it is poison for, with that member's name;
  the other members apply it, and the batch goes on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_consumer import windows
from cdc_consumer.backfill.shapes import BACKFILL_EVENT_KEY, SnapshotBatch
from cdc_consumer.environment_variables import CONSUMER_GROUP_ENV
from cdc_consumer.exceptions import ConfigurationError, MalformedBatchError
from cdc_consumer.expiry import current_rule, expiry_view
from cdc_consumer.filter_patterns import FilterCriteria
from cdc_consumer.group_member_spec import GroupMemberSpec
from cdc_consumer.message_fields import ContractError
from cdc_consumer.processor import LambdaContext, StreamProcessor
from cdc_consumer.routes import route_of
from cdc_consumer.snapshots import admits_snapshot_rows

__all__ = ["ConsumerGroup", "GroupMember"]


@dataclass(frozen=True)
class GroupMember:
    """One consumer of a group: its processor (with its own ``consumer_name``) and the Lambda
    filter patterns of the records it consumes (none: every record).

    :param processor: the member's processor; its ``consumer_name`` is the member's name.
    :param filters: the Lambda filter patterns (JSON text or dicts) of the records it
        consumes, as the construct's member declares them. Default: none, every record.
    """

    processor: StreamProcessor
    filters: Sequence[str | Mapping[str, Any]] = ()

    @property
    def name(self) -> str:
        return str(self.processor.consumer_name)

    def criteria(self) -> FilterCriteria:
        return FilterCriteria(list(self.filters), where=f"{self.name}.filters")


class ConsumerGroup:
    """Dispatches each batch to its members; see the module docstring for what they share.

    :param members: the members, in dispatch order, with distinct explicit consumer names.
    """

    def __init__(self, members: Sequence[GroupMember]) -> None:
        names = [member.processor.consumer_name for member in members]
        if not members or any(not name for name in names) or len(set(names)) != len(names):
            raise ConfigurationError(
                f"a consumer group needs members with distinct, explicit consumer names (their "
                f"markers' namespaces), got {names!r}"
            )
        self.members = tuple(members)
        self._criteria = [member.criteria() for member in self.members]

    @property
    def names(self) -> list[str]:
        return [member.name for member in self.members]

    @classmethod
    def from_environment(
        cls, processors: Sequence[StreamProcessor], environ: Mapping[str, str] | None = None
    ) -> ConsumerGroup:
        """The group a StreamConsumer with ``members`` declares (``CDC_CONSUMER_GROUP``): its
        members' order and filters, one of ``processors`` per member, matched by name.

        Raises :class:`ConfigurationError` when the variable is missing or malformed, or when
        the processors' names are not exactly the declared members' (a member without a
        processor would skip records silently; a processor without a member would never run).

        :param processors: one processor per declared member, in any order.
        :param environ: where ``CDC_CONSUMER_GROUP`` is read. Default: ``os.environ``.
        """
        environ = os.environ if environ is None else environ
        value = environ.get(CONSUMER_GROUP_ENV)
        if not value:
            raise ConfigurationError(
                f"{CONSUMER_GROUP_ENV} is not set: give the StreamConsumer members=[...], or "
                "build ConsumerGroup([GroupMember(processor, filters), ...]) yourself"
            )
        try:
            specs = GroupMemberSpec.decode(value)
        except ContractError as error:
            raise ConfigurationError(str(error)) from None
        names = [str(processor.consumer_name) for processor in processors]
        declared = [spec.name for spec in specs]
        if sorted(names) != sorted(declared):
            raise ConfigurationError(
                f"the StreamConsumer declares the members {declared!r}, the handler gives "
                f"processors named {names!r}: give one StreamProcessor(consumer_name) per "
                "member, with the same names"
            )
        by_name = dict(zip(names, processors, strict=True))
        return cls([GroupMember(by_name[spec.name], spec.filters) for spec in specs])

    def handle(
        self, event: Mapping[str, Any], context: LambdaContext | None = None
    ) -> dict[str, Any]:
        """Handle one batch; return the partial batch response for the whole group. A
        backfill's probe (docs/backfill.md) asks every member a snapshot row can reach."""
        from cdc_consumer.batch import GroupTurn  # the batch machinery, on first use

        snapshot = SnapshotBatch.of(event)
        if snapshot is not None and snapshot.probe:
            return self._probe(snapshot, event, context)
        records = event.get("Records") if isinstance(event, Mapping) else None
        if not isinstance(records, list):
            raise MalformedBatchError("the event has no Records list; expected a stream batch")
        positions = {_item_identifier(record, n): n for n, record in enumerate(records)}
        rule = current_rule()  # a replicated TTL deletion matches a filter on the TTL identity
        views = [expiry_view(record, rule) for record in records]
        # The function's timeout as far as it can be told: the time left at the group's start.
        timeout_ms = None if context is None else int(context.get_remaining_time_in_millis())
        limit = len(records)  # records from here on are held for a member's failure
        taken = False  # whether a member took records before this one's turn
        quarantined = 0  # a snapshot batch's answer (docs/backfill.md)
        for member, criteria in zip(self.members, self._criteria, strict=True):
            if snapshot is not None and snapshot.consumer not in (None, member.name):
                continue  # a backfill feeds the member it backfills only
            mine = [records[n] for n in range(limit) if criteria.matches(views[n])]
            if not mine:
                continue
            response = member.processor.handle(
                {**event, "Records": mine}, context, turn=GroupTurn(timeout_ms, taken)
            )
            quarantined += response.get(BACKFILL_EVENT_KEY, {}).get("quarantined", 0)
            failed = [positions[str(f["itemIdentifier"])] for f in response["batchItemFailures"]]
            limit = min([limit, *failed])
            taken = taken or not failed or min(failed) > positions[_item_identifier(mine[0], 0)]
        failures = [] if limit == len(records) else [_item_identifier(records[limit], limit)]
        answer: dict[str, Any] = {"batchItemFailures": [{"itemIdentifier": n} for n in failures]}
        if snapshot is not None:
            answer[BACKFILL_EVENT_KEY] = {"quarantined": quarantined}
        return windows.answer(event, answer)

    def _probe(
        self, wanted: SnapshotBatch, event: Mapping[str, Any], context: LambdaContext | None
    ) -> dict[str, Any]:
        """Each member whose filters admit a snapshot row answers the probe (raising
        :class:`SnapshotRefusedError` when it cannot take snapshot rows); the answer names
        those (``consumers``) and every member (``members``), so the start step tells a name
        not in the group from a member whose filters admit no row."""
        probed = []
        for member, criteria in zip(self.members, self._criteria, strict=True):
            if wanted.consumer not in (None, member.name):
                continue
            if may_receive_snapshots(criteria):
                member.processor.handle(event, context)
                probed.append(member.name)
        members = [member.name for member in self.members]
        answer = {"consumers": probed, "members": members}
        return {"batchItemFailures": [], BACKFILL_EVENT_KEY: answer}


def may_receive_snapshots(criteria: FilterCriteria) -> bool:
    """Whether a snapshot row may pass a member's ``criteria``
    (:func:`cdc_consumer.snapshots.admits_snapshot_rows`: the runtime's filter matcher on a
    snapshot record, its images taken to match)."""
    return admits_snapshot_rows(criteria)


def _item_identifier(record: Any, position: int) -> str:
    """What ``batchItemFailures`` names ``record`` by (its sequence number in its route)."""
    route = route_of(record)
    identifier = route.item_identifier(record)
    if identifier is None:
        raise MalformedBatchError(
            f"record {position} of the batch has no {route.identifier_field}, so it cannot be "
            "reported alone; failing the batch"
        )
    return identifier
