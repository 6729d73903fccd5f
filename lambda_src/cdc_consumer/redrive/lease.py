"""The redrive lease: one redrive of a consumer's failures at a time.

A redrive reads the quarantine queue with ``ReceiveMessage``, which hides each message it
receives for the visibility timeout: while it looks for a change that must go first (the hold of
docs/design.md §5), while it replays a quarantined record, while it looks for records it
quarantined again. A second redrive of the same consumer running then sees those messages as
absent, and can apply an item's later change ahead of the earlier one the first one hides; two
quarantine drains split the messages between them, so an item's later change can be applied by
one before its earlier change by the other. No reading of the queue is exact while another
reader holds messages (``ApproximateNumberOfMessagesNotVisible`` is approximate and counts
other consumers' messages too), so the redrives of one consumer do not overlap: each run takes
the consumer's lease first, and a run that finds it held touches nothing.

The lease is one item of the consumer's idempotency table, ``{consumer}#redrive-lease#{stream
ARN}``, written with a conditional ``PutItem`` (taken when absent, expired, or already this
run's), renewed before each invocation of the consumer, deleted (conditionally, only this run's)
at the end. It lasts :data:`DEFAULT_LEASE_SECONDS`, longer than any one invocation of a Lambda
function, so a live holder renews it before it runs out, and a crashed holder's lease frees
itself; its ``expiration`` lets the table's TTL remove a lease left behind. The live consumer
never receives from the quarantine (it only sends), so it needs no lease.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.exceptions import ClientError

from cdc_consumer.defaults import EXPIRATION_ATTRIBUTE, ID_ATTRIBUTE, STREAM_ATTRIBUTE
from cdc_consumer.exceptions import InvocationError
from cdc_consumer.redrive.defaults import DEFAULT_LEASE_SECONDS
from cdc_consumer.redrive.invokers import Invoker
from cdc_consumer.redrive.report import LeaseHeld, RedriveReport
from cdc_consumer.redrive_shapes import redrive_lease_key

__all__ = ["LeasedInvoker", "RedriveLease", "stop_when_lost", "under_lease"]

_OWNER = "owner"
_EXPIRES_AT = "expiresAt"

#: The lease item stays in the table this long after it expired, for a person to read, before
#: the table's TTL may remove it (a released lease is deleted at once).
_KEEP_SECONDS = 24 * 3600


@dataclass
class RedriveLease:
    """The lease of one consumer's redrives (see the module docstring).

    Parameters:
        dynamodb_client: boto3 DynamoDB client.
        table_name: the consumer's idempotency table (``IDEMPOTENCY_TABLE_NAME``).
        consumer_name, stream_arn: whose lease.
        duration_seconds: how long a take or renewal holds it (:data:`DEFAULT_LEASE_SECONDS`).
        clock: the time (epoch seconds).
    """

    dynamodb_client: Any
    table_name: str
    consumer_name: str
    stream_arn: str
    duration_seconds: int = DEFAULT_LEASE_SECONDS
    clock: Callable[[], float] = time.time
    owner: str = field(default_factory=lambda: uuid.uuid4().hex)
    #: The holder found when the lease was lost or not taken; None while this run holds it.
    held: LeaseHeld | None = None

    def take(self) -> LeaseHeld | None:
        """Take (or renew) the lease; None when this run holds it, else who does."""
        now = int(self.clock())
        expires = now + self.duration_seconds
        try:
            self.dynamodb_client.put_item(
                TableName=self.table_name,
                Item={
                    ID_ATTRIBUTE: {"S": redrive_lease_key(self.consumer_name, self.stream_arn)},
                    _OWNER: {"S": self.owner},
                    _EXPIRES_AT: {"N": str(expires)},
                    STREAM_ATTRIBUTE: {"S": self.stream_arn},
                    EXPIRATION_ATTRIBUTE: {"N": str(expires + _KEEP_SECONDS)},
                },
                ConditionExpression="attribute_not_exists(#id) OR #exp < :now OR #owner = :me",
                ExpressionAttributeNames={
                    "#id": ID_ATTRIBUTE,
                    "#exp": _EXPIRES_AT,
                    "#owner": _OWNER,
                },
                ExpressionAttributeValues={":now": {"N": str(now)}, ":me": {"S": self.owner}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            self.held = self._holder(error.response.get("Item") or {})
            return self.held
        self.held = None
        return None

    def wait(
        self, wait_seconds: float, poll_seconds: float, sleep: Callable[[float], None]
    ) -> LeaseHeld | None:
        """Take the lease, trying again every ``poll_seconds`` for up to ``wait_seconds``."""
        deadline = time.monotonic() + wait_seconds
        while (held := self.take()) is not None and time.monotonic() < deadline:
            sleep(min(poll_seconds, max(0.0, deadline - time.monotonic())))
        return held

    def release(self) -> None:
        """Give the lease back, if this run still holds it."""
        try:
            self.dynamodb_client.delete_item(
                TableName=self.table_name,
                Key={ID_ATTRIBUTE: {"S": redrive_lease_key(self.consumer_name, self.stream_arn)}},
                ConditionExpression="#owner = :me",
                ExpressionAttributeNames={"#owner": _OWNER},
                ExpressionAttributeValues={":me": {"S": self.owner}},
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise  # another took it after ours expired: it is theirs to release

    def _holder(self, item: dict[str, Any]) -> LeaseHeld:
        owner = item.get(_OWNER, {}).get("S", "unknown")
        expires = int(item.get(_EXPIRES_AT, {}).get("N", "0"))
        return LeaseHeld(self.consumer_name, owner, expires)


@dataclass
class LeasedInvoker:
    """``invoker``, with the lease renewed before each invocation: a run that lost its lease
    (it ran past it and another redrive took it) invokes nothing more."""

    invoker: Invoker
    lease: RedriveLease

    def invoke(self, event: dict[str, Any]) -> dict[str, Any] | None:
        if self.lease.held is not None or self.lease.take() is not None:
            assert self.lease.held is not None
            raise InvocationError(f"lease lost: {self.lease.held.reason}", error_type="LeaseLost")
        return self.invoker.invoke(event)


def under_lease(
    redrive: Any, report: RedriveReport, body: Callable[[RedriveLease | None], None]
) -> RedriveReport:
    """``body`` run under the consumer's lease, taken waiting up to the redrive's
    ``lease_wait_seconds`` and given back after; not run at all when another redrive holds it
    (``report.busy`` says who). Without a lease table (or a name), run without (noted).

    ``redrive`` is a :class:`~cdc_consumer.redrive.replay.Redrive` (or has its ``lease_table``,
    ``dynamodb_client``, ``consumer_name``, ``function_name``, ``stream_arn``,
    ``lease_wait_seconds`` and ``lease_poll_seconds``)."""
    name = redrive.consumer_name or redrive.function_name
    if not redrive.lease_table or not name:
        report.notes.append(
            "no redrive lease (no idempotency table, or no consumer name): another redrive"
            " of this consumer at the same time could hide a change this one must wait for"
        )
        body(None)
        return report
    if redrive.dynamodb_client is None:
        redrive.dynamodb_client = boto3.client("dynamodb")
    lease = RedriveLease(redrive.dynamodb_client, redrive.lease_table, name, redrive.stream_arn)
    report.busy = lease.wait(redrive.lease_wait_seconds, redrive.lease_poll_seconds, time.sleep)
    if report.busy is not None:
        return report
    try:
        body(lease)
    finally:
        if lease.held is not None:
            report.busy = lease.held  # lost midway: another redrive took it over
        else:
            lease.release()
    return report


def stop_when_lost(
    lease: RedriveLease | None, should_stop: Callable[[], bool] | None
) -> Callable[[], bool] | None:
    """``should_stop``, and stop once the lease was lost (another redrive took it)."""
    if lease is None:
        return should_stop
    return lambda: lease.held is not None or bool(should_stop and should_stop())
