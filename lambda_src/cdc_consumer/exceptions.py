"""Errors of the consumer runtime.

Two families matter to a handler author:

* :class:`PermanentError` (and its subclasses) marks a record as *poison*: processing it again
  will fail again. The runtime sends the record and the error to the quarantine queue, emits the
  ``RecordsQuarantined`` metric and carries on with the next record.
* Any other exception is *transient*: the runtime stops, commits nothing past the failing
  record, and reports it to Lambda so the event source mapping retries from there.

The other errors are the library's own, each a :class:`CdcConsumerError` (and a ``ValueError``
where the caller passed an invalid value): filter patterns, redrive, TTL values, the outbox.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cdc_consumer.backfill.shapes import BackfillRefusal


class CdcConsumerError(Exception):
    """Base class of every error this package raises."""


class PermanentError(CdcConsumerError):
    """A record that can never be processed: raise it from a projection or side effect.

    The record is quarantined with this error's type and message, then processing continues.

    ``actions`` (keyword-only; default none): *compensating* TransactWriteItems actions a
    projection needs committed even though the record is quarantined, for instance to take
    the OLD image's earlier contribution out of a view when the NEW image cannot be read
    (otherwise the view keeps counting a row whose current image it no longer understands).
    The runtime sends the quarantine message first, then commits the record's processed-marker
    with these actions like any record's, so they take effect exactly once. Only a projection's
    ``actions`` are committed; a side effect's are ignored (it has no transaction to join).
    """

    def __init__(self, message: str, *, actions: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(message)
        self.actions: list[Mapping[str, Any]] = list(actions)


class UndecodableRecordError(PermanentError):
    """A stream record that is not a DynamoDB stream record this runtime can decode."""


class MissingVersionError(PermanentError):
    """A projection read :attr:`Change.version` of a record without
    ``ApproximateCreationDateTime``: it cannot be ordered, so it is poison."""


class InvalidActionError(PermanentError):
    """A projection returned something that is not a valid TransactWriteItems action list.

    Deterministic: the same change yields the same actions, so retrying cannot help.
    """


class RejectedByDynamoDBError(PermanentError):
    """DynamoDB refused a record's actions for a reason retrying cannot fix.

    (a validation error, DynamoDB's or botocore's parameter validation before sending, or a
    condition in the projection's own actions that does not hold).
    """


class TransientError(CdcConsumerError):
    """A failure worth retrying (the runtime's own wrapper for DynamoDB/SQS failures)."""


class ForeignMarkerError(CdcConsumerError):
    """The record's processed-marker (or side-effect claim) exists, but was written for another
    stream: another consumer writes markers under this consumer's name into this idempotency
    table, so treating the record as a duplicate would drop it. The record is reported failed
    (never skipped) and the ``ForeignMarkers`` metric counts it; rename one consumer (the
    StreamConsumer construct refuses such a pair at synthesis)."""


class SideEffectInProgressError(TransientError):
    """Another invocation holds an unexpired claim on this side effect; retry later.

    ``until_ms``: when the claim expires (epoch milliseconds), when the claim says.
    """

    def __init__(self, message: str, until_ms: int | None = None) -> None:
        super().__init__(message)
        self.until_ms = until_ms


class ConfigurationError(CdcConsumerError):
    """The processor cannot run: a table, queue or name is missing. Raised out of ``handle``."""


class MissingImageError(ConfigurationError):
    """A record's stream view type lacks an image a registered projection or side effect reads
    (declared with ``reads=``, or read from the :class:`~cdc_consumer.Change`).

    A misconfiguration, not a bad record: every record of that stream lacks the image, so
    quarantining them one by one would empty the stream into the queue while the view never
    changes. ``handle`` commits what came before the record, then raises this error: a
    function error, which the Errors alarm reports and Lambda retries (then sends to the
    on-failure destination), so no record is counted as processed without its effect. Fix it
    by giving the table the stream view type the consumer needs (a new stream), or by not
    reading the image.

    :param sequence_number: the record's sequence number.
    :param view_type: the record's stream view type (``KEYS_ONLY``, ``NEW_IMAGE``, ...).
    :param missing: the image names it lacks (``NewImage``, ``OldImage``).
    :param reader: the projection or side effect that reads them.
    """

    def __init__(
        self, sequence_number: str, view_type: str, missing: Sequence[str], reader: str
    ) -> None:
        super().__init__(
            f"record {sequence_number}: the stream's view type is {view_type}, which carries "
            f"no {' and no '.join(missing)}, but {reader} reads it; give the table a stream "
            f"whose view type carries {' and '.join(missing)} (NEW_AND_OLD_IMAGES carries both)"
        )
        self.sequence_number = sequence_number
        self.view_type = view_type
        self.missing = list(missing)
        self.reader = reader

    def read_by(self, reader: str) -> MissingImageError:
        """The same error, naming ``reader`` as the one reading, so the message says which
        registered function to fix or declare.

        :param reader: how to name the reader, e.g. ``"projection 'totals'"`` or
            ``"side effect 'notify'"``.
        """
        return MissingImageError(self.sequence_number, self.view_type, self.missing, reader)


def projection_reader(projection: Any) -> str:
    """How a :class:`MissingImageError` names the projection that reads an image."""
    return f"projection {getattr(projection, '__name__', repr(projection))!r}"


class AccessDeniedError(ConfigurationError):
    """An AWS call of the consumer was refused with AccessDenied: its role lacks the action.

    Not a bad record, and not transient: retrying the record cannot grant a permission, and
    reporting it as one failed record would look like a hiccup (no ``Errors`` metric, only the
    iterator age growing) while every record fails the same way. ``handle`` commits what came
    before the record, logs ``batch failed`` with this error, then raises it: a function error,
    which the Errors alarm reports (Lambda retries the batch, then sends it to the on-failure
    destination). The message names the call and the record; grant the action to the
    function's role (the construct that made the function grants what the runtime uses).
    """


class DeadlineError(CdcConsumerError):
    """The invocation could take no record: less than the safety margin was left at its first.

    Raised out of ``handle`` (a function error, which the Errors alarm reports) instead of
    reporting the first record as failed, which would look like one bad record while every
    invocation of this function fails the same way: its timeout is too short for the margin.
    """


class MalformedBatchError(CdcConsumerError):
    """The event cannot be processed record by record (no ``Records``, or a record without a
    sequence number, which cannot be reported alone). Raised out of ``handle`` so Lambda fails
    the whole batch."""


class FilterPatternError(CdcConsumerError, ValueError):
    """A Lambda filter pattern uses syntax Lambda would reject (or this runtime cannot match).

    A ``ValueError`` too, as it is an invalid argument.
    """


class RedriveError(CdcConsumerError):
    """Base class of the errors redrive raises."""


class MalformedMessageError(RedriveError):
    """A queue message or S3 object redrive cannot use: not JSON, not AWS's shape, fields
    missing. Redrive keeps it and reports the reason."""


class ForeignMessageError(MalformedMessageError):
    """A message or object that belongs to another consumer or another stream, or names
    neither: redrive never replays or deletes it (it keeps it and reports the reason)."""


class RedriveSetupError(RedriveError):
    """An operator mistake that stops a redrive before it starts: a missing queue or bucket, no
    credentials, a stream ARN that is not one, unreadable arguments. The message says what to
    fix; the command line prints it as one line and exits 2."""


class RecordsLostError(RedriveError):
    """Records of a range can no longer be read from the stream.

    :param shard_id: the shard the range is in.
    :param first: the range's first sequence number.
    :param last: the range's last sequence number.
    :param reason: why they cannot be read (trimmed after the retention, a closed shard, ...).
    """

    def __init__(self, shard_id: str, first: str, last: str, reason: str) -> None:
        super().__init__(f"records {first}..{last} of shard {shard_id} are lost: {reason}")
        self.shard_id = shard_id
        self.first = first
        self.last = last
        self.reason = reason


class InvocationError(RedriveError):
    """The consumer failed the whole invocation (a function error or an exception).

    ``error_type``: the function's ``errorType`` (Lambda reports an unhandled exception's class
    name), or the exception's class name in process; what a caller decides on, never the
    message's text."""

    def __init__(self, message: str, error_type: str | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type


class TtlValueError(CdcConsumerError, ValueError):
    """A TTL value DynamoDB would not act on (wrong unit, outside the window, not a number)."""


class OutboxError(CdcConsumerError):
    """Base class of the outbox's errors."""


class OutboxInputError(OutboxError, ValueError):
    """The arguments cannot make a valid transaction; nothing was sent to DynamoDB."""


class OutboxConflictError(OutboxError):
    """A condition failed, so DynamoDB cancelled the transaction: NEITHER item was written.

    ``failed_actions`` lists the indexes (into the actions given to
    :meth:`cdc_consumer.sinks.outbox.Outbox.write`; the outbox item is the last index) whose
    condition failed; ``reasons`` is DynamoDB's ``CancellationReasons`` list as returned.
    """

    def __init__(self, message: str, failed_actions: list[int], reasons: list[dict[str, Any]]):
        super().__init__(message)
        self.failed_actions = failed_actions
        self.reasons = reasons


class OutboxCancelledError(OutboxError):
    """DynamoDB cancelled the transaction for another reason (e.g. ``TransactionConflict`` with a
    concurrent write, throttling): nothing was written; retrying may succeed. ``reasons`` is
    DynamoDB's ``CancellationReasons`` list."""

    def __init__(self, message: str, reasons: list[dict[str, Any]]):
        super().__init__(message)
        self.reasons = reasons


class SnapshotRefusedError(ConfigurationError):
    """A snapshot batch (a backfill's rows, docs/backfill.md) reached a consumer with a
    projection or side effect that cannot take snapshot rows: a delta projection reading OLD and
    NEW images, an external call. Raised before anything of the batch is written."""


class BackfillError(CdcConsumerError):
    """A backfill could not go on (the segment function raises it; the state machine retries)."""


class BackfillRefusedError(BackfillError, ValueError):
    """A backfill refused before anything was written: the message names what was wrong, with
    the value, and what would be right. Not retried. ``refusal`` is the typed reason a caller
    decides on (:class:`cdc_consumer.backfill.shapes.BackfillRefusal`)."""

    def __init__(self, message: str, refusal: BackfillRefusal | None = None) -> None:
        # The contract loads with the first batch, not with a handler's import: imported here.
        from cdc_consumer.backfill.shapes import BackfillRefusal

        super().__init__(message)
        self.refusal = BackfillRefusal.OTHER if refusal is None else refusal
