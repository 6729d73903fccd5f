"""Several consumers behind one event source mapping: ``StreamConsumer(members=[...])``.

DynamoDB Streams serves two concurrent readers per shard (one on a global table's stream), so
a table with more consumers than that runs some of them behind one mapping: one function, one
mapping whose filter is the union of the members' filters, and in the function a
:class:`cdc_consumer.ConsumerGroup` that hands each record to the members whose filter matches
it, in stream order. Each member keeps its name (its idempotency markers' namespace, the
``Consumer`` dimension of its metrics and alarms, the ``consumer`` of its quarantine messages)
and its filter.

What the members share, since they share one function and one mapping: a failing member holds
the batch for the others (Lambda redelivers from the earliest failed record; members that
applied later records skip them as duplicates), one timeout, one retry budget and one maximum
record age, one on-failure destination and one quarantine queue (each message names its
member; the redrive replays every member's). The construct declares the members to the function
in ``CDC_CONSUMER_GROUP`` (:class:`cdc_consumer.group_member_spec.GroupMemberSpec`), so the handler
takes
their order and filters from there: ``ConsumerGroup.from_environment([...])``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_consumer.group_member_spec import GroupMemberSpec

from cdc_constructs.exceptions import Problem
from cdc_constructs.filter_checks import as_pattern, check_filters
from cdc_constructs.validation import check_name, check_reads_images

__all__ = ["ConsumerGroupMember", "GroupOfConsumers"]


@dataclass(frozen=True)
class ConsumerGroupMember:
    """One consumer of a :class:`~cdc_constructs.StreamConsumer` with ``members``.

    :param consumer_name: the member's stable name: namespaces its idempotency markers, is the
        ``Consumer`` dimension of its metrics and names its quarantine messages; the handler's
        ``StreamProcessor(consumer_name)`` for it has the same name. Required (a member has no
        construct id to default to); unique in the app per idempotency table, as every
        consumer name is.
    :param filters: the Lambda filter patterns of the records this member consumes (as
        ``StreamConsumer.filters``; ``StreamFilters`` builds common ones). Default: none, every
        record the mapping delivers. The mapping's filter is the union of the members'.
    :param reads_images: the images this member's handler reads (as
        ``StreamConsumer.reads_images``). Default: not declared.
    """

    consumer_name: str
    filters: Sequence[Mapping[str, Any]] = ()
    reads_images: Sequence[str] | None = None


@dataclass(frozen=True)
class GroupOfConsumers:
    """The members of one StreamConsumer (none: a consumer of its own), and what the mapping
    and the function get from them."""

    members: tuple[ConsumerGroupMember, ...] = ()

    @classmethod
    def of(cls, members: Any) -> GroupOfConsumers:
        listed = tuple(members) if isinstance(members, Sequence) else ()
        return cls(tuple(m for m in listed if isinstance(m, ConsumerGroupMember)))

    @property
    def names(self) -> list[str]:
        return [member.consumer_name for member in self.members]

    def problems(
        self, members: Any, filters: Any, reads_images: Any, stream_view_type: str | None
    ) -> list[Problem]:
        """``members`` as given (a sequence of :class:`ConsumerGroupMember` with distinct
        names, valid filters and images); ``filters``/``reads_images`` are the members' then."""
        if not members:
            return []
        listed = tuple(members) if isinstance(members, Sequence) else ()
        if not listed or len(listed) != len(self.members):
            return [Problem("members", members, "a non-empty list of ConsumerGroupMember")]
        found: list[Problem] = []
        for prop, value in (("filters", filters), ("reads_images", reads_images)):
            if value:
                found.append(
                    Problem(prop, value, f"none: with members, give each member its {prop}")
                )
        if len(set(self.names)) != len(self.names):
            found.append(Problem("members", self.names, "members with distinct consumer names"))
        for index, member in enumerate(self.members):
            where = f"members[{index}]"
            found += check_name(f"{where}.consumer_name", member.consumer_name, forbidden="#")
            found += _prefixed(where, check_filters(member.filters, stream_view_type))
            found += _prefixed(where, check_reads_images(member.reads_images, stream_view_type))
        return found

    def mapping_filters(self, filters: Sequence[Any]) -> Sequence[Any]:
        """The mapping's filter: the members' patterns together (Lambda delivers a record that
        matches any of them), none when a member takes every record; ``filters`` without
        members."""
        if not self.members:
            return filters
        if any(not member.filters for member in self.members):
            return ()
        patterns = [as_pattern(p) for member in self.members for p in member.filters]
        return [p for index, p in enumerate(patterns) if p not in patterns[:index]]

    def reads_images(self, reads_images: Sequence[str] | None) -> Sequence[str] | None:
        """Every image a member reads (None: none declared); ``reads_images`` without
        members."""
        if not self.members:
            return reads_images
        declared = [m.reads_images for m in self.members if m.reads_images is not None]
        if not declared:
            return None
        return sorted({image for images in declared for image in images})

    def specs(self) -> list[GroupMemberSpec]:
        """The members as the function and the redrive read them (``CDC_CONSUMER_GROUP``)."""
        return [
            GroupMemberSpec(m.consumer_name, tuple(dict(as_pattern(p)) for p in m.filters))
            for m in self.members
        ]


def _prefixed(where: str, problems: list[Problem]) -> list[Problem]:
    return [Problem(f"{where}.{p.prop}", p.value, p.allowed) for p in problems]
