"""Every default of the consumer runtime, in one place, each with its reason.

The names and limits it shares with the constructs, redrive and the local pipeline are in
:mod:`cdc_consumer.environment_variables`, :mod:`cdc_consumer.metric_names`,
:mod:`cdc_consumer.service_limits`, :mod:`cdc_consumer.replay_windows` and each feature's
message shapes (docs/design.md, "The contract").
"""

from __future__ import annotations

import os

from botocore.config import Config

# --- Idempotency records ---

#: How long a processed-marker or side-effect claim is kept (epoch-seconds TTL) is the
#: consumer's marker lifetime: ``CDC_MARKER_TTL_SECONDS``, which the constructs derive from the
#: consumer's replay windows (cdc_consumer.replay_windows.minimum_marker_lifetime, docs/design.md
#: "Markers outlive every replay window"). A record can come back as long as any copy of it can
#: be delivered or replayed (the stream, the failed-batch bucket, the quarantine queue); a marker
#: kept less long turns that replay into a second application.
#:
#: Without the variable (a function these constructs did not make) the runtime cannot see its
#: windows, so it applies the rule to the longest it can assume: a DynamoDB stream whose mapping
#: has no record age limit, a failed-batch bucket kept the constructs' default 14 days and a
#: quarantine queue kept SQS's maximum 14 days, with S3's rounding of an expiration up to the next
#: midnight UTC: 31 days (CdcChecks reports such a function, and one whose windows are longer).
UNCONFIGURED_FAILED_BATCH_RETENTION_SECONDS = 14 * 24 * 3600
UNCONFIGURED_QUARANTINE_RETENTION_SECONDS = 14 * 24 * 3600
# (MARKER_TTL_ENV, the variable, and the rule are the contract's: environment_variables and
# replay_windows.)


def marker_ttl_seconds() -> int:
    """How long markers and claims are kept: ``CDC_MARKER_TTL_SECONDS`` when set to a positive
    whole number, else the rule for the longest windows (above). A wrong value falls back too:
    a configuration typo must not drop idempotency."""
    # not at import: see processor's docstring
    from cdc_consumer.environment_variables import MARKER_TTL_ENV
    from cdc_consumer.replay_windows import ReplayWindows, minimum_marker_lifetime
    from cdc_consumer.service_limits import STREAM_RETENTION_SECONDS, UNLIMITED_RECORD_AGE

    value = os.environ.get(MARKER_TTL_ENV, "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    return minimum_marker_lifetime(
        ReplayWindows(
            stream_retention=STREAM_RETENTION_SECONDS,
            max_record_age=UNLIMITED_RECORD_AGE,
            failed_batch_retention=UNCONFIGURED_FAILED_BATCH_RETENTION_SECONDS,
            quarantine_retention=UNCONFIGURED_QUARANTINE_RETENTION_SECONDS,
        )
    )


#: Upgrade in place (cdc_consumer.legacy_markers): an old per-record marker can exist only for a
#: record created before the ledger took over plus this margin. The margin covers invocations of
#: the older code still running or still being rolled out when the newer code first runs: a
#: Lambda invocation lasts at most 15 minutes, and CodeDeploy's slowest predefined Lambda
#: configuration (Linear10PercentEvery10Minutes) keeps old code in service for 90 more.
LEGACY_MARKER_MARGIN_SECONDS = 2 * 3600

#: How far past a record's creation time a shard-less writer raises the consumer's markers
#: horizon (cdc_consumer.marker_horizon): a live consumer without shards then writes the horizon
#: about once an hour, not once a batch, and a lane writer looks up markers for at most an hour
#: of records it need not (one BatchGetItem per batch during that hour).
MARKER_HORIZON_STEP_SECONDS = 3600

#: How long past an entry's lifetime a lane stays in the consumer's lane registry
#: (cdc_consumer.lane_registry), and so how often (at most) a lane writer refreshes it: once an
#: hour per lane, one small UpdateItem.
LANE_REGISTRY_MARGIN_SECONDS = 3600

#: The time a batch may spend retrying transactions that DynamoDB cancelled for contention
#: (``TransactionConflict``: another transaction on one of its items at the same moment) or that
#: met another writer in a ledger lane, before it stops and reports the record (counted as
#: ``ContentionFailures`` and alarmed). Contention between deliveries of one shard passes in
#: milliseconds; 20 s of backoff is far beyond it and well inside a batch's time.
CONTENTION_BUDGET_SECONDS = 20.0
#: The first backoff after a cancelled transaction, and the most one backoff waits (full jitter:
#: a random wait up to the doubled bound, as AWS's SDKs retry), seconds.
CONTENTION_FIRST_BACKOFF_SECONDS = 0.02
CONTENTION_MAX_BACKOFF_SECONDS = 1.0


#: Attribute names of the idempotency table, the ones Powertools for AWS Lambda uses, so one
#: table serves both.
ID_ATTRIBUTE = "id"
EXPIRATION_ATTRIBUTE = "expiration"
STATUS_ATTRIBUTE = "status"
IN_PROGRESS_EXPIRATION_ATTRIBUTE = "in_progress_expiration"
#: The stream a processed-marker or claim was written for (its record's ``eventSourceARN``): a
#: "duplicate" whose marker names another stream is two consumers sharing one name in one
#: idempotency table, never a redelivery. Not a Powertools attribute (Powertools ignores it).
STREAM_ATTRIBUTE = "stream"
STATUS_IN_PROGRESS = "INPROGRESS"
STATUS_COMPLETED = "COMPLETED"

# --- Stream view types ---

#: The names of a record's images, as ``dynamodb.NewImage`` / ``dynamodb.OldImage`` call them; a
#: projection or side effect declares the ones it reads (``reads=``).
NEW_IMAGE = "NewImage"
OLD_IMAGE = "OldImage"
#: The images each ``StreamViewType`` carries (DynamoDB's StreamSpecification). Even a view
#: type that carries an image omits it where the change has none: INSERT has no old image,
#: REMOVE no new one.
IMAGES_OF_VIEW_TYPE: dict[str, frozenset[str]] = {
    "KEYS_ONLY": frozenset(),
    "NEW_IMAGE": frozenset({NEW_IMAGE}),
    "OLD_IMAGE": frozenset({OLD_IMAGE}),
    "NEW_AND_OLD_IMAGES": frozenset({NEW_IMAGE, OLD_IMAGE}),
}

# --- Deadline ---
# One rule, used by the runtime (how long before the deadline it stops taking records) and by
# the StreamConsumer construct (which refuses a timeout too short for one record).

#: The safety margin is a fifth of the function's timeout, at least 0.5 s and at most 5 s. It
#: must leave time to commit the pending transaction and send one quarantine message: tens of
#: milliseconds usually, up to a few seconds when the standard retry mode backs off under
#: throttling. 5 s covers that for long timeouts; a fifth keeps short timeouts mostly for
#: records (Lambda's default 3 s keeps 2.4 s), and 0.5 s still covers a commit and a send with
#: a retry at typical latencies.
SAFETY_MARGIN_DIVISOR = 5
MIN_SAFETY_MARGIN_MS = 500
MAX_SAFETY_MARGIN_MS = 5_000
#: The least time that must remain for records once the margin is kept: one record's
#: projection, its transaction and, in side-effect mode, one external call.
MIN_RECORD_TIME_MS = 1_000


def safety_margin_ms(timeout_ms: int) -> int:
    """The safety margin for a function whose timeout is ``timeout_ms``: stop taking records
    when less than this is left."""
    return max(MIN_SAFETY_MARGIN_MS, min(MAX_SAFETY_MARGIN_MS, timeout_ms // SAFETY_MARGIN_DIVISOR))


def fits_one_record(timeout_ms: int) -> bool:
    """Whether a function timeout leaves :data:`MIN_RECORD_TIME_MS` after its safety margin."""
    return timeout_ms - safety_margin_ms(timeout_ms) >= MIN_RECORD_TIME_MS


#: The shortest whole-second function timeout that fits one record (2 s: 0.5 s margin, 1.5 s
#: for records); Lambda's 1 s minimum does not.
MIN_FUNCTION_TIMEOUT_SECONDS = next(s for s in range(1, 901) if fits_one_record(s * 1000))

# --- Side effects ---

#: The longest a side effect's claim stays in progress: 10 s, or a quarter of the function's
#: timeout when that is shorter. It bounds how long one crash (between the claim and its
#: completion) blocks the record: the mapping retries at once, and the retry waits for the
#: claim to expire (when its invocation has the time) and takes it over, instead of failing
#: again until the batch runs out of retries. A side effect must finish within it: one that
#: outlives its claim may be run again by a retry (the runtime logs a warning when a call
#: overran). Set ``StreamProcessor(side_effect_timeout_ms=...)`` or the environment variable.
DEFAULT_SIDE_EFFECT_TIMEOUT_MS = 10_000
SIDE_EFFECT_TIMEOUT_ENV = "CDC_SIDE_EFFECT_TIMEOUT_MS"
#: Waited past a claim's expiry before taking it over, for clock differences between hosts.
CLAIM_TAKEOVER_SLACK_MS = 100


def side_effect_timeout_ms(timeout_ms: int | None) -> int:
    """The default side-effect timeout for a function whose timeout is ``timeout_ms`` (None:
    unknown, no Lambda context)."""
    if timeout_ms is None:
        return DEFAULT_SIDE_EFFECT_TIMEOUT_MS
    return max(1, min(DEFAULT_SIDE_EFFECT_TIMEOUT_MS, timeout_ms // 4))


# --- boto3 clients ---

#: Client settings when the runtime creates its own clients: the standard retry mode (retries
#: throttling with backoff, 3 attempts) and timeouts short enough for the deadline check to
#: matter (botocore's default read timeout is 60 s, longer than most consumer timeouts).
#: A retried TransactWriteItems whose first attempt did commit is safe: its markers then fail
#: their condition and the records are counted as duplicates.
CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 3},
    connect_timeout=3,
    read_timeout=10,
)

# --- writes outside a transaction (cdc_consumer.alone) ---

#: Threads writing self-guarding records alone, concurrently: 8 keeps under botocore's default
#: connection pool (10 per client), so no thread waits for a connection, and is enough to hide
#: DynamoDB's single-digit-millisecond write latency behind one another on a batch of 100.
ALONE_WRITE_THREADS = 8
#: Records written alone that wait for the next flush: at most as many as one transaction
#: carries, so a flush takes about as long as one transaction's commit and the deadline
#: check between records keeps its meaning.
ALONE_PENDING_RECORDS = 100
