"""Consumer runtime for DynamoDB Streams: ordered, exactly-once projections, safe side effects.

It reads a table's changes through any route of :mod:`cdc_consumer.routes`, also one that
delivers them out of order and repeated (:attr:`Change.version` and the version-guarded
:class:`LatestImage`, docs/design.md §9).

boto3 is the only dependency. See :class:`StreamProcessor`. Also here: the transactional
:class:`Outbox`, TTL values in epoch seconds (:func:`ttl_after`, :func:`validate_ttl`), and
every error the runtime raises. Redrive is the subpackage :mod:`cdc_consumer.redrive`; test
helpers are in :mod:`cdc_consumer.testing`; the names and message shapes shared with the
constructs, redrive and the local pipeline are in modules of their own, one per concern
(docs/design.md, "The contract"): :mod:`cdc_consumer.environment_variables`,
:mod:`cdc_consumer.metric_names`, :mod:`cdc_consumer.service_limits`, ...

The names below are imported on first use (PEP 562), so importing those modules (what a CDK
app does) loads neither boto3 nor the rest of the runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "CdcConsumerError": "cdc_consumer.exceptions",
    "AccessDeniedError": "cdc_consumer.exceptions",
    "Change": "cdc_consumer.change",
    "ConsumerGroup": "cdc_consumer.consumer_group",
    "Contributions": "cdc_consumer.sinks.contributions",
    "ConfigurationError": "cdc_consumer.exceptions",
    "DeadlineError": "cdc_consumer.exceptions",
    "FilterPatternError": "cdc_consumer.exceptions",
    "GroupMember": "cdc_consumer.consumer_group",
    "ForeignMarkerError": "cdc_consumer.exceptions",
    "InvalidActionError": "cdc_consumer.exceptions",
    "InvocationError": "cdc_consumer.exceptions",
    "LambdaContext": "cdc_consumer.processor",
    "LatestImage": "cdc_consumer.sinks.latest_image",
    "MalformedBatchError": "cdc_consumer.exceptions",
    "MalformedMessageError": "cdc_consumer.exceptions",
    "MissingImageError": "cdc_consumer.exceptions",
    "MissingVersionError": "cdc_consumer.exceptions",
    "Outbox": "cdc_consumer.sinks.outbox",
    "OutboxCancelledError": "cdc_consumer.exceptions",
    "OutboxConflictError": "cdc_consumer.exceptions",
    "OutboxError": "cdc_consumer.exceptions",
    "OutboxEvent": "cdc_consumer.sinks.outbox",
    "OutboxInputError": "cdc_consumer.exceptions",
    "PermanentError": "cdc_consumer.exceptions",
    "Projection": "cdc_consumer.processor",
    "RecordsLostError": "cdc_consumer.exceptions",
    "RedriveError": "cdc_consumer.exceptions",
    "RejectedByDynamoDBError": "cdc_consumer.exceptions",
    "SideEffect": "cdc_consumer.processor",
    "SideEffectInProgressError": "cdc_consumer.exceptions",
    "SnapshotChange": "cdc_consumer.snapshots",
    "SnapshotRefusedError": "cdc_consumer.exceptions",
    "StreamProcessor": "cdc_consumer.processor",
    "TransientError": "cdc_consumer.exceptions",
    "TtlValueError": "cdc_consumer.exceptions",
    "UndecodableRecordError": "cdc_consumer.exceptions",
    "quarantine_message": "cdc_consumer.quarantine",
    "ttl_after": "cdc_consumer.ttl",
    "validate_ttl": "cdc_consumer.ttl",
}
"""Each public name -> the module defining it (imported on first use)."""

__all__ = [
    "AccessDeniedError",
    "CdcConsumerError",
    "Change",
    "ConfigurationError",
    "ConsumerGroup",
    "Contributions",
    "DeadlineError",
    "FilterPatternError",
    "ForeignMarkerError",
    "GroupMember",
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
    "SnapshotChange",
    "SnapshotRefusedError",
    "StreamProcessor",
    "TransientError",
    "TtlValueError",
    "UndecodableRecordError",
    "quarantine_message",
    "ttl_after",
    "validate_ttl",
]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports
    from cdc_consumer.change import (
        Change,
    )
    from cdc_consumer.consumer_group import ConsumerGroup, GroupMember
    from cdc_consumer.exceptions import (
        AccessDeniedError,
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
        SnapshotRefusedError,
        TransientError,
        TtlValueError,
        UndecodableRecordError,
    )
    from cdc_consumer.processor import (
        LambdaContext,
        Projection,
        SideEffect,
        StreamProcessor,
    )
    from cdc_consumer.quarantine import (
        quarantine_message,
    )
    from cdc_consumer.sinks.contributions import Contributions
    from cdc_consumer.sinks.latest_image import (
        LatestImage,
    )
    from cdc_consumer.sinks.outbox import (
        Outbox,
        OutboxEvent,
    )
    from cdc_consumer.snapshots import SnapshotChange
    from cdc_consumer.ttl import (
        ttl_after,
        validate_ttl,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once imported, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
