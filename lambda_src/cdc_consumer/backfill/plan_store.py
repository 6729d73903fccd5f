"""A backfill's plan record: one horizon per backfill id, fixed when it is first planned.

One item per backfill in the idempotency table (``{consumer}#backfill#{id}``, beside its
segments' progress records): the horizon and the segment count the backfill was first planned
with, and the execution that last started it. Starting the same id again (from the CLI or the
console, after a failure, a timeout or a stop) resumes under the stored horizon; another
horizon or segment count given is refused before anything is written. The record is written
by the start step once every check passed, conditioned on what it read, so two executions
starting the same backfill at once cannot both take it. It expires with the markers'
lifetime, as the segments' records do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from cdc_consumer import defaults
from cdc_consumer.exceptions import BackfillRefusedError

__all__ = ["PlanStore", "StoredPlan"]


@dataclass(frozen=True)
class StoredPlan:
    """What a backfill id was first planned with, and the execution that last started it."""

    horizon: int
    total_segments: int
    execution: str | None = None


@dataclass
class PlanStore:
    """Reads and writes one consumer's backfill plan records."""

    client: Any
    table: str
    consumer: str
    clock: Callable[[], float]

    def record_id(self, backfill_id: str) -> str:
        return f"{self.consumer}#backfill#{backfill_id}"

    def load(self, backfill_id: str) -> StoredPlan | None:
        item = self.client.get_item(
            TableName=self.table,
            Key={defaults.ID_ATTRIBUTE: {"S": self.record_id(backfill_id)}},
            ConsistentRead=True,
        ).get("Item")
        if item is None:
            return None
        return StoredPlan(
            int(item["horizon"]["N"]),
            int(item["totalSegments"]["N"]),
            item.get("execution", {}).get("S"),
        )

    def save(self, backfill_id: str, plan: StoredPlan, read: StoredPlan | None) -> None:
        """Write ``plan`` if the record is still what the start step ``read`` (none, or the
        same execution); else another execution took the backfill meanwhile: refused."""
        item: dict[str, Any] = {
            defaults.ID_ATTRIBUTE: {"S": self.record_id(backfill_id)},
            "horizon": {"N": str(plan.horizon)},
            "totalSegments": {"N": str(plan.total_segments)},
            defaults.EXPIRATION_ATTRIBUTE: {
                "N": str(int(self.clock()) + defaults.marker_ttl_seconds())
            },
        }
        if plan.execution is not None:
            item["execution"] = {"S": plan.execution}
        names = {"#i": defaults.ID_ATTRIBUTE, "#e": "execution"}
        condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(#i)"}
        if read is not None and read.execution is not None:
            condition = {
                "ConditionExpression": "#e = :read",
                "ExpressionAttributeValues": {":read": {"S": read.execution}},
            }
        elif read is not None:
            condition = {"ConditionExpression": "attribute_exists(#i) AND attribute_not_exists(#e)"}
        condition["ExpressionAttributeNames"] = {
            name: names[name] for name in names if name in condition["ConditionExpression"]
        }
        try:
            self.client.put_item(TableName=self.table, Item=item, **condition)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            raise BackfillRefusedError(
                f"backfill {backfill_id!r} was started by another execution at the same "
                "moment: it runs there; follow that execution, or start this one again once "
                "it has ended"
            ) from None
