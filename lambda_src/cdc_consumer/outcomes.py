"""Where the batch goes after each step, and the two ways a record leaves it unapplied.

A step of the batch loop answers with where to go on: :class:`Next` (carry on at a position:
the next record, or the one after a poison record found while committing), :class:`Stop`
(report the record at a position to Lambda: nothing from it on was applied) or :data:`DONE`.
:class:`Outcomes` quarantines a poison record or fails a record, with their log lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from cdc_consumer import logs
from cdc_consumer.exceptions import AccessDeniedError, TransientError
from cdc_consumer.quarantine import send_to_quarantine
from cdc_consumer.routes import item_identifier
from cdc_consumer.tally import Tally


class _At:
    """A step at a record's ``position``. Plain slotted classes, not dataclasses: one is made
    per record, and a frozen dataclass costs several times more to make (and to import)."""

    __slots__ = ("position",)

    def __init__(self, position: int) -> None:
        self.position = position

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.position == self.position  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.position))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(position={self.position})"


class Next(_At):
    """Carry on with the record at ``position`` (everything before it is settled)."""

    __slots__ = ()


class Stop(_At):
    """Report the record at ``position`` (nothing from it on was applied)."""

    __slots__ = ()


class Done:
    """Every record is settled."""

    __slots__ = ()


DONE: Final = Done()
Step = Next | Stop | Done


def sequence_number(record: Any) -> str | None:
    """The sequence number that names a record in ``batchItemFailures`` in its route
    (``dynamodb.SequenceNumber`` of a DynamoDB stream record, :mod:`cdc_consumer.routes`); None
    when it has none."""
    return item_identifier(record)


#: The error codes of a refused permission: AWS's JSON services, its XML ones (SQS, S3, SNS).
ACCESS_DENIED_CODES: Final = frozenset({"AccessDeniedException", "AccessDenied"})


def access_denial(error: BaseException | None) -> BaseException | None:
    """The AccessDenied ``ClientError`` that ``error`` is or wraps (its ``__cause__`` chain), if
    any: code ``AccessDeniedException`` / ``AccessDenied``, or any HTTP 403 (Forbidden: the
    caller's credentials or role refused, whatever the body says; an emulator answering a
    JSON service in XML leaves the code unparsed). Decided on the response's data, never on
    its message's text."""
    while error is not None:
        response = getattr(error, "response", None)
        if isinstance(response, Mapping):
            code = response.get("Error", {}).get("Code", "")
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in ACCESS_DENIED_CODES or status == 403:
                return error
        error = error.__cause__
    return None


def event_id(record: Any) -> Any:
    return record.get("eventID") if isinstance(record, Mapping) else None


class Clients(Protocol):
    """What :class:`Outcomes` needs of the processor: its SQS client."""

    @property
    def sqs(self) -> Any: ...


@dataclass
class Outcomes:
    """Quarantine or fail the records of one batch, each with its log line."""

    consumer: str
    queue_url: str
    records: Sequence[Any]
    tally: Tally
    #: Where the SQS client comes from (the processor: its client is made on first use).
    clients: Clients
    #: The shard the batch came from, when its event said (kept in quarantine messages).
    shard: str | None = None

    def quarantine(self, position: int, error: Exception) -> Stop | None:
        """Send the record whole to the quarantine queue (None: go on after it); a failed send
        stops at it instead, so a poison record is never dropped."""
        record = self.records[position]
        try:
            message_id = send_to_quarantine(
                self.clients.sqs, self.queue_url, self.consumer, record, error, shard=self.shard
            )
        except TransientError as send_error:
            return self.fail(position, send_error, poisonError=logs.describe_error(error))
        self.tally.quarantined()
        logs.log(
            "ERROR",
            "record quarantined",
            consumer=self.consumer,
            sequenceNumber=sequence_number(record),
            eventID=event_id(record),
            error=logs.describe_error(error),
            messageId=message_id,
        )
        return None

    def foreign_marker(self, position: int, error: Exception) -> Stop:
        """Stop at a record whose marker another stream's consumer wrote: counted
        (``ForeignMarkers``, alarmed) and reported, never skipped as a duplicate."""
        self.tally.foreign_marker()
        return self.fail(position, error, reason="foreign marker")

    def fail(
        self, position: int, error: Exception | None, reason: str = "transient", **fields: Any
    ) -> Stop:
        """Stop at the record: it is reported to Lambda and delivered again. A failure that is
        an AccessDenied (its own, or what it wraps) raises :class:`AccessDeniedError` instead:
        the role is wrong, not the record, and retrying cannot fix it."""
        record = self.records[position]
        denied = access_denial(error)
        if denied is not None:
            raise AccessDeniedError(
                f"record {sequence_number(record)}: {denied} (the function's role does not allow "
                "this call; grant it the action: retrying the record cannot)"
            ) from denied
        logs.log(
            "WARNING" if reason == "deadline" else "ERROR",
            "record failed",
            consumer=self.consumer,
            sequenceNumber=sequence_number(record),
            eventID=event_id(record),
            reason=reason,
            error=logs.describe_error(error) if error else None,
            **fields,
        )
        return Stop(position)
