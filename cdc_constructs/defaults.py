"""Every default of the constructs, in one place, each with the reason it is the default.

The constructs read their defaults from here and nowhere else, so a reviewer can audit the
safety posture of the whole library on one page. AWS's own limits (the ranges validation
enforces) live here too, next to the defaults they bound.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

# --- DynamoDB tables -----------------------------------------------------------------------

STREAM_VIEW_TYPE: Final = dynamodb.StreamViewType.NEW_AND_OLD_IMAGES
"""Both images: consumers compute differences (old vs new) and TTL archives need the old image.
The view type cannot change later without re-creating the stream, so start with the richest."""

TIME_TO_LIVE_ATTRIBUTE: Final = "expireAt"
"""The TTL attribute ChangeCaptureTable enables by default. It must hold a Number of
epoch *seconds*: DynamoDB never expires an item whose value is in milliseconds."""

POINT_IN_TIME_RECOVERY: Final = True
"""The table is the source of truth of every downstream projection; PITR is the way back
from a bad write or a bad deploy (35 days). Also cdk-nag AwsSolutions-DDB3."""

DELETION_PROTECTION: Final = True
"""Deleting the table deletes its stream and every record not yet consumed."""

IDEMPOTENCY_PARTITION_KEY: Final = "id"
"""The key Powertools for AWS Lambda uses, so one idempotency table serves both."""

IDEMPOTENCY_TIME_TO_LIVE_ATTRIBUTE: Final = "expiration"
"""Powertools' TTL attribute (epoch seconds); markers expire once the consumer's marker lifetime
has passed: longer than every window in which their record can come back
(cdc_constructs.marker_lifetime)."""

LEDGER_SORT_KEY: Final = "seq"
"""The ledger table's sort key (its partition key and TTL attribute are the idempotency
table's): an entry's first sequence number, as a string that sorts as the number does, so one
Query per batch finds every entry that may list the batch's records (cdc_consumer.ledger)."""

# --- Stream consumer (Lambda event source mapping) ------------------------------------------

STARTING_POSITION: Final = lambda_.StartingPosition.TRIM_HORIZON
"""Start from the oldest record still in the stream: LATEST skips every record written while
the mapping is being created or updated."""

BATCH_SIZE: Final = 100
"""Big enough to amortize the idempotency transaction (up to 100 actions), small enough that
a batch finishes well inside the function timeout."""

BISECT_BATCH_ON_ERROR: Final = True
"""On a function error Lambda splits the batch in two and retries the halves, isolating a
poison record instead of retrying the whole batch."""

RETRY_ATTEMPTS: Final = 5
"""Finite. AWS's default (-1) retries forever: one poison record blocks its shard until the
record is trimmed from the stream 24 h later."""

MAX_RECORD_AGE_SECONDS: Final = 3600
"""One hour: a record older than this goes to the on-failure destination instead of blocking the
shard. Must stay below the 24 h stream retention (at or above it, it means "never")."""

RETAINED_RECORD_AGE_MARGIN_SECONDS: Final = 24 * 3600
"""On the Kinesis route the default maximum record age is the stream's retention minus this day,
within AWS's 7 days (``MAX_RECORD_AGE_RANGE_SECONDS``) and never below ``MAX_RECORD_AGE_SECONDS``
(KinesisConsumer, :func:`cdc_constructs.routes.kinesis.consumer.kinesis_record_age`): 6 days on the
default 7-day stream, 1 hour on a 24-hour one. The stream keeps the records of an outage, in
order, and the mapping resumes from them once the consumer is fixed, with no redrive; one hour
on a seven-day stream would send every outage longer than an hour to the on-failure bucket.
The day left between giving up and the stream's trim is the window DynamoDB Streams' default
leaves (23 of 24 hours) to act on a pointer destination (SQS, SNS) before its records go."""

PARALLELIZATION_FACTOR: Final = 1
"""One concurrent batch per shard. Item order is kept at any factor, but 1 is the cheapest and
easiest to reason about; raise it for throughput."""

MAX_BATCHING_WINDOW_SECONDS: Final = 0
"""No waiting: invoke as soon as records are there, for the lowest lag."""

TUMBLING_WINDOW_SECONDS: Final = 900
"""StreamConsumer's mapping has a tumbling window when its parallelization factor is 1: only
then does Lambda name the shard of each event (``shardId``), which the runtime's ledger keys its
lanes by (one lane per shard, no item shared between shards: docs/design.md §12). 15 minutes,
AWS's maximum: a window cuts a batch where it ends and closes with one final invocation without
records per shard, so the longest window cuts the fewest batches and costs one empty invocation
per shard every 15 minutes. None beside a factor above 1, which AWS refuses; ``tumbling_window=
Duration.seconds(0)`` turns it off. Without a window the runtime keeps per-record markers (2
write units a record in a transaction instead of about one ledger entry per transaction)."""

REPORT_BATCH_ITEM_FAILURES: Final = True
"""The runtime reports the first failed record, so Lambda resumes from it instead of
retrying records that already succeeded."""

ON_FAILURE_QUEUE_RETENTION_DAYS: Final = 14
"""The maximum SQS allows: the longest time to notice and redrive a failed batch. (The records
themselves must be read back from the stream within 24 h; see redrive.)"""

QUARANTINE_QUEUE_RETENTION_DAYS: Final = 14
"""The maximum SQS allows; quarantine messages carry the whole record, so this is the window
to fix the handler and replay them."""

RECORD_REMOVAL_POLICY: Final = RemovalPolicy.RETAIN
"""What ``cdk destroy``, or a change that replaces the resource, does to a queue or bucket that
may hold the only copy of a record: the quarantine queue (poison records, whole), the
failed-batch bucket (failed batches, whole) and a pipe's dead-letter queue. Retained
(``DeletionPolicy`` and ``UpdateReplacePolicy: Retain``): the stream trims a record after 24 h,
so once it is quarantined or given up on, the copy here may be the last one. A retained queue
still expires its messages after its retention; an empty one costs nothing (docs/operations.md,
"What cdk destroy leaves behind"). ``removal_policy=RemovalPolicy.DESTROY`` for a stack whose
failed records may be lost (a test stack)."""

# --- Stream consumer (Lambda function) -------------------------------------------------------

RUNTIME: Final = lambda_.Runtime.PYTHON_3_14
"""The newest Python runtime aws-cdk-lib knows (cdk-nag AwsSolutions-L1 demands the latest);
the consumer runtime itself supports Python 3.11+."""

LAYER_RUNTIMES: Final = (
    lambda_.Runtime.PYTHON_3_11,
    lambda_.Runtime.PYTHON_3_12,
    lambda_.Runtime.PYTHON_3_13,
    lambda_.Runtime.PYTHON_3_14,
)
"""The runtimes the consumer runtime layer declares: every Lambda Python runtime the consumer
runtime supports (3.11+), so an existing function on any of them can take the layer."""

ARCHITECTURE: Final = lambda_.Architecture.ARM_64
"""Graviton: about 20% cheaper per GB-second; the runtime and handlers are pure Python."""

MEMORY_SIZE_MB: Final = 256
"""Explicit (cdk-nag Serverless-LambdaDefaultMemorySize); enough for boto3 and a batch of 100,
and CPU scales with memory."""

TIMEOUT_SECONDS: Final = 60
"""Explicit (cdk-nag Serverless-LambdaDefaultTimeout). A batch of 100 takes a few
transactions; the runtime stops and reports near the deadline instead of timing out."""

LOG_RETENTION: Final = logs.RetentionDays.ONE_MONTH
"""Long enough to investigate a failure reported by an alarm, short enough to bound cost."""

# --- Redrive (StreamRedrive, composed by StreamConsumer) --------------------------------------

REDRIVE: Final = True
"""StreamConsumer provisions a redrive function by default: batches given up on wait in the
on-failure destination (and poison records in the quarantine queue) until something replays
them, and that must exist before the alarm fires (an SQS or SNS destination holds only
pointers, whose records the stream forgets after 24 h). Idle, it costs nothing. Turn it off
only when you redrive another way."""

REDRIVE_TIMEOUT_SECONDS: Final = 900
"""Lambda's maximum: a redrive invokes the consumer synchronously, message after message, and
is run rarely and by hand, so it gets all the time Lambda allows."""

REDRIVE_DEADLINE_MARGIN_SECONDS: Final = 30
"""Kept before the redrive's deadline on top of the consumer's timeout: no new message is
started later than that, so the consumer invoke in flight finishes and the report is logged."""

REDRIVE_MEMORY_SIZE_MB: Final = 256
"""Enough for boto3 and a 6 MB invoke payload held twice (records and their JSON)."""

REDRIVE_RESERVED_CONCURRENCY: Final = 1
"""One redrive at a time: two would replay batches of one shard side by side, out of order."""

# --- Fan-out (StreamFanOut: an EventBridge Pipe to an event bus) -----------------------------
# Retries, record age, parallelization, DLQ retention and log retention are the stream
# consumer's defaults above, for the same reasons.

FAN_OUT_BATCH_SIZE: Final = 10
"""Small batches: a failing batch is retried and bisected as a whole, so a small one re-sends
little; 10 is also the most entries one EventBridge PutEvents call accepts."""

FAN_OUT_DETAIL_TYPE: Final = "$.eventName"
"""The event's detail-type taken from the change itself: INSERT, MODIFY or REMOVE."""

PIPE_LOG_LEVEL: Final = "ERROR"
"""ERROR logs failed executions only (INFO/TRACE log every one). Execution data (the payload)
is never logged by default: it would copy item data, possibly personal, into the logs."""

OUTBOX_KEY_ATTRIBUTE: Final = "pk"
"""The key attribute the outbox's key-prefix filter applies to (``cdc_consumer.sinks.outbox`` writes
outbox items under ``pk``)."""

# --- Monitoring ---------------------------------------------------------------------------

ITERATOR_AGE_ALARM_FRACTION: Final = 0.25
"""The lag alarm fires at a quarter of the max record age (15 min of 1 h), leaving three
quarters of the budget to react before records start going to the on-failure destination."""

ITERATOR_AGE_ALARM_MAX_SECONDS: Final = 900
"""A KinesisConsumer's lag alarm fires at a quarter of its record age, and at 15 minutes at the
latest: its default record age of days (``RETAINED_RECORD_AGE_MARGIN_SECONDS``) would otherwise
page after a day and a half of lag. The stream keeps the records; the lag still needs a person
as soon as a DynamoDB Streams consumer's would (15 minutes of the default hour)."""

REPLICATION_ALARM_PERIOD_SECONDS: Final = 300
"""The period of the Kinesis route's replication alarms
(cdc_constructs.routes.kinesis.replication_alarms): DynamoDB aggregates its replication metrics
over five minutes (only its request metrics are per minute: AWS DynamoDB developer guide,
"DynamoDB Metrics and dimensions"); a shorter period would see gaps."""

REPLICATION_AGE_ALARM_SECONDS: Final = 900
"""``AgeOfOldestUnreplicatedRecord`` at or above 15 minutes alarms: in normal operation it is
milliseconds (CloudWatch's recommended alarms for DynamoDB), and it grows only while DynamoDB
cannot put changes into the stream (too few shards, a policy or key refusing it). The consumers'
lag alarms cannot see it (nothing reaches them), so this is the same 15 minutes as their lag
alarm."""

REPLICATION_THROTTLED_EVALUATION_PERIODS: Final = 2
"""``ThrottledPutRecordCount`` >= 1 in two five-minute periods in a row alarms: DynamoDB retries
throttled records, so a burst is only late; throttling that lasts 10 minutes (the window
CloudWatch's recommended alarm uses) means the stream lacks capacity.
``FailedToReplicateRecordCount`` alarms at the first record: those changes were skipped, not
delayed."""

FAILURE_AGE_ALARM_FRACTION: Final = 0.5
"""Every place a failure waits (the failed-batch bucket, the quarantine queue, an on-failure
queue, a pipe's or a fan-out rule's dead-letter queue) has a second alarm: on the age of the
oldest failure it keeps, firing once it has waited half the time it stays replayable. The first
alarm (a dropped record, a message in the queue) fires at the failure; acknowledged and
forgotten, it stays in ALARM and says nothing more, while the retention runs out and deletes
the records. Half leaves as long to act as has already passed: 7 of the 14 days the bucket,
the quarantine queue and a dead-letter queue of whole events keep a failure; 11.5 of the 23
hours a pointer (an SQS or SNS on-failure message, a pipe's dead-letter message) stays useful,
the stream's 24 h less the 1 h after which the mapping gives up on a record (on the Kinesis
route, the stream's retention less the record age: 12 of 24 hours with the defaults). Each
alarm's description says its threshold and when the failure is deleted."""

FAILURE_AGE_PERIOD_SECONDS: Final = 3600
"""The age alarms' period (Maximum over an hour): their thresholds are hours or days, and the
failed-batch bucket's age is measured once an hour (``FAILURE_AGE_CHECK_MINUTES``), so each
period has a value and the alarm neither flaps nor waits for a minute with data."""

FAILURE_AGE_CHECK_MINUTES: Final = 60
"""How often an EventBridge schedule invokes the redrive function's check of the failed-batch
bucket (``{"check": "failure-age"}``): S3 publishes no age of its objects, so the check lists
the mapping's prefix and puts the oldest object's age as a metric (cdc_consumer.redrive.
age_check). An hour is far inside the alarm's days, and 730 list calls a month cost nothing."""

FAILURE_AGE_CHECK_RETRY_ATTEMPTS: Final = 2
"""EventBridge retries a check it could not invoke (the redrive function's one reserved
execution busy with a redrive) twice; the next hour's check measures again anyway."""

ALARM_PERIOD_SECONDS: Final = 60
"""One-minute periods: lag and loss should page within minutes."""

ITERATOR_AGE_EVALUATION_PERIODS: Final = 3
"""Lag must stay above the threshold for 3 consecutive minutes: one slow batch is not an
incident, a stuck shard is."""

# --- AWS limits (validation) ----------------------------------------------------------------

MAX_RECORD_AGE_RANGE_SECONDS: Final = (60, 604_800)
"""AWS's range for MaximumRecordAgeInSeconds (-1 = infinite is rejected here)."""

RETRY_ATTEMPTS_RANGE: Final = (0, 10_000)
"""AWS's range for MaximumRetryAttempts (-1 = infinite is rejected here)."""

BATCH_SIZE_RANGE: Final = (1, 10_000)
"""AWS's range for BatchSize on a DynamoDB stream."""

PARALLELIZATION_FACTOR_RANGE: Final = (1, 10)
"""AWS's range for ParallelizationFactor."""

MAX_BATCHING_WINDOW_RANGE_SECONDS: Final = (0, 300)
"""AWS's range for MaximumBatchingWindowInSeconds."""

TUMBLING_WINDOW_RANGE_SECONDS: Final = (0, 900)
"""AWS's range for TumblingWindowInSeconds (0: no window)."""

WINDOW_WITH_PARALLELIZATION_REFUSAL: Final = (
    "Parallelization factor must be equal to 1 when tumbling window period is configured"
)
"""What CreateEventSourceMapping answers a tumbling window beside a parallelization factor above
1 (InvalidParameterValueException); the constructs and CdcChecks refuse it at synth."""

MAX_FILTERS: Final = 5
"""AWS's limit of filter patterns per event source mapping or pipe (FilterCriteria)."""

MAX_FILTER_PATTERN_LENGTH: Final = 4096
"""AWS's limit on one filter pattern, as JSON text (event source mappings and pipes)."""

LAMBDA_MEMORY_RANGE_MB: Final = (128, 10_240)
"""Lambda's range for MemorySize."""

LAMBDA_TIMEOUT_RANGE_SECONDS: Final = (1, 900)
"""Lambda's range for Timeout."""

LAMBDA_DEFAULT_TIMEOUT_SECONDS: Final = 3
"""The timeout Lambda gives a function that sets none (an existing function may not)."""

PIPE_LOG_LEVELS: Final = ("OFF", "ERROR", "INFO", "TRACE")
"""The log levels of an EventBridge Pipe."""

MAX_INPUT_TEMPLATE_LENGTH: Final = 8192
"""AWS's limit on a pipe's input template."""


MAX_SOURCE_LENGTH: Final = 256
"""EventBridge's limit on an event's source."""

FAILED_BATCH_RETENTION_DAYS: Final = 14
"""How long the default on-failure bucket keeps a failed batch (and a redriven one, as a
noncurrent version): at least the on-failure queue's 14 days, the time to notice the alarm and
redrive. ``failed_batch_retention`` sets more; less is refused."""

TTL_ARCHIVE_PREFIX: Final = "expired/"
"""Where a TtlArchive writes in its bucket: one prefix, so the function may put objects there
and nowhere else, and a bucket given by the app can hold other things beside the archive."""

TTL_ARCHIVE_NONCURRENT_VERSION_DAYS: Final = 90
"""The archive bucket is versioned: it holds the only copy of items TTL deleted, so a delete or
an overwrite (a mistaken cleanup) must not lose one. A replaced or deleted version is kept 90
days, time to notice and restore it, then expires, so storage does not grow without bound."""

TTL_ARCHIVE_LIFECYCLE_RULES: Final = ()
"""No transition by default: an archive object is one item (about its size, most under 128 KB),
and S3 neither transitions objects under 128 KB by default nor saves on them where it would
(Glacier Instant Retrieval bills at least 128 KB an object; Glacier Flexible Retrieval and Deep
Archive add 40 KB an object; each transition is a billed request: docs/benchmarks.md, "The TTL
archive"). ``lifecycle_rules`` adds rules for archives of large items, or an expiration."""

SQS_DEFAULT_RETENTION_SECONDS: Final = 4 * 24 * 3600
"""What SQS keeps a message when a queue sets no MessageRetentionPeriod: 4 days."""

SQS_MAX_RETENTION_SECONDS: Final = 14 * 24 * 3600
"""The longest SQS keeps a message: assumed for a quarantine queue this app does not define, so
the marker lifetime derived from it is never too short."""

# The marker lifetime is not a default: each consumer derives it from its own replay windows
# (cdc_constructs.marker_lifetime, by the rule of
# cdc_consumer.replay_windows.minimum_marker_lifetime).

# --- Backfill (ViewBackfill: a Step Functions Distributed Map over the table's segments) -----

BACKFILL_MAX_CONCURRENCY: Final = 10
"""Segments scanned at once (the Distributed Map's MaxConcurrency). Ten Lambda invocations
read a table at up to ten times one segment's rate, far below an account's concurrency (1,000)
and DynamoDB's per-partition limits; the rate limit below is what bounds the load."""

BACKFILL_ITEMS_PER_SECOND: Final = 1000.0
"""The backfill's read rate, items per second, over all its segments (each segment invocation
gets its share: this divided by the maximum concurrency). A consistent scan of 1 KB items at
1,000 items/s uses about 250 read units/s, plus the view's writes: small next to an on-demand
table's 4,000 read units/s of initial headroom, so the application is not starved. A million
items take about 17 minutes. ``items_per_second=None`` lifts the limit."""

BACKFILL_MAX_SEGMENTS: Final = 10_000
"""The most segments a backfill has: the start step hands the Distributed Map the segment
list through the state payload (256 KB); 10,000 numbers take about 50 KB of it. DynamoDB
accepts up to 1,000,000 (reading the items from S3 would lift this)."""

BACKFILL_MAX_CONCURRENCY_RANGE: Final = (1, 1000)
"""What ViewBackfill accepts as MaxConcurrency: Step Functions allows up to 10,000 child
executions at once, but each is a Lambda invocation, and an account's default concurrency
is 1,000."""

BACKFILL_PAGE_SIZE: Final = 1000
"""Items per Scan page, and per consumer invocation (the runtime's default), the largest this
accepts: a page's rows are grouped by view item, so each view item's deltas of the page merge
into about one ADD, and a row costs about 2 + 2 V/P write units (P rows a page touching V view
items; docs/design.md §11). A page is still one Scan of at most 1 MB, and the consumer cuts it
into transactions of at most 100 actions, about 12 for 1,000 rows, well inside its timeout."""

BACKFILL_PAGE_SIZE_RANGE: Final = (1, 1000)
"""Scan pages ViewBackfill accepts: one item up to 1,000 (a consumer invocation carries a
page; Lambda's 6 MB payload holds 1,000 items of 6 KB)."""

BACKFILL_TIMEOUT_SECONDS: Final = 900
"""The segment function's timeout: Lambda's maximum, so a segment loops fewer times; the
runtime stops a page before the deadline and returns where to go on."""

BACKFILL_MEMORY_SIZE_MB: Final = 256
"""Enough for boto3, a Scan page and its JSON; the function mostly waits for DynamoDB and
the consumer."""

BACKFILL_EXECUTION_TIMEOUT_SECONDS: Final = 24 * 3600
"""A backfill that runs longer than a day is stopped (its TimedOut alarm fires): at the
default rate that is 86 million items. The segments recorded their progress, so a new
execution with the same ``backfillId`` resumes where they stopped."""

BACKFILL_RETRY_ATTEMPTS: Final = 6
BACKFILL_RETRY_INTERVAL_SECONDS: Final = 2
BACKFILL_RETRY_BACKOFF_RATE: Final = 2.0
BACKFILL_RETRY_MAX_DELAY_SECONDS: Final = 300
"""A segment invocation that fails (Lambda throttled, DynamoDB throttling the runtime could
not absorb, a timeout) is retried 6 times, waiting 2, 4, 8, ... seconds (at most 5 minutes,
with full jitter): about two minutes in all before the segment, and the execution, fail.
Retries resume from the segment's progress record, so none repeats applied work."""
