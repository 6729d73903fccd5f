"""The transactional outbox: the application's write and its event commit together or not at all.

Publishing an event *after* a database write loses the event when the process dies in between;
publishing it *before* announces a change that may never commit. The outbox removes the gap:
the application's item and an outbox item describing the event are written in ONE
``TransactWriteItems``. DynamoDB Streams then carries the outbox item's INSERT, and a
``StreamFanOut`` created with ``StreamFanOut.for_outbox`` lets only those records (key prefix
filter) through an EventBridge Pipe to an event bus.

Example::

    from cdc_consumer.sinks.outbox import Outbox

    outbox = Outbox("items", ttl_attribute="expireAt")
    outbox.write(
        {"Update": {"TableName": "items", "Key": {"pk": {"S": "ITEM#1"}},
                    "UpdateExpression": "SET #s = :paid",
                    "ConditionExpression": "#s = :pending",
                    "ExpressionAttributeNames": {"#s": "status"},
                    "ExpressionAttributeValues": {":paid": {"S": "paid"},
                                                  ":pending": {"S": "pending"}}}},
        event_type="ItemPaid",
        payload={"itemId": "1", "amount": "25.00"},
    )

The outbox item (:class:`cdc_consumer.sinks.outbox_shapes.OutboxItem` names its event attributes;
the
outbox publisher's input template reads them)::

    {pk: "OUTBOX#<eventId>", [sk: same], eventId, eventType, payload: <JSON text>,
     occurredAt: <ISO-8601 UTC>, <ttl_attribute>: <epoch seconds>}
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from boto3.dynamodb.types import TypeSerializer
from botocore.exceptions import ClientError

from cdc_consumer.exceptions import (
    OutboxCancelledError,
    OutboxConflictError,
    OutboxError,
    OutboxInputError,
)
from cdc_consumer.service_limits import MAX_DETAIL_TYPE_LENGTH, MAX_TRANSACTION_ACTIONS
from cdc_consumer.sinks.outbox_shapes import OUTBOX_KEY_PREFIX, OutboxItem
from cdc_consumer.ttl import ttl_after

__all__ = [
    "DEFAULT_OUTBOX_TTL",
    "MAX_PAYLOAD_BYTES",
    "Outbox",
    "OutboxCancelledError",
    "OutboxConflictError",
    "OutboxError",
    "OutboxEvent",
    "OutboxInputError",
]

#: How long an outbox item stays. It only has to live until the stream has carried its INSERT
#: (the stream keeps records 24 h); a week leaves room to inspect what was published, then TTL
#: removes it at no write cost. Its TTL REMOVE is not published (the fan-out filters on INSERT).
DEFAULT_OUTBOX_TTL = timedelta(days=7)
#: EventBridge accepts entries up to 256 KB; the payload travels as an escaped JSON string inside
#: the event detail, so its *escaped* size must leave room for the envelope and other fields.
MAX_PAYLOAD_BYTES = 240 * 1024


_WRITE_ACTIONS = ("Put", "Update", "Delete", "ConditionCheck")


@dataclass(frozen=True)
class OutboxEvent:
    """What :meth:`Outbox.write` committed (returned to the caller, which may log it or
    answer with the id; nothing reads it back).

    :param event_id: the event's id: ``event_id=`` as given to :meth:`Outbox.write`, else a
        new UUID4; the published event's ``detail`` carries it (``eventId``), so its consumers
        deduplicate by it.
    :param event_type: the event's type as given (``"ItemShipped"``); the fan-out's rules match
        on it.
    :param key: the outbox item's primary key, attribute name -> plain string value
        (``key_prefix`` + ``event_id``), to find or delete the item.
    :param expires_at: the outbox item's TTL, epoch seconds: ``occurred_at`` plus the
        outbox's ``ttl`` (7 days by default), after which DynamoDB deletes it; its REMOVE is
        filtered out of the fan-out.
    :param occurred_at: when the event was written, ISO 8601 UTC from the outbox's clock; the
        published event's ``occurredAt``.
    """

    event_id: str
    event_type: str
    key: dict[str, str]
    expires_at: int
    occurred_at: str


class Outbox:
    """Writes application items together with outbox items, in one transaction.

    Args:
        table_name: the table whose stream feeds the fan-out; the outbox item is written here.
        ttl_attribute: the table's TTL attribute name (required: only the caller knows it); the
            outbox item gets epoch seconds ``ttl`` from now (see :mod:`cdc_consumer.ttl`).
        partition_key: the table's partition key attribute name. Default ``"pk"``.
        sort_key: the table's sort key attribute name, if it has one; the outbox item uses the
            same value for both. Default ``None``.
        key_prefix: prefix of the outbox item's key; must match the fan-out's ``key_prefix``.
            Default ``"OUTBOX#"``.
        ttl: how long the outbox item lives. Default 7 days (see ``DEFAULT_OUTBOX_TTL``).
        client: a boto3 DynamoDB client. Default ``boto3.client("dynamodb")``, created here, so
            ``AWS_ENDPOINT_URL`` works locally.
        clock: returns the current time as an aware datetime. Default ``datetime.now(UTC)``;
            injectable for tests.
    """

    def __init__(
        self,
        table_name: str,
        *,
        ttl_attribute: str,
        partition_key: str = "pk",
        sort_key: str | None = None,
        key_prefix: str = OUTBOX_KEY_PREFIX,
        ttl: timedelta = DEFAULT_OUTBOX_TTL,
        client: Any = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        problems = [
            f"{name}={value!r}: give a non-empty string"
            for name, value in (
                ("table_name", table_name),
                ("ttl_attribute", ttl_attribute),
                ("partition_key", partition_key),
                ("key_prefix", key_prefix),
            )
            if not isinstance(value, str) or not value
        ]
        if sort_key is not None and (not isinstance(sort_key, str) or not sort_key):
            problems.append(f"sort_key={sort_key!r}: give the sort key's name, or None")
        reserved = set(OutboxItem.attributes())
        clashes = sorted(reserved & {ttl_attribute, partition_key, sort_key})
        if clashes:
            problems.append(
                f"attribute names {clashes} clash with the outbox item's own attributes "
                f"{sorted(reserved)}"
            )
        if problems:
            raise OutboxInputError("invalid Outbox settings: " + "; ".join(problems))
        ttl_after(ttl)  # rejects non-positive or longer-than-five-years durations, clearly
        self.table_name = table_name
        self.ttl_attribute = ttl_attribute
        self.partition_key = partition_key
        self.sort_key = sort_key
        self.key_prefix = key_prefix
        self.ttl = ttl
        self._client = client if client is not None else boto3.client("dynamodb")
        self._clock = clock or (lambda: datetime.now(UTC))
        self._serializer = TypeSerializer()

    def write(
        self,
        actions: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        event_type: str,
        payload: Mapping[str, Any] | str,
        event_id: str | None = None,
    ) -> OutboxEvent:
        """Commit ``actions`` and one outbox item in a single ``TransactWriteItems``.

        Args:
            actions: the application's write(s) in boto3 client shape, exactly as
                ``transact_write_items`` takes them (``{"Put": {...}}``, ``{"Update": {...}}``,
                ``{"Delete": {...}}`` or ``{"ConditionCheck": {...}}``, each with its
                ``TableName``); one mapping or a sequence of up to 99.
            event_type: the event's type; becomes the EventBridge detail-type (≤ 128 chars).
            payload: a JSON-serializable mapping, or JSON text. Stored as JSON text (keys
                sorted) so the event carries it unchanged. ``Decimal`` is not JSON: convert it
                (``str`` keeps every digit).
            event_id: the event's id. Default a random UUID4. Give your own to make a retried
                business operation idempotent: a second write with the same id is a conflict.

        Returns:
            The committed :class:`OutboxEvent`.

        Raises:
            OutboxInputError: bad arguments; nothing was sent.
            OutboxConflictError: a condition failed (yours, or the outbox id already exists);
                neither item was written.
            OutboxCancelledError: the transaction was cancelled for another reason (e.g. a
                concurrent transaction on the same item); nothing was written.
            botocore.exceptions.ClientError: any other DynamoDB error, unchanged.
        """
        app_actions = _check_actions(actions)
        payload_text = _check_event(event_type, payload, event_id)
        event_id = event_id or str(uuid.uuid4())
        outbox_put, event = self._outbox_item(event_id, event_type, payload_text)
        try:
            self._client.transact_write_items(
                TransactItems=[*app_actions, outbox_put],
                # One token per call: the SDK's automatic retry of a call whose response was
                # lost is then idempotent (DynamoDB replays the first outcome for 10 minutes)
                # instead of failing the outbox item's condition as a false conflict.
                ClientRequestToken=str(uuid.uuid4()),
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                raise
            raise _cancellation_error(error, len(app_actions)) from error
        return event

    def _outbox_item(
        self, event_id: str, event_type: str, payload_text: str
    ) -> tuple[dict[str, Any], OutboxEvent]:
        """The outbox item's conditional Put, and the event it describes."""
        now = self._clock()
        key_value = f"{self.key_prefix}{event_id}"
        key = {self.partition_key: key_value}
        if self.sort_key:
            key[self.sort_key] = key_value
        occurred_at = now.astimezone(UTC).isoformat(timespec="milliseconds")
        expires_at = ttl_after(self.ttl, now=now)
        item = {
            **key,
            **OutboxItem(event_id, event_type, payload_text, occurred_at).to_dict(),
            self.ttl_attribute: expires_at,
        }
        outbox_put = {
            "Put": {
                "TableName": self.table_name,
                "Item": {name: self._serializer.serialize(value) for name, value in item.items()},
                # A reused event id must not overwrite an event that was already published.
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": self.partition_key},
            }
        }
        event = OutboxEvent(
            event_id=event_id,
            event_type=event_type,
            key=key,
            expires_at=expires_at,
            occurred_at=occurred_at,
        )
        return outbox_put, event


def _check_event(event_type: Any, payload: Any, event_id: Any) -> str:
    """The payload as JSON text; :class:`OutboxInputError` naming every bad argument."""
    problems: list[str] = []
    if not isinstance(event_type, str) or not event_type.strip():
        problems.append(f"event_type={event_type!r}: give a non-empty string")
    elif len(event_type) > MAX_DETAIL_TYPE_LENGTH:
        problems.append(
            f"event_type is {len(event_type)} characters; EventBridge detail-type allows "
            f"at most {MAX_DETAIL_TYPE_LENGTH}"
        )
    payload_text = _payload_text(payload, problems)
    if event_id is not None and (not isinstance(event_id, str) or not event_id):
        problems.append(f"event_id={event_id!r}: give a non-empty string, or None")
    if problems:
        raise OutboxInputError("cannot write the outbox event: " + "; ".join(problems))
    return payload_text


def _check_actions(actions: Any) -> list[Mapping[str, Any]]:
    listed = [actions] if isinstance(actions, Mapping) else actions
    if not isinstance(listed, Sequence) or isinstance(listed, str) or not listed:
        raise OutboxInputError(
            f"actions={actions!r}: give one TransactWriteItems action (e.g. "
            '{"Put": {"TableName": ..., "Item": ...}}) or a non-empty list of them'
        )
    problems = []
    if len(listed) > MAX_TRANSACTION_ACTIONS - 1:
        problems.append(
            f"{len(listed)} actions given; DynamoDB allows {MAX_TRANSACTION_ACTIONS} per "
            f"transaction and the outbox item takes one, so at most "
            f"{MAX_TRANSACTION_ACTIONS - 1}"
        )
    for index, action in enumerate(listed):
        kinds = list(action) if isinstance(action, Mapping) else []
        if len(kinds) != 1 or kinds[0] not in _WRITE_ACTIONS:
            problems.append(
                f"action {index} has keys {kinds or type(action).__name__}; each action "
                f"needs exactly one of {list(_WRITE_ACTIONS)} (boto3 client shape)"
            )
        elif not isinstance(action[kinds[0]], Mapping) or not action[kinds[0]].get("TableName"):
            problems.append(f"action {index} ({kinds[0]}) has no TableName")
    if problems:
        raise OutboxInputError("invalid actions: " + "; ".join(problems))
    return list(listed)


def _payload_text(payload: Any, problems: list[str]) -> str:
    if isinstance(payload, str):
        try:
            json.loads(payload)
        except ValueError as error:
            problems.append(f"payload is a string but not JSON text ({error})")
            return ""
        text = payload
    elif isinstance(payload, Mapping):
        try:
            text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as error:
            problems.append(
                f"payload is not JSON-serializable ({error}); convert Decimal to str or int "
                "and datetime to an ISO-8601 string"
            )
            return ""
    else:
        problems.append(f"payload is a {type(payload).__name__}; give a mapping or JSON text")
        return ""
    escaped = len(json.dumps(text).encode())
    if escaped > MAX_PAYLOAD_BYTES:
        problems.append(
            f"payload is {escaped} bytes once escaped into the event; EventBridge entries are "
            f"limited to 256 KB, so keep it under {MAX_PAYLOAD_BYTES} bytes (publish a "
            "reference to large data instead)"
        )
    return text


def _cancellation_error(error: ClientError, app_count: int) -> OutboxError:
    reasons: list[dict[str, Any]] = list(error.response.get("CancellationReasons") or [])

    def describe(index: int) -> str:
        return "the outbox item" if index == app_count else f"action {index}"

    failed = [
        index
        for index, reason in enumerate(reasons)
        if reason.get("Code") == "ConditionalCheckFailed"
    ]
    if failed:
        return OutboxConflictError(
            "transaction cancelled, nothing was written: the condition of "
            + ", ".join(describe(index) for index in failed)
            + " failed"
            + (" (an event with this event_id already exists)" if app_count in failed else ""),
            failed,
            reasons,
        )
    other = [
        f"{describe(index)}: {reason.get('Code')} ({reason.get('Message', '')})"
        for index, reason in enumerate(reasons)
        if reason.get("Code") not in (None, "None")
    ]
    return OutboxCancelledError(
        "transaction cancelled, nothing was written: "
        + ("; ".join(other) or error.response.get("Error", {}).get("Message", "no reason"))
        + ". Retrying may succeed.",
        reasons,
    )
