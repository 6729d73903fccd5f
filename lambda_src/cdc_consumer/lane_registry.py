"""The lane registry: the ledger lanes a consumer has on a stream, for records that come without
a shard.

A lane is keyed by its shard (:mod:`cdc_consumer.ledger`), and a record delivered without one
(a tumbling window removed from a running consumer, a mapping without a window beside one with
it) is kept with a per-record marker. Such a record may already be listed in a lane, so the
shard-less writer must find the lanes: each lane writer registers its lane, on the ledger table,
as the item ``({consumer}#~lanes, {stream}#{shard})`` with an ``expiration`` past its entries'.
It does so before the lane's first commit, and again whenever the registration would expire before
the entry it is about to write (the lane's head says until when it is registered), so about once
an hour per lane (:data:`~cdc_consumer.defaults.LANE_REGISTRY_MARGIN_SECONDS`).

A shard-less reader then asks the registry for the stream's lanes (one Query), reads their heads
(one BatchGetItem per 100: each head says the creation times of the oldest and newest record its
lane lists) and looks up only the lanes whose times overlap its records' (one Query each): about
as many as the stream had shards open at once. A consumer that never had a lane pays one Query
that finds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.defaults import EXPIRATION_ATTRIBUTE, ID_ATTRIBUTE, LANE_REGISTRY_MARGIN_SECONDS
from cdc_consumer.exceptions import TransientError
from cdc_consumer.ledger import SORT_ATTRIBUTE, Lane

REGISTRY_SUFFIX = "#~lanes"


@dataclass(frozen=True)
class LaneRegistry:
    """The registry of ``consumer``'s lanes on the ledger ``table`` (module docstring)."""

    client: Any
    table: str
    consumer: str
    ttl_seconds: int
    clock: Any

    def due(self, registered: int) -> bool:
        """Whether a lane registered until ``registered`` must be registered again before an
        entry written now (which lives ``ttl_seconds``) commits."""
        return registered < int(self.clock()) + self.ttl_seconds

    def register(self, lane: Lane) -> int:
        """Register ``lane`` (stream, shard) until past an entry written now; until when.
        Raises :class:`TransientError` when DynamoDB does not answer."""
        until = int(self.clock()) + self.ttl_seconds + LANE_REGISTRY_MARGIN_SECONDS
        stream, shard = lane
        try:
            self.client.update_item(
                TableName=self.table,
                Key=self._key(f"{stream or '-'}#{shard}"),
                UpdateExpression="SET #exp = :exp",
                ExpressionAttributeNames={"#exp": EXPIRATION_ATTRIBUTE},
                ExpressionAttributeValues={":exp": {"N": str(until)}},
            )
        except (ClientError, BotoCoreError) as error:
            raise TransientError(f"registering ledger lane {lane} failed: {error}") from error
        return until

    def lanes(self, stream: str | None) -> list[Lane]:
        """The lanes registered for ``stream`` and not yet expired (one consistent Query, paged
        past 1 MB). Raises :class:`TransientError` when DynamoDB does not answer."""
        prefix = f"{stream or '-'}#"
        now = int(self.clock())
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "#id = :registry AND begins_with(#seq, :prefix)",
            "ExpressionAttributeNames": {"#id": ID_ATTRIBUTE, "#seq": SORT_ATTRIBUTE},
            "ExpressionAttributeValues": {
                ":registry": {"S": self.consumer + REGISTRY_SUFFIX},
                ":prefix": {"S": prefix},
            },
            "ConsistentRead": True,
        }
        found: list[Lane] = []
        try:
            while True:
                page = self.client.query(**request)
                for item in page.get("Items", []):
                    expiration = int(item.get(EXPIRATION_ATTRIBUTE, {"N": "0"})["N"])
                    if expiration >= now:  # TTL deletes late: an expired item still reads
                        found.append((stream, item[SORT_ATTRIBUTE]["S"].removeprefix(prefix)))
                if "LastEvaluatedKey" not in page:
                    return found
                request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        except (ClientError, BotoCoreError) as error:
            raise TransientError(f"reading the ledger's lane registry failed: {error}") from error

    def _key(self, sort: str) -> dict[str, Any]:
        return {ID_ATTRIBUTE: {"S": self.consumer + REGISTRY_SUFFIX}, SORT_ATTRIBUTE: {"S": sort}}
