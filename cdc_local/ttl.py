"""DynamoDB's TTL sweeper, played locally (moto never expires items).

Follows "Using time to live (TTL) in DynamoDB" (developer guide): an item expires when its TTL
attribute is a Number holding epoch **seconds** at or before now; items whose attribute is not a
Number, or whose value lies more than five years in the past, are never deleted (so a value in
milliseconds, which reads as a date far in the future, never expires). The deletion appears in
the stream as a REMOVE record whose ``userIdentity`` is
``{"type": "Service", "principalId": "dynamodb.amazonaws.com"}``.

moto's stream records carry no ``userIdentity``. The sweeper therefore keeps a ledger of what it
deleted (table, keys, and the deleted item), and a mapping that reads a REMOVE record asks the
ledger: the first REMOVE of those keys (with that old image, when the stream carries old images)
read after the deletion is the sweeper's, and is annotated like DynamoDB's. The binding is kept by
stream ARN and sequence number, so every mapping on the same stream sees the same annotation.

Two TTL traps are silent in AWS; the local pipeline says so, once each, in
:attr:`TtlLedger.warnings` (``cdc-local`` prints them on stderr): a TTL value that looks like
epoch milliseconds (never expires, here as in AWS), and a mapping whose filters drop the TTL
deletions it meets (``StreamFilters.exclude_ttl_deletions()``: its view never sees an item
expire, so a view counting or summing live items keeps the expired ones).
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from cdc_consumer.change import TTL_PRINCIPAL
from cdc_consumer.ttl import finer_unit
from cdc_consumer.wire import to_wire

from cdc_local.arns import stream_table_name
from cdc_local.endpoint import LOCAL_REGION, LocalEndpoint

#: DynamoDB skips TTL values more than five years in the past.
MAX_TTL_AGE_SECONDS = 5 * 365 * 24 * 3600


def _key(value: Mapping[str, Any]) -> str:
    """A canonical text form of a DynamoDB-JSON key, image or item: the sweeper's (from boto3,
    binary values as bytes) and the stream's (as Lambda delivers it, base64 text) compare equal."""
    return json.dumps(to_wire(value), sort_keys=True)


def _table(region: str, table_name: str) -> str:
    """A table by region and name (a global table's replicas share their name)."""
    return f"{region}/{table_name}"


def is_expired(attribute: Mapping[str, Any] | None, now: float) -> bool:
    """Whether a TTL attribute (DynamoDB JSON: ``{"N": "1700000000"}``) has expired at ``now``."""
    if not attribute or "N" not in attribute:
        return False
    try:
        expiry = Decimal(attribute["N"])
    except ArithmeticError:
        return False
    return now - MAX_TTL_AGE_SECONDS <= expiry <= Decimal(str(now))


class TtlLedger:
    """What the sweeper deleted, so the matching stream REMOVE records can be marked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._deletions: dict[tuple[str, Any], deque[Any]] = defaultdict(deque)
        self._bound: dict[tuple[str, str], bool] = {}
        #: The TTL traps met so far, one line each, in the order met.
        self.warnings: list[str] = []
        self._warned: set[tuple[str, str]] = set()

    def warn_once(self, key: tuple[str, str], text: str) -> None:
        with self._lock:
            if key not in self._warned:
                self._warned.add(key)
                self.warnings.append(text)

    def filtered_out(self, mapping: str, record: Mapping[str, Any]) -> None:
        """A mapping's filters dropped ``record``: say so once if it is a TTL deletion."""
        if record.get("userIdentity") != dict(TTL_PRINCIPAL):
            return
        self.warn_once(
            ("filtered", mapping),
            f"mapping {mapping}: its filters drop TTL deletions (an item of "
            f"{record.get('eventSourceARN', 'the table')} expired): its consumer never sees "
            "items expire, so a view that counts or sums the table's live items keeps the "
            "expired ones for ever. Keep StreamFilters.exclude_ttl_deletions() only for a view "
            "of everything ever written",
        )

    def record(
        self,
        table_name: str,
        keys: Mapping[str, Any],
        item: Mapping[str, Any],
        region: str = LOCAL_REGION,
    ) -> None:
        """The sweeper deleted ``item`` (``keys``) of ``table_name`` in ``region``: a global
        table's replicas share the name, and only the deleting region's record is the TTL's."""
        with self._lock:
            self._deletions[(_table(region, table_name), _key(keys))].append(_key(item))

    def forget(
        self,
        table_name: str,
        keys: Mapping[str, Any],
        item: Mapping[str, Any],
        region: str = LOCAL_REGION,
    ) -> None:
        """Undo :meth:`record` for a deletion that did not happen."""
        with self._lock:
            pending = self._deletions.get((_table(region, table_name), _key(keys)))
            if pending and _key(item) in pending:
                pending.remove(_key(item))

    def annotate(self, stream_arn: str, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` with DynamoDB's TTL ``userIdentity`` if it is a sweeper deletion."""
        if record.get("eventName") != "REMOVE":
            return record
        sequence = record["dynamodb"]["SequenceNumber"]
        with self._lock:
            bound = self._bound.get((stream_arn, sequence))
            if bound is None:
                table = _table(stream_arn.split(":")[3], stream_table_name(stream_arn))
                bound = self._claim(table, record["dynamodb"])
                self._bound[(stream_arn, sequence)] = bound
        return {**record, "userIdentity": dict(TTL_PRINCIPAL)} if bound else record

    def _claim(self, table_name: str, change: Mapping[str, Any]) -> bool:
        pending = self._deletions.get((table_name, _key(change["Keys"])))
        if not pending:
            return False
        old_image = change.get("OldImage")
        if old_image is not None and _key(old_image) != pending[0]:
            return False
        pending.popleft()
        return True


class TtlSweeper:
    """Deletes expired items from the tables that have TTL enabled, as DynamoDB does."""

    def __init__(
        self,
        endpoint: LocalEndpoint,
        ttl_attributes: Mapping[str, str],
        ledger: TtlLedger | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``ttl_attributes``: table name -> its TTL attribute name."""
        self.ddb = endpoint.client("dynamodb")
        self.region = endpoint.region
        self.ttl_attributes = dict(ttl_attributes)
        self.ledger = ledger or TtlLedger()
        self.clock = clock
        self.deleted = 0

    def sweep(self) -> int:
        """Delete every expired item now; return how many were deleted."""
        deleted = 0
        now = self.clock()
        for table, attribute in self.ttl_attributes.items():
            key_names = [
                k["AttributeName"]
                for k in self.ddb.describe_table(TableName=table)["Table"]["KeySchema"]
            ]
            for page in self.ddb.get_paginator("scan").paginate(
                TableName=table, ConsistentRead=True
            ):
                for item in page["Items"]:
                    if is_expired(item.get(attribute), now):
                        deleted += self._delete(table, attribute, key_names, item)
                    else:
                        self._check_unit(table, attribute, item, now)
        self.deleted += deleted
        return deleted

    def _check_unit(self, table: str, attribute: str, item: Mapping[str, Any], now: float) -> None:
        """A TTL value in epoch milliseconds (or finer) never expires, in AWS as here: say so
        once per table, with the value and the seconds it should be."""
        value = (item.get(attribute) or {}).get("N")
        try:
            number = int(Decimal(value)) if value is not None else None
        except ArithmeticError:
            return
        unit = finer_unit(number, now=now) if number is not None else None
        if unit is None:
            return
        name, factor = unit
        self.ledger.warn_once(
            ("unit", table),
            f"table {table}: TTL attribute {attribute} = {number} looks like epoch {name}: "
            f"DynamoDB never expires such an item (nor does this sweeper). Write epoch seconds "
            f"({number // factor}; cdc_consumer.ttl.ttl_after computes them)",
        )

    def _delete(
        self, table: str, attribute: str, key_names: list[str], item: Mapping[str, Any]
    ) -> int:
        keys = {name: item[name] for name in key_names}
        # Record first: the REMOVE may be read by a mapping as soon as the delete commits.
        self.ledger.record(table, keys, item, self.region)
        try:
            # Only if the TTL value is unchanged: an item whose TTL was extended meanwhile stays.
            self.ddb.delete_item(
                TableName=table,
                Key=keys,
                ConditionExpression="#ttl = :seen",
                ExpressionAttributeNames={"#ttl": attribute},
                ExpressionAttributeValues={":seen": item[attribute]},
            )
        except self.ddb.exceptions.ConditionalCheckFailedException:
            self.ledger.forget(table, keys, item, self.region)
            return 0
        return 1


class TtlAnnotatedStreams:
    """A ``dynamodbstreams`` client whose GetRecords marks the sweeper's deletions with
    DynamoDB's TTL ``userIdentity``, as the mappings see them (moto's records carry none).

    Redrive reads on-failure ranges back from the stream; without this, a consumer filtered to
    TTL deletions (the TTL archive) would find none of its records in the range.
    """

    def __init__(self, client: Any, ledger: TtlLedger, stream_arn: str) -> None:
        self._client = client
        self._ledger = ledger
        self._stream_arn = stream_arn

    def get_records(self, **kwargs: Any) -> dict[str, Any]:
        response = self._client.get_records(**kwargs)
        records = [self._ledger.annotate(self._stream_arn, r) for r in response["Records"]]
        return {**response, "Records": records}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)
