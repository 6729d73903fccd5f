"""Consumer runtime for DynamoDB Streams: ordered, exactly-once projections, safe side effects.

boto3 is the only dependency. See :class:`StreamProcessor`.
"""

from cdc_consumer.change import Change
from cdc_consumer.exceptions import (
    CdcConsumerError,
    ConfigurationError,
    InvalidActionError,
    MalformedBatchError,
    PermanentError,
    RejectedByDynamoDBError,
    SideEffectInProgressError,
    TransientError,
    UndecodableRecordError,
)
from cdc_consumer.processor import LambdaContext, Projection, SideEffect, StreamProcessor
from cdc_consumer.quarantine import quarantine_message

__all__ = [
    "CdcConsumerError",
    "Change",
    "ConfigurationError",
    "InvalidActionError",
    "LambdaContext",
    "MalformedBatchError",
    "PermanentError",
    "Projection",
    "RejectedByDynamoDBError",
    "SideEffect",
    "SideEffectInProgressError",
    "StreamProcessor",
    "TransientError",
    "UndecodableRecordError",
    "quarantine_message",
]
