"""Shard lineage: which shard of a stream is the parent of which, for the redrive's order.

DynamoDB closes a stream's shards and opens children (about every 4 hours, and when a partition
splits); an item's later changes are then in a child shard, and Lambda reads a parent shard to
its end before its children. A redrive must keep that order across the failed batches it holds:
a child shard's batch waits until its parent's (and every ancestor's) are done.

Where the lineage comes from: the route (:meth:`~cdc_consumer.routes.replay.ReplayRoute.
shard_parents`; a DynamoDB stream's ``DescribeStream`` lists each shard with its ``ParentShardId``)
(the S3 on-failure object names only its own shard). It lists only the shards the stream still
holds records of (24 hours): a shard older than that has no known parent. Then redrive is
conservative: such a shard may descend from any shard before it in the replay order (shards are
ordered by the creation time in their ids, ``shardId-<20-digit epoch ms>-<hash>``, a parent
being created before its children), so a pending object of any earlier shard holds it back, and
the report says why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.routes.replay import route_of_stream

__all__ = ["ShardLineage", "shard_created_ms"]

#: ``shardId-00000001536019433476-eb5b5e21``: the number is the shard's creation time in epoch ms.
_SHARD_ID = re.compile(r"^shardId-(?P<created>\d+)-")


def shard_created_ms(shard_id: str) -> int | None:
    """The creation time (epoch ms) a DynamoDB shard id carries, or None if it carries none."""
    match = _SHARD_ID.match(shard_id)
    return int(match["created"]) if match else None


@dataclass
class ShardLineage:
    """The parents ``DescribeStream`` reported (``parents[shard]`` is None for a shard listed
    without a parent); ``unknown_reason`` says why shards missing from it have no known parent."""

    parents: dict[str, str | None] = field(default_factory=dict)
    unknown_reason: str = (
        "DescribeStream does not list it (its records are older than the stream's retention)"
    )

    @classmethod
    def of_stream(
        cls, streams_client: Any, stream_arn: str, shards: Iterable[str] = ()
    ) -> ShardLineage:
        """Read the lineage of ``stream_arn`` (of ``shards``), as its route says. When it cannot
        be read, every shard's lineage is unknown, with the error as the reason."""
        route = route_of_stream(stream_arn)
        try:
            return cls(route.shard_parents(streams_client, stream_arn, shards))
        except (ClientError, BotoCoreError) as error:
            detail = getattr(error, "response", {}).get("Error", {})
            reason = f"{detail.get('Code')}: {detail.get('Message')}" if detail else str(error)
            return cls({}, f"DescribeStream of the stream failed ({reason})")

    def ancestors(self, shard_id: str) -> tuple[list[str], bool]:
        """The known ancestors of ``shard_id``, parent first, and whether that list is complete
        (it ends at a shard listed without a parent)."""
        chain: list[str] = []
        current = shard_id
        while current in self.parents:
            parent = self.parents[current]
            if parent is None:
                return chain, True
            if parent in chain or parent == shard_id:
                return chain, False  # a cycle cannot be lineage: know nothing past it
            chain.append(parent)
            current = parent
        return chain, False

    def may_descend_from(self, shard_id: str, other: str) -> str | None:
        """Why ``shard_id`` may hold later changes of ``other``'s items (``other`` is a known
        ancestor, or the lineage cannot rule it out), or None when it cannot."""
        if other == shard_id:
            return None
        ancestors, complete = self.ancestors(shard_id)
        if other in ancestors:
            return f"shard {other} is an ancestor of shard {shard_id}"
        if complete or shard_id in self.ancestors(other)[0]:
            return None
        top = ancestors[-1] if ancestors else shard_id
        return (
            f"the parent of shard {top} is unknown ({self.unknown_reason}), so shard {other},"
            " before it in the replay order, may be an ancestor"
        )

    def order(self, shard_ids: Iterable[str]) -> list[str]:
        """``shard_ids`` with every known ancestor before its descendants; otherwise by the
        creation time in their ids, then by id."""
        pending = sorted(set(shard_ids), key=_creation_key)
        placed: list[str] = []
        while pending:
            for index, shard in enumerate(pending):
                ancestors = set(self.ancestors(shard)[0])
                if not ancestors.intersection(pending[:index] + pending[index + 1 :]):
                    placed.append(pending.pop(index))
                    break
            else:  # unreachable for real lineage (no cycles); keep the id order
                placed.extend(pending)
                break
        return placed

    def unknown(self, shard_ids: Iterable[str]) -> list[str]:
        """The shards among ``shard_ids`` whose ancestry is not known to its root."""
        return sorted(s for s in set(shard_ids) if not self.ancestors(s)[1])


def _creation_key(shard_id: str) -> tuple[int, int, str]:
    created = shard_created_ms(shard_id)
    return (0 if created is not None else 1, created or 0, shard_id)
