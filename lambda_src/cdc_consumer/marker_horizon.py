"""The markers horizon: up to which record creation time a consumer may have per-record markers.

A consumer with a ledger table lists records in ledger lanes when their event names the shard
(:mod:`cdc_consumer.ledger`), and writes per-record markers for DynamoDB stream records that come
without one (a mapping without a tumbling window: a parallelization factor above 1, a function made
by hand; a quarantine message written before shards were kept). The same record can come both
ways — a window added to a running consumer, a redrive (which knows the shard) of a batch the
live mapping (which does not) failed — so a lane writer must find the markers a shard-less writer
wrote, and meet it when both write at once.

How: before it writes a marker for a record, a shard-less writer makes sure the consumer's horizon
item (``{consumer}`` / ``~markers`` on the ledger table, attribute ``until``: epoch seconds) is at
or above the record's creation time (``ApproximateCreationDateTime``, DynamoDB's clock, not the
writer's). It raises it by :data:`~cdc_consumer.defaults.MARKER_HORIZON_STEP_SECONDS` at a time, so
a live shard-less consumer writes it about once per step, not per batch. A lane writer reads the
horizon with its heads (one more key in the same BatchGetItem), looks up the markers of its
records created at or before it, and gives those records a marker *as well as* a listing, so that
a shard-less writer of the same record at the same moment meets it on the marker's condition.
The horizon only grows and never expires (one small item per consumer): a marker may be written
for an old record at any time within the replay windows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.defaults import ID_ATTRIBUTE, MARKER_HORIZON_STEP_SECONDS
from cdc_consumer.exceptions import TransientError
from cdc_consumer.ledger import SORT_ATTRIBUTE

HORIZON_SORT_KEY = "~markers"
UNTIL_ATTRIBUTE = "until"
#: The horizon each (ledger table, consumer) is known to have reached in this execution
#: environment: it only grows, so a remembered value is never too high.
_REACHED: dict[tuple[str, str], int] = {}


@dataclass(frozen=True)
class MarkerHorizon:
    """The markers horizon of ``consumer`` on ``ledger_table`` (module docstring)."""

    client: Any
    ledger_table: str
    consumer: str

    def key(self) -> dict[str, Any]:
        """The horizon item's key (a lane writer reads it with its heads)."""
        return {ID_ATTRIBUTE: {"S": self.consumer}, SORT_ATTRIBUTE: {"S": HORIZON_SORT_KEY}}

    @staticmethod
    def until(item: Any) -> int | None:
        """The horizon the item read says (None: no shard-less writer ever wrote a marker)."""
        if not isinstance(item, dict) or UNTIL_ATTRIBUTE not in item:
            return None
        return int(item[UNTIL_ATTRIBUTE]["N"])

    def reach(self, created: int) -> None:
        """Make the horizon at least ``created`` (epoch seconds) before a marker is written for
        a record created then. Raises :class:`TransientError` when DynamoDB does not answer."""
        cache = (self.ledger_table, self.consumer)
        if _REACHED.get(cache, -1) >= created:
            return
        target = created + MARKER_HORIZON_STEP_SECONDS
        try:
            self.client.update_item(
                TableName=self.ledger_table,
                Key=self.key(),
                UpdateExpression="SET #until = :until",
                ConditionExpression="attribute_not_exists(#until) OR #until < :until",
                ExpressionAttributeNames={"#until": UNTIL_ATTRIBUTE},
                ExpressionAttributeValues={":until": {"N": str(target)}},
            )
            _REACHED[cache] = target
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise TransientError(f"raising the markers horizon failed: {error}") from error
            _REACHED[cache] = self._read() or target
        except BotoCoreError as error:
            raise TransientError(f"raising the markers horizon failed: {error}") from error

    def _read(self) -> int | None:
        try:
            item = self.client.get_item(
                TableName=self.ledger_table, Key=self.key(), ConsistentRead=True
            ).get("Item")
        except (ClientError, BotoCoreError) as error:
            raise TransientError(f"reading the markers horizon failed: {error}") from error
        return self.until(item)
