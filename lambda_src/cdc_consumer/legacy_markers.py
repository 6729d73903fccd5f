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

    def keys(self, changes: Iterable[Change]) -> list[dict[str, Any]]:
        """The marker keys of ``changes`` (the caller picks the ones that may have a marker:
        :meth:`may_have_marker`, or the markers horizon)."""
        ids = {f"{self.consumer}#{c.event_id}" for c in changes}
        return [{ID_ATTRIBUTE: {"S": marker_id}} for marker_id in sorted(ids)]

    def covered(self, changes: Iterable[Change], found: Iterable[Mapping[str, Any]]) -> set[str]:
        """The event ids among ``changes`` that a marker of ``found`` (this consumer's markers,
        read by :func:`batch_get` with :meth:`keys`) covers for the change's stream."""
        by_id = {f"{self.consumer}#{c.event_id}": c for c in changes}
        covered: set[str] = set()
        for item in found:
            change = by_id.get(item[ID_ATTRIBUTE]["S"])
            if change is not None and _same_stream(item, change.source_arn):
                covered.add(change.event_id)
        return covered


def batch_get(client: Any, keys: Mapping[str, list[dict[str, Any]]]) -> dict[str, list[Any]]:
    """Consistent BatchGetItem of ``keys`` by table (100 keys a request, unprocessed keys asked
    again): the items found, by table. Each item read is serializable with transactions, as a
    GetItem is. Raises :class:`TransientError` when DynamoDB does not answer."""
    found: dict[str, list[Any]] = {table: [] for table in keys}
    pending = [(table, key) for table, table_keys in keys.items() for key in table_keys]
    try:
        while pending:
            chunk, pending = pending[:MAX_BATCH_GET_KEYS], pending[MAX_BATCH_GET_KEYS:]
            request: dict[str, Any] = {}
            for table, key in chunk:
                request.setdefault(table, {"Keys": [], "ConsistentRead": True})["Keys"].append(key)
            response = client.batch_get_item(RequestItems=request)
            for table, items in response.get("Responses", {}).items():
                found.setdefault(table, []).extend(items)
            unprocessed = response.get("UnprocessedKeys") or {}
            pending += [(t, k) for t, asked in unprocessed.items() for k in asked.get("Keys", [])]
    except (ClientError, BotoCoreError) as error:
        raise TransientError(
            f"reading the ledger's heads and old markers failed: {error}"
        ) from error
    return found


def _same_stream(item: Mapping[str, Any], stream: str | None) -> bool:
    """A marker counts for ``stream`` unless it names another one (markers written before
    streams were recorded count as this stream's)."""
    theirs = item.get(STREAM_ATTRIBUTE, {}).get("S")
    return not theirs or not stream or theirs == stream
