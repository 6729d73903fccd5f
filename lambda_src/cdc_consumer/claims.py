"""Claims: the bookkeeping of side effects (external calls), in the idempotency table, as
Powertools does.

Claims are the third kind of the engine's bookkeeping, beside the ledger's entries
(:mod:`cdc_consumer.batch_ledger`) and per-record processed-markers: a side effect is any
``change -> None`` callable (:data:`cdc_consumer.sinks.protocol.SideEffect`, registered with
``@processor.side_effect``), and the engine guards each call with a claim, whatever it calls
(a webhook, an OpenSearch index, a queue). A side effect cannot join a DynamoDB transaction,
so it is guarded by a claim:

1. **claim** — put ``{id, expiration, status: INPROGRESS, in_progress_expiration}`` if no
   record exists, or the existing one expired, or it is an in-progress claim whose
   invocation's deadline passed (it crashed);
2. **call** the side effect;
3. **complete** — set ``status: COMPLETED``; or, if the call raised, **release** (delete) the
   claim so a retry may run it again.

The attribute names and values are those of Powertools for AWS Lambda's idempotency utility
(``id``; ``expiration`` epoch seconds; ``status`` INPROGRESS|COMPLETED;
``in_progress_expiration`` epoch milliseconds), so the same table serves both.

A side effect runs at least once and, unless an invocation dies between the call and
*complete*, exactly once: a crash mid-call leaves an INPROGRESS claim that expires after the
side-effect timeout (``in_progress_expiration``: the claim's time plus the timeout, or the
invocation's deadline if that comes first), after which a redelivery runs the call again.

The rule for a retry that meets an in-progress claim (:class:`SideEffectMode`):
it waits for the claim to expire and takes it over when the wait (at most one side-effect
timeout) plus one side-effect timeout still fit in its invocation before the safety margin;
otherwise it fails the record, to be retried. The cost of the wait is billed duration: up to
one side-effect timeout per crashed claim, instead of a batch sent to the on-failure
destination after a handful of quick retries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer import defaults, logs
from cdc_consumer.change import Change
from cdc_consumer.deadline import Deadline
from cdc_consumer.defaults import (
    CLAIM_TAKEOVER_SLACK_MS,
    EXPIRATION_ATTRIBUTE,
    ID_ATTRIBUTE,
    IN_PROGRESS_EXPIRATION_ATTRIBUTE,
    STATUS_ATTRIBUTE,
    STATUS_COMPLETED,
    STATUS_IN_PROGRESS,
    STREAM_ATTRIBUTE,
    marker_ttl_seconds,
)
from cdc_consumer.exceptions import (
    ForeignMarkerError,
    MissingImageError,
    PermanentError,
    SideEffectInProgressError,
    TransientError,
)
from cdc_consumer.outcomes import Next, Outcomes, Step
from cdc_consumer.record_writes import foreign_stream
from cdc_consumer.sinks.protocol import SideEffect
from cdc_consumer.tally import Tally

#: Claim window when there is no Lambda context to give the invocation's deadline: 15 min,
#: Lambda's longest timeout, so no invocation can still be running when it ends.
DEFAULT_IN_PROGRESS_MS = 15 * 60 * 1000

_CLAIM_CONDITION = (
    "attribute_not_exists(#id) OR #expiration < :now OR "
    "(#status = :in_progress AND attribute_exists(#in_progress_expiration) "
    "AND #in_progress_expiration < :now_ms)"
)
_NAMES = {
    "#id": ID_ATTRIBUTE,
    "#expiration": EXPIRATION_ATTRIBUTE,
    "#status": STATUS_ATTRIBUTE,
    "#in_progress_expiration": IN_PROGRESS_EXPIRATION_ATTRIBUTE,
}


class Claim(Enum):
    """Result of :meth:`SideEffectClaims.claim`."""

    CLAIMED = "claimed"
    """This invocation now owns the side effect: call it, then complete or release."""
    ALREADY_COMPLETED = "already_completed"
    """A previous delivery completed it: skip (a duplicate)."""


class SideEffectClaims:
    """Claim / complete / release records in the idempotency table ``table``.

    ``clock`` returns epoch seconds (``time.time`` by default; tests pass their own).
    """

    def __init__(self, client: Any, table: str, clock: Callable[[], float]) -> None:
        self.client = client
        self.table = table
        self.clock = clock

    def claim(self, claim_id: str, window_ms: int | None, stream: str | None = None) -> Claim:
        """Take the claim, or say the side effect already completed.

        ``window_ms``: how long the claim counts as in progress (``in_progress_expiration``):
        the side-effect timeout, or the invocation's remaining time when shorter, so a crashed
        invocation's claim expires soon after it. ``stream``: recorded on the claim. Raises
        :class:`SideEffectInProgressError` (with the claim's expiry) when another invocation
        holds an unexpired claim, :class:`TransientError` when DynamoDB fails.
        """
        now = self.clock()
        now_ms = int(now * 1000)
        window_ms = DEFAULT_IN_PROGRESS_MS if window_ms is None else window_ms
        item = {
            ID_ATTRIBUTE: {"S": claim_id},
            EXPIRATION_ATTRIBUTE: {"N": str(int(now) + marker_ttl_seconds())},
            STATUS_ATTRIBUTE: {"S": STATUS_IN_PROGRESS},
            IN_PROGRESS_EXPIRATION_ATTRIBUTE: {"N": str(now_ms + window_ms)},
        }
        if stream:
            item[STREAM_ATTRIBUTE] = {"S": stream}
        try:
            self.client.put_item(
                TableName=self.table,
                Item=item,
                ConditionExpression=_CLAIM_CONDITION,
                ExpressionAttributeNames=_NAMES,
                ExpressionAttributeValues={
                    ":now": {"N": str(int(now))},
                    ":now_ms": {"N": str(now_ms)},
                    ":in_progress": {"S": STATUS_IN_PROGRESS},
                },
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise TransientError(f"could not claim side effect {claim_id}: {error}") from error
            existing = error.response.get("Item") or self._read(claim_id)
            return self._existing(claim_id, existing, item)
        except BotoCoreError as error:
            raise TransientError(f"could not claim side effect {claim_id}: {error}") from error
        return Claim.CLAIMED

    def complete(self, claim_id: str) -> None:
        """Mark the side effect done; its record lives on until ``expiration``."""
        now = self.clock()
        self._call(
            "complete",
            claim_id,
            self.client.update_item,
            Key={ID_ATTRIBUTE: {"S": claim_id}},
            UpdateExpression="SET #status = :completed, #expiration = :expiration",
            ExpressionAttributeNames={
                "#status": STATUS_ATTRIBUTE,
                "#expiration": EXPIRATION_ATTRIBUTE,
            },
            ExpressionAttributeValues={
                ":completed": {"S": STATUS_COMPLETED},
                ":expiration": {"N": str(int(now) + marker_ttl_seconds())},
            },
        )

    def release(self, claim_id: str) -> None:
        """Drop the claim after a failed call, so the retry can claim it again."""
        self._call(
            "release", claim_id, self.client.delete_item, Key={ID_ATTRIBUTE: {"S": claim_id}}
        )

    def _call(self, what: str, claim_id: str, operation: Any, **kwargs: Any) -> None:
        try:
            operation(TableName=self.table, **kwargs)
        except (ClientError, BotoCoreError) as error:
            raise TransientError(f"could not {what} side effect {claim_id}: {error}") from error

    def _read(self, claim_id: str) -> dict[str, Any] | None:
        try:
            response = self.client.get_item(
                TableName=self.table, Key={ID_ATTRIBUTE: {"S": claim_id}}, ConsistentRead=True
            )
        except (ClientError, BotoCoreError) as error:
            raise TransientError(f"could not read side effect {claim_id}: {error}") from error
        item: dict[str, Any] | None = response.get("Item")
        return item

    def _existing(self, claim_id: str, item: dict[str, Any] | None, ours: dict[str, Any]) -> Claim:
        status = (item or {}).get(STATUS_ATTRIBUTE, {}).get("S")
        other = foreign_stream(ours, item)
        if status == STATUS_COMPLETED and other is not None:
            raise ForeignMarkerError(
                f"side effect {claim_id} was completed for another stream ({other}): two "
                "consumers write claims under one name into this idempotency table, so this is "
                "not a duplicate; the record is not skipped. Give the consumers different names"
            )
        if status == STATUS_COMPLETED:
            return Claim.ALREADY_COMPLETED
        if item is None:
            raise TransientError(
                f"side effect {claim_id} was claimed and released while we looked; retry"
            )
        until = item.get(IN_PROGRESS_EXPIRATION_ATTRIBUTE, {}).get("N")
        raise SideEffectInProgressError(
            f"side effect {claim_id} is in progress in another invocation "
            f"(status {status}, in progress until epoch ms {until}); not running it twice",
            until_ms=int(until) if isinstance(until, str) and until.isdigit() else None,
        )


@dataclass
class SideEffectMode:
    """Runs a record's side effects, each once, guarded by its claim.

    ``given_timeout_ms``: the side-effect timeout the processor was given, how long a claim
    stays in progress (see :mod:`cdc_consumer.claims` for the rule and its cost); None: the
    default, which follows the function's timeout as ``deadline`` reads it.
    """

    side_effects: Sequence[tuple[str, SideEffect]]
    claims: SideEffectClaims
    consumer: str
    tally: Tally
    outcomes: Outcomes
    deadline: Deadline
    given_timeout_ms: int | None
    clock: Callable[[], float]
    sleep: Callable[[float], None]

    def timeout_ms(self) -> int:
        """The side-effect timeout: the one given, else the default for the function's."""
        if self.given_timeout_ms is not None:
            return self.given_timeout_ms
        return defaults.side_effect_timeout_ms(self.deadline.timeout_ms)

    def run(self, position: int, change: Change) -> Step:
        ran = False
        for name, side_effect in self.side_effects:
            claim_id = f"{self.consumer}#{change.event_id}#{name}"
            try:
                if self._claim(claim_id, change) is Claim.ALREADY_COMPLETED:
                    continue
                self._call(claim_id, side_effect, change)
                ran = True
                self.claims.complete(claim_id)
            except PermanentError as error:
                return self.outcomes.quarantine(position, error) or Next(position + 1)
            except ForeignMarkerError as error:
                return self.outcomes.foreign_marker(position, error)
            except MissingImageError as error:  # it read an image the stream never carries
                raise error.read_by(f"side effect {name!r}") from None
            except Exception as error:
                return self.outcomes.fail(position, error)
        self.tally.side_effects_done(position, ran=ran)
        return Next(position + 1)

    def window_ms(self) -> int:
        """How long a claim taken now stays in progress: the side-effect timeout, or the
        invocation's remaining time when that is shorter."""
        remaining = self.deadline.remaining()
        timeout = self.timeout_ms()
        return timeout if remaining is None else max(0, min(timeout, remaining))

    def _claim(self, claim_id: str, change: Change) -> Claim:
        """Claim; on a claim in progress elsewhere, wait for it to expire and take it over when
        this invocation can afford the wait, else raise :class:`SideEffectInProgressError`."""
        try:
            return self.claims.claim(claim_id, self.window_ms(), change.source_arn)
        except SideEffectInProgressError as busy:
            wait_ms = self._affordable_wait(busy.until_ms)
            if wait_ms is None:
                raise
            logs.log(
                "INFO",
                "waiting for a side effect claim to expire",
                consumer=self.consumer,
                claimId=claim_id,
                waitMs=wait_ms,
            )
            self.sleep(wait_ms / 1000)
            return self.claims.claim(claim_id, self.window_ms(), change.source_arn)

    def _affordable_wait(self, until_ms: int | None) -> int | None:
        """Milliseconds to wait for a claim expiring at ``until_ms``, or None when waiting does
        not fit: a claim longer than our timeout (another configuration's), or not enough time
        left to wait and then run the side effect within its timeout before the margin."""
        if until_ms is None:
            return None
        timeout = self.timeout_ms()
        wait = max(0, until_ms - int(self.clock() * 1000)) + CLAIM_TAKEOVER_SLACK_MS
        left = self.deadline.time_left_ms()
        if wait > timeout + CLAIM_TAKEOVER_SLACK_MS or (left is not None and left - wait < timeout):
            return None
        return wait

    def _call(self, claim_id: str, side_effect: SideEffect, change: Change) -> None:
        """Call the side effect; on any error release its claim (so a retry may run it
        again) and raise the error. A call that outlived its claim is logged: a retry may
        have taken the claim over and run it again."""
        window = self.window_ms()
        started = self.clock()
        try:
            side_effect(change)
        except Exception:
            try:
                self.claims.release(claim_id)
            except TransientError as release_error:
                logs.log(
                    "WARNING",
                    "side effect claim not released",
                    consumer=self.consumer,
                    claimId=claim_id,
                    error=logs.describe_error(release_error),
                )
            raise
        took_ms = round((self.clock() - started) * 1000)
        if took_ms > window:
            logs.log(
                "WARNING",
                "side effect overran its timeout",
                consumer=self.consumer,
                claimId=claim_id,
                tookMs=took_ms,
                timeoutMs=window,
            )
