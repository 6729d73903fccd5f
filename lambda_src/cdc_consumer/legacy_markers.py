"""Upgrade in place: the per-record markers an earlier runtime wrote still count.

A consumer that ran with per-record processed-markers (``{consumer}#{eventID}`` on the
idempotency table) keeps running with the ledger (:mod:`cdc_consumer.ledger`). A record is then
a duplicate if a ledger entry lists it *or* an old marker covers it, for as long as an old
marker can matter: it was written no later than the moment the ledger took over, and lives the
marker lifetime (the replay windows rule, docs/design.md §5).

How the runtime knows: the first time a consumer's runtime uses the ledger it stores, on the
ledger table, the moment it took over (``{consumer}`` / ``~since``, written once, under
``attribute_not_exists``; read once per execution environment). A marker can exist only for a
record created before ``since`` plus :data:`~cdc_consumer.defaults.LEGACY_MARKER_MARGIN_SECONDS`
(an invocation of the older code still running, or still being rolled out, applies records
created before it started). So only the batch's records created before that (or carrying no
creation time) are looked up: one consistent BatchGetItem of their marker ids per batch (100
keys a request). After that, nothing: a live consumer's records are all newer, and a redrive of
older records is exactly the case where a marker may exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.change import Change
from cdc_consumer.defaults import ID_ATTRIBUTE, LEGACY_MARKER_MARGIN_SECONDS, STREAM_ATTRIBUTE
from cdc_consumer.exceptions import TransientError
from cdc_consumer.ledger import SORT_ATTRIBUTE

#: The sort key of the item holding when the ledger took over (partition: the consumer name).
SINCE_SORT_KEY = "~since"
SINCE_ATTRIBUTE = "since"
#: BatchGetItem takes at most 100 keys.
MAX_BATCH_GET_KEYS = 100
#: The ledger's start per (ledger table, consumer), read once per execution environment.
_SINCE: dict[tuple[str, str], int] = {}


@dataclass(frozen=True)
class LegacyMarkers:
    """Old markers of ``consumer`` on ``idempotency_table``; ``ledger_table`` holds ``since``."""

    client: Any
    idempotency_table: str
    ledger_table: str
    consumer: str
    clock: Any

    def since(self) -> int:
        """When the ledger took over for this consumer (epoch seconds), stored on first use."""
        cached = _SINCE.get((self.ledger_table, self.consumer))
        if cached is not None:
            return cached
        key = {ID_ATTRIBUTE: {"S": self.consumer}, SORT_ATTRIBUTE: {"S": SINCE_SORT_KEY}}
        try:
            item = self.client.get_item(
                TableName=self.ledger_table, Key=key, ConsistentRead=True
            ).get("Item")
            if item is None:
                now = int(self.clock())
                try:
                    self.client.put_item(
                        TableName=self.ledger_table,
                        Item={**key, SINCE_ATTRIBUTE: {"N": str(now)}},
                        ConditionExpression="attribute_not_exists(#id)",
                        ExpressionAttributeNames={"#id": ID_ATTRIBUTE},
                    )
                    item = {SINCE_ATTRIBUTE: {"N": str(now)}}
                except ClientError as error:
                    if (
                        error.response.get("Error", {}).get("Code")
                        != "ConditionalCheckFailedException"
                    ):
                        raise
                    item = self.client.get_item(
                        TableName=self.ledger_table, Key=key, ConsistentRead=True
                    )["Item"]
        except (ClientError, BotoCoreError) as error:
            raise TransientError(f"reading when the ledger took over failed: {error}") from error
        since = int(item[SINCE_ATTRIBUTE]["N"])
        _SINCE[(self.ledger_table, self.consumer)] = since
        return since

    def may_have_marker(self, change: Change) -> bool:
        """Whether an older runtime may have written a marker for ``change``."""
        created_us = change.creation_time_us
        if created_us is None:
            return True
        return created_us < (self.since() + LEGACY_MARKER_MARGIN_SECONDS) * 1_000_000

    def covered(self, changes: Iterable[Change]) -> set[str]:
        """The event ids among ``changes`` that an old marker of this consumer (and stream)
        covers. Looks up only the ones :meth:`may_have_marker` admits."""
        wanted = {c.event_id: c for c in changes if self.may_have_marker(c)}
        ids = [f"{self.consumer}#{event_id}" for event_id in wanted]
        found: set[str] = set()
        for start in range(0, len(ids), MAX_BATCH_GET_KEYS):
            for item in self._get(ids[start : start + MAX_BATCH_GET_KEYS]):
                event_id = item[ID_ATTRIBUTE]["S"][len(self.consumer) + 1 :]
                change = wanted.get(event_id)
                if change is not None and _same_stream(item, change.source_arn):
                    found.add(event_id)
        return found

    def _get(self, ids: list[str]) -> list[Mapping[str, Any]]:
        keys: list[Any] = [{ID_ATTRIBUTE: {"S": marker_id}} for marker_id in ids]
        items: list[Mapping[str, Any]] = []
        try:
            while keys:
                response = self.client.batch_get_item(
                    RequestItems={
                        self.idempotency_table: {
                            "Keys": keys,
                            "ConsistentRead": True,
                            "ProjectionExpression": "#id, #stream",
                            "ExpressionAttributeNames": {
                                "#id": ID_ATTRIBUTE,
                                "#stream": STREAM_ATTRIBUTE,
                            },
                        }
                    }
                )
                items += response.get("Responses", {}).get(self.idempotency_table, [])
                keys = (
                    response.get("UnprocessedKeys", {})
                    .get(self.idempotency_table, {})
                    .get("Keys", [])
                )
        except (ClientError, BotoCoreError) as error:
            raise TransientError(f"looking up old processed-markers failed: {error}") from error
        return items


def _same_stream(item: Mapping[str, Any], stream: str | None) -> bool:
    """A marker counts for ``stream`` unless it names another one (markers written before
    streams were recorded count as this stream's)."""
    theirs = item.get(STREAM_ATTRIBUTE, {}).get("S")
    return not theirs or not stream or theirs == stream
