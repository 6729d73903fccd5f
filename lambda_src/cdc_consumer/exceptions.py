"""Errors of the consumer runtime.

Two families matter to a handler author:

* :class:`PermanentError` (and its subclasses) marks a record as *poison*: processing it again
  will fail again. The runtime sends the record and the error to the quarantine queue, emits the
  ``RecordsQuarantined`` metric and carries on with the next record.
* Any other exception is *transient*: the runtime stops, commits nothing past the failing
  record, and reports it to Lambda so the event source mapping retries from there.
"""

from __future__ import annotations


class CdcConsumerError(Exception):
    """Base class of every error this package raises."""


class PermanentError(CdcConsumerError):
    """A record that can never be processed: raise it from a projection or side effect.

    The record is quarantined with this error's type and message, then processing continues.
    """


class UndecodableRecordError(PermanentError):
    """A stream record that is not a DynamoDB stream record this runtime can decode."""


class InvalidActionError(PermanentError):
    """A projection returned something that is not a valid TransactWriteItems action list.

    Deterministic: the same change yields the same actions, so retrying cannot help.
    """


class RejectedByDynamoDBError(PermanentError):
    """DynamoDB refused a record's actions for a reason retrying cannot fix.

    (a validation error, or a condition in the projection's own actions that does not hold).
    """


class TransientError(CdcConsumerError):
    """A failure worth retrying (the runtime's own wrapper for DynamoDB/SQS failures)."""


class SideEffectInProgressError(TransientError):
    """Another invocation holds an unexpired claim on this side effect; retry later."""


class ConfigurationError(CdcConsumerError):
    """The processor cannot run: a table, queue or name is missing. Raised out of ``handle``."""


class MalformedBatchError(CdcConsumerError):
    """The event cannot be processed record by record (no ``Records``, or a record without a
    sequence number, which cannot be reported alone). Raised out of ``handle`` so Lambda fails
    the whole batch."""
