"""Consumer runtime for DynamoDB Streams: ordered, exactly-once projections, safe side effects.

It also reads a table's changes delivered through a Kinesis data stream (out of order, repeated:
:attr:`Change.version` and the version-guarded :class:`LatestImage`, docs/design.md §9).

boto3 is the only dependency. See :class:`StreamProcessor`. Also here: the transactional
:class:`Outbox`, TTL values in epoch seconds (:func:`ttl_after`, :func:`validate_ttl`), and
every error the runtime raises. Redrive is the subpackage :mod:`cdc_consumer.redrive`; test
helpers are in :mod:`cdc_consumer.testing`.
"""

from cdc_consumer.change import Change
from cdc_consumer.exceptions import (
    CdcConsumerError,
    ConfigurationError,
    DeadlineError,
    FilterPatternError,
    ForeignMarkerError,
    InvalidActionError,
    InvocationError,
    MalformedBatchError,
    MalformedMessageError,
    MissingImageError,
    MissingVersionError,
    OutboxCancelledError,
    OutboxConflictError,
    OutboxError,
    OutboxInputError,
    PermanentError,
    RecordsLostError,
    RedriveError,
    RejectedByDynamoDBError,
    SideEffectInProgressError,
    TransientError,
    TtlValueError,
    UndecodableRecordError,
)
from cdc_consumer.latest_image import LatestImage
from cdc_consumer.outbox import Outbox, OutboxEvent
from cdc_consumer.processor import LambdaContext, Projection, SideEffect, StreamProcessor
from cdc_consumer.quarantine import quarantine_message
from cdc_consumer.ttl import ttl_after, validate_ttl

__all__ = [
    "CdcConsumerError",
    "Change",
    "ConfigurationError",
    "DeadlineError",
    "FilterPatternError",
    "ForeignMarkerError",
    "InvalidActionError",
    "InvocationError",
    "LambdaContext",
    "LatestImage",
    "MalformedBatchError",
    "MalformedMessageError",
    "MissingImageError",
    "MissingVersionError",
    "Outbox",
    "OutboxCancelledError",
    "OutboxConflictError",
    "OutboxError",
    "OutboxEvent",
    "OutboxInputError",
    "PermanentError",
    "Projection",
    "RecordsLostError",
    "RedriveError",
    "RejectedByDynamoDBError",
    "SideEffect",
    "SideEffectInProgressError",
    "StreamProcessor",
    "TransientError",
    "TtlValueError",
    "UndecodableRecordError",
    "quarantine_message",
    "ttl_after",
    "validate_ttl",
]
