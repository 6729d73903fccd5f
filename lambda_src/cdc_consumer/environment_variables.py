"""The environment variables the constructs set on the functions they make, by name.

StreamConsumer, StreamRedrive, ViewBackfill and TtlArchive (``cdc_constructs``) set them; the
runtime, the redrive and the backfill's segment function (``cdc_consumer``) read them; the local
pipeline (``cdc_local``) resolves them to its local resources. Each is defined here only, so a
renamed variable changes in one place (tests/test_boundaries.py finds a second literal).

Standard library only: a CDK app imports it without boto3, the runtime without the CDK.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ARCHIVE_BUCKET_ENV",
    "ARCHIVE_ENVIRONMENT",
    "ARCHIVE_PREFIX_ENV",
    "ARCHIVE_TABLE_ENV",
    "ARCHIVE_TTL_ATTRIBUTE_ENV",
    "BACKFILL_ENVIRONMENT",
    "BACKFILL_EXECUTION_TIMEOUT_ENV",
    "BACKFILL_ITEMS_PER_SECOND_ENV",
    "BACKFILL_MAX_CONCURRENCY_ENV",
    "BACKFILL_PAGE_SIZE_ENV",
    "BACKFILL_RESERVE_SECONDS_ENV",
    "BACKFILL_SKEW_SECONDS_ENV",
    "BACKFILL_TABLE_ENV",
    "CONSUMER_ENVIRONMENT",
    "CONSUMER_FILTERS_ENV",
    "CONSUMER_FUNCTION_NAME_ENV",
    "CONSUMER_GROUP_ENV",
    "CONSUMER_NAME_ENV",
    "CONSUMER_PROGRESS_ENV",
    "IDEMPOTENCY_TABLE_ENV",
    "LEDGER_TABLE_ENV",
    "MAPPING_UUID_ENV",
    "MARKER_TTL_ENV",
    "METRICS_NAMESPACE_ENV",
    "ON_FAILURE_BUCKET_ENV",
    "ON_FAILURE_PREFIX_ENV",
    "ON_FAILURE_QUEUE_ENV",
    "QUARANTINE_BUCKET_ENV",
    "QUARANTINE_QUEUE_ENV",
    "RECORD_FILTERS_ENV",
    "REDRIVE_ENVIRONMENT",
    "REDRIVE_RESERVE_SECONDS_ENV",
    "REDRIVE_SOURCE_MODULES_ENV",
    "REPLICATED_TABLE_ENV",
    "REPLICA_ENVIRONMENT",
    "STREAM_ARN_ENV",
    "TTL_ATTRIBUTE_ENV",
    "USER_HANDLER_ENV",
]


CONSUMER_NAME_ENV: Final = "CDC_CONSUMER_NAME"
"""The consumer's name: namespaces its idempotency markers (``{name}#{eventID}``) and is the
``Consumer`` metric dimension. Consumer and redrive functions."""

IDEMPOTENCY_TABLE_ENV: Final = "IDEMPOTENCY_TABLE_NAME"
"""The idempotency table (partition key ``id`` S, TTL attribute ``expiration`` N). Consumer
functions; redrive functions, for the consumer's redrive lease (:func:`redrive_lease_key`)."""

QUARANTINE_QUEUE_ENV: Final = "QUARANTINE_QUEUE_URL"
"""The queue poison records go to (:class:`QuarantineMessage`). Consumer and redrive functions."""

METRICS_NAMESPACE_ENV: Final = "CDC_METRICS_NAMESPACE"
"""The CloudWatch namespace of the embedded-metric-format metrics (default
:data:`DEFAULT_METRICS_NAMESPACE`). Consumer and redrive functions."""

QUARANTINE_BUCKET_ENV: Final = "QUARANTINE_BUCKET_NAME"
"""Where a poison record too big for a queue message is kept whole (under
:data:`QUARANTINE_S3_PREFIX`), its message pointing at it (``recordLocation``). Consumer
functions (the failed-batch bucket, or a bucket of its own when the destination is SQS or SNS)."""

MARKER_TTL_ENV: Final = "CDC_MARKER_TTL_SECONDS"
"""How long processed-markers and side-effect claims are kept, whole seconds: the consumer's
marker lifetime, which the constructs derive from its replay windows
(:func:`minimum_marker_lifetime`) or take from ``marker_lifetime`` when at least that. Unset
(a function these constructs did not make), the runtime keeps them for the rule applied to the
longest windows it cannot see (``cdc_consumer.defaults.marker_ttl_seconds``); CdcChecks
reports such a function."""

LEDGER_TABLE_ENV: Final = "CDC_LEDGER_TABLE_NAME"
"""The ledger table (partition key ``id`` S, sort key ``seq`` S, TTL attribute ``expiration``
N): one entry per committed transaction instead of a processed-marker per record
(``cdc_consumer.ledger``). Unset (an idempotency table these constructs did not make, so no
ledger table beside it), the runtime writes per-record markers as before."""

CONSUMER_FUNCTION_NAME_ENV: Final = "CONSUMER_FUNCTION_NAME"
"""Redrive: the consumer function it invokes synchronously."""

STREAM_ARN_ENV: Final = "STREAM_ARN"
"""Redrive: the consumer's stream; messages of other streams are refused."""

ON_FAILURE_QUEUE_ENV: Final = "ON_FAILURE_QUEUE_URL"
"""Redrive: the event source mapping's on-failure queue (:class:`OnFailureMessage`)."""

ON_FAILURE_BUCKET_ENV: Final = "ON_FAILURE_BUCKET_NAME"
"""Redrive: the mapping's S3 on-failure destination, instead of a queue (each object holds its
batch)."""

ON_FAILURE_PREFIX_ENV: Final = "ON_FAILURE_PREFIX"
"""Redrive: where the bucket's objects are (default :data:`ON_FAILURE_S3_PREFIX` + the
mapping's UUID)."""

MAPPING_UUID_ENV: Final = "EVENT_SOURCE_MAPPING_UUID"
"""Redrive: the consumer's event source mapping; objects of other mappings are kept."""

REDRIVE_RESERVE_SECONDS_ENV: Final = "REDRIVE_RESERVE_SECONDS"
"""Redrive: no message is started later than this many seconds before its deadline."""

CONSUMER_FILTERS_ENV: Final = "CONSUMER_FILTERS"
"""Redrive: the mapping's filter patterns, a JSON list (records they drop are not replayed)."""

CONSUMER_GROUP_ENV: Final = "CDC_CONSUMER_GROUP"
"""Several consumers behind one mapping (StreamConsumer ``members``): a JSON list of
:class:`GroupMemberSpec` objects, in dispatch order. Set on the consumer function, which builds
its ``ConsumerGroup`` from it, and on its redrive, which replays the quarantine messages of
every member."""

REPLICATED_TABLE_ENV: Final = "CDC_REPLICATED_TABLE"
"""``"true"`` when the stream is a global table replica's (a table with replicas): a TTL
deletion replicated from another region then arrives without the service identity, and the
runtime tells it by the item's own TTL attribute (:data:`TTL_ATTRIBUTE_ENV`) against the
record's creation time (``cdc_consumer.ttl.ExpiryRule``). Consumer and redrive functions."""

TTL_ATTRIBUTE_ENV: Final = "CDC_TTL_ATTRIBUTE"
"""The source table's TTL attribute (a Number of epoch seconds), set with
:data:`REPLICATED_TABLE_ENV`."""

RECORD_FILTERS_ENV: Final = "CDC_RECORD_FILTERS"
"""The consumer's filter patterns as written, a JSON list, set only where the mapping's filters
had to be widened for a table with replicas (a filter on the TTL service identity cannot see a
replicated TTL deletion): the runtime applies them to each record after recognising replicated
TTL deletions, and drops the records they do not match."""

REPLICA_ENVIRONMENT: Final = (REPLICATED_TABLE_ENV, TTL_ATTRIBUTE_ENV, RECORD_FILTERS_ENV)
"""The variables a consumer of a table with replicas also gets (docs/global-tables.md)."""

ARCHIVE_BUCKET_ENV: Final = "CDC_ARCHIVE_BUCKET"
"""The TTL archive (``cdc_consumer.ttl_archive``): the bucket each expired item is written to."""

ARCHIVE_PREFIX_ENV: Final = "CDC_ARCHIVE_PREFIX"
"""The TTL archive: the key prefix of its objects (may be empty; ends with ``/`` otherwise)."""

ARCHIVE_TABLE_ENV: Final = "CDC_ARCHIVE_TABLE"
"""The TTL archive: the source table's name, the first partition of every object's key (the
same in every region of a global table, so two regions' archives of one expiry meet)."""

ARCHIVE_TTL_ATTRIBUTE_ENV: Final = "CDC_ARCHIVE_TTL_ATTRIBUTE"
"""The TTL archive: the source table's TTL attribute (a Number of epoch seconds), read from
each expired item's old image: its value is part of the object's key."""

ARCHIVE_ENVIRONMENT: Final = (
    ARCHIVE_BUCKET_ENV,
    ARCHIVE_PREFIX_ENV,
    ARCHIVE_TABLE_ENV,
    ARCHIVE_TTL_ATTRIBUTE_ENV,
)
"""The variables the TtlArchive construct sets on its consumer function."""

CONSUMER_ENVIRONMENT: Final = (
    CONSUMER_NAME_ENV,
    IDEMPOTENCY_TABLE_ENV,
    QUARANTINE_QUEUE_ENV,
    QUARANTINE_BUCKET_ENV,
    METRICS_NAMESPACE_ENV,
)
"""Every variable a consumer function gets from StreamConsumer."""

REDRIVE_SOURCE_MODULES_ENV: Final = "CDC_REDRIVE_SOURCE_MODULES"
"""The modules (comma-separated) the redrive function imports before a run: each registers a
failure source kind defined outside the runtime (``cdc_consumer.redrive.sources.register``).
StreamRedrive sets it, and adds the layer holding them, from a failure kind's
``redrive_source``; ``cdc-redrive --source-module`` is the command line's."""

REDRIVE_ENVIRONMENT: Final = (
    CONSUMER_FUNCTION_NAME_ENV,
    CONSUMER_NAME_ENV,
    STREAM_ARN_ENV,
    ON_FAILURE_QUEUE_ENV,
    ON_FAILURE_BUCKET_ENV,
    ON_FAILURE_PREFIX_ENV,
    MAPPING_UUID_ENV,
    QUARANTINE_QUEUE_ENV,
    METRICS_NAMESPACE_ENV,
    REDRIVE_RESERVE_SECONDS_ENV,
    CONSUMER_FILTERS_ENV,
    CONSUMER_GROUP_ENV,
    MARKER_TTL_ENV,
    REDRIVE_SOURCE_MODULES_ENV,
)
"""Every variable a redrive function may get from StreamRedrive (the on-failure queue or the
bucket, the quarantine queue, the filters and the group only when the consumer has them)."""

USER_HANDLER_ENV: Final = "CDC_HANDLER"
"""The function's own handler (``module.function``) behind :data:`WINDOW_HANDLER`."""

BACKFILL_TABLE_ENV: Final = "CDC_BACKFILL_TABLE_NAME"
"""Segment function: the source table it scans (Scan, DescribeTable)."""

BACKFILL_ITEMS_PER_SECOND_ENV: Final = "CDC_BACKFILL_ITEMS_PER_SECOND"
"""Segment function: the rate limit of ONE segment invocation, items per second (a positive
number; unset: no limit). The construct divides the backfill's rate by the Map's maximum
concurrency."""

BACKFILL_PAGE_SIZE_ENV: Final = "CDC_BACKFILL_PAGE_SIZE"
"""Segment function: Scan's ``Limit`` per page (default 1,000: one consumer invocation per page)."""

BACKFILL_SKEW_SECONDS_ENV: Final = "CDC_BACKFILL_SKEW_SECONDS"
"""Segment function: the clock-skew margin subtracted from the start time to make the default
horizon, whole seconds (default: the runtime's, see cdc_consumer.backfill)."""

BACKFILL_MAX_CONCURRENCY_ENV: Final = "CDC_BACKFILL_MAX_CONCURRENCY"
"""Segment function: how many segments run at once (the Map's ``MaxConcurrency``); the start
step plans at least that many segments while the table has a page of items for each."""

BACKFILL_EXECUTION_TIMEOUT_ENV: Final = "CDC_BACKFILL_EXECUTION_TIMEOUT_SECONDS"
"""Segment function: how long the state machine lets an execution run; the start step refuses
a backfill that the table's item count and the rate say cannot finish in it."""

BACKFILL_RESERVE_SECONDS_ENV: Final = "CDC_BACKFILL_RESERVE_SECONDS"
"""Segment function: no page is started later than this many seconds before the invocation's
deadline; the segment returns ``done: false`` with its resume point instead."""

CONSUMER_PROGRESS_ENV: Final = "CDC_RECORD_PROGRESS"
"""Consumer function: ``"1"`` makes the runtime record how far it has applied the stream
(:class:`ConsumerProgress`), which the start step checks against the horizon. ViewBackfill sets
it on the consumer it backfills; unset (the default) the streaming path writes nothing more."""

BACKFILL_ENVIRONMENT: Final = (
    BACKFILL_TABLE_ENV,
    STREAM_ARN_ENV,
    CONSUMER_FUNCTION_NAME_ENV,
    CONSUMER_NAME_ENV,
    IDEMPOTENCY_TABLE_ENV,
    METRICS_NAMESPACE_ENV,
    BACKFILL_ITEMS_PER_SECOND_ENV,
    BACKFILL_PAGE_SIZE_ENV,
    BACKFILL_SKEW_SECONDS_ENV,
    BACKFILL_RESERVE_SECONDS_ENV,
    BACKFILL_MAX_CONCURRENCY_ENV,
    BACKFILL_EXECUTION_TIMEOUT_ENV,
    CONSUMER_FILTERS_ENV,
)
"""Every variable the segment function may get from ViewBackfill (the first five required:
the table, its stream, the consumer function, the consumer's name (whose progress the start
step checks and the only member of a group its snapshot batches reach), the idempotency table
(progress records)). ``CONSUMER_FILTERS_ENV``: the mapping's filter patterns; a row no pattern
matches is not handed over (the mapping would not deliver its INSERT)."""
