"""cdc-constructs: AWS CDK constructs for safe change data capture from DynamoDB Streams.

Premise: events arrive out of order across items, at least once, and they fail. The
constructs make the safe settings the defaults (finite retries and record age, bisect, an
on-failure bucket that keeps each batch given up on whole, in-order processing that stops at
the first failure, idempotency, alarms) and refuse unsafe ones with one error that lists every
problem.
"""

from cdc_constructs import _runtime  # noqa: F401  (first: makes cdc_consumer importable)
from cdc_constructs.alarm_topic import AlarmTopic
from cdc_constructs.change_capture_table import ChangeCaptureTable
from cdc_constructs.consumer_group import ConsumerGroupMember
from cdc_constructs.exceptions import (
    CdcAssetError,
    CdcConfigurationError,
    CdcError,
    FanOutConfigurationError,
    Problem,
    RedriveConfigurationError,
)
from cdc_constructs.fan_out import StreamFanOut
from cdc_constructs.fan_out_rule import FanOutRule
from cdc_constructs.filters import StreamFilters
from cdc_constructs.idempotency_table import IdempotencyTable
from cdc_constructs.mapping_options import StreamMappingOptions
from cdc_constructs.monitoring import StreamConsumerMonitoring
from cdc_constructs.outbox_publisher import OutboxPublisher
from cdc_constructs.redrive import StreamRedrive
from cdc_constructs.replica_table import ReplicaTable
from cdc_constructs.routes.kinesis import (
    KinesisConsumer,
    KinesisDestination,
    KinesisFilters,
    KinesisStreamRedrive,
)
from cdc_constructs.runtime_layer import ConsumerRuntimeLayer
from cdc_constructs.stream_consumer import StreamConsumer
from cdc_constructs.synth_errors import install_synth_error_hook
from cdc_constructs.ttl_archive import TtlArchive
from cdc_constructs.view_backfill import ViewBackfill

# Under `cdk synth`, a CdcConfigurationError prints its message first, without a traceback
# wall (cdc_constructs/synth_errors.py says how; CDC_TRACEBACK=1 turns it off).
install_synth_error_hook()

__all__ = [
    "AlarmTopic",
    "CdcAssetError",
    "CdcChecks",
    "CdcChecksError",
    "CdcConfigurationError",
    "CdcError",
    "ChangeCaptureTable",
    "ConsumerGroupMember",
    "ConsumerRuntimeLayer",
    "FanOutConfigurationError",
    "FanOutRule",
    "IdempotencyTable",
    "KinesisConsumer",
    "KinesisDestination",
    "KinesisFilters",
    "KinesisStreamRedrive",
    "OutboxPublisher",
    "Problem",
    "RedriveConfigurationError",
    "ReplicaTable",
    "StreamConsumer",
    "StreamConsumerMonitoring",
    "StreamFanOut",
    "StreamFilters",
    "StreamMappingOptions",
    "StreamRedrive",
    "TtlArchive",
    "ViewBackfill",
]


def __getattr__(name: str) -> object:
    """CdcChecks and CdcChecksError on first use: they need cdk-nag 3 (the ``nag`` extra),
    which the constructs do not, so ``import cdc_constructs`` works without it."""
    if name in ("CdcChecks", "CdcChecksError"):
        from cdc_constructs import nag

        return getattr(nag, name)
    raise AttributeError(f"module 'cdc_constructs' has no attribute {name!r}")
