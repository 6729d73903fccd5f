"""The environment variables the constructs set and the Lambda code reads (interfaces §2).

Consumer functions (StreamConsumer) and redrive functions (StreamRedrive) share some of them;
both read the names from here, so a renamed variable changes in one place. The runtime keeps
its own copy (cdc_consumer/defaults.py): importing cdc_consumer would pull boto3 into every CDK
app; tests/cdc_constructs/test_environment.py keeps the two equal.
"""

from __future__ import annotations

from typing import Final

# --- every consumer function (read by cdc_consumer.StreamProcessor) -------------------------

CONSUMER_NAME: Final = "CDC_CONSUMER_NAME"
"""The consumer's name: namespaces its idempotency markers; the metric dimension."""

IDEMPOTENCY_TABLE: Final = "IDEMPOTENCY_TABLE_NAME"
QUARANTINE_QUEUE_URL: Final = "QUARANTINE_QUEUE_URL"
METRICS_NAMESPACE: Final = "CDC_METRICS_NAMESPACE"
MARKER_TTL_SECONDS: Final = "CDC_MARKER_TTL_SECONDS"
"""How long idempotency markers are kept (set by KinesisConsumer: longer than its stream's
retention)."""

# --- redrive functions (read by cdc_consumer.redrive_handler) --------------------------------

CONSUMER_FUNCTION_NAME: Final = "CONSUMER_FUNCTION_NAME"
STREAM_ARN: Final = "STREAM_ARN"
ON_FAILURE_QUEUE_URL: Final = "ON_FAILURE_QUEUE_URL"
REDRIVE_RESERVE_SECONDS: Final = "REDRIVE_RESERVE_SECONDS"
CONSUMER_FILTERS: Final = "CONSUMER_FILTERS"
