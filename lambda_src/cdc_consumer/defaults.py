"""Every default of the consumer runtime, in one place, each with its reason."""

from __future__ import annotations

from botocore.config import Config

# --- Environment variables (set by the StreamConsumer construct and by the local pipeline) ---

#: Consumer name; namespaces idempotency records ("{name}#{eventID}") in a shared table.
CONSUMER_NAME_ENV = "CDC_CONSUMER_NAME"
#: Idempotency table (partition key ``id`` S, TTL attribute ``expiration`` N, epoch seconds).
IDEMPOTENCY_TABLE_ENV = "IDEMPOTENCY_TABLE_NAME"
#: SQS queue URL that receives poison records.
QUARANTINE_QUEUE_ENV = "QUARANTINE_QUEUE_URL"
#: CloudWatch namespace of the embedded-metric-format metrics.
METRICS_NAMESPACE_ENV = "CDC_METRICS_NAMESPACE"

#: The namespace the Monitoring construct's alarms look in.
METRICS_NAMESPACE = "CdcConstructs"

# --- Idempotency records ---

#: How long a processed-marker or side-effect record is kept (epoch-seconds TTL): 7 days.
#: A duplicate can only come from the stream (24 h retention) or from a redrive of an
#: on-failure pointer, which reads the stream too; 7 days outlives both with a wide margin,
#: while the TTL still keeps the table from growing without bound.
IDEMPOTENCY_TTL_SECONDS = 7 * 24 * 60 * 60

#: Attribute names of the idempotency table, the ones Powertools for AWS Lambda uses, so one
#: table serves both.
ID_ATTRIBUTE = "id"
EXPIRATION_ATTRIBUTE = "expiration"
STATUS_ATTRIBUTE = "status"
IN_PROGRESS_EXPIRATION_ATTRIBUTE = "in_progress_expiration"
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

#: Stop taking new records when less than this much invocation time is left (milliseconds):
#: 5 s. Enough to commit the pending transaction and send one quarantine message with the
#: standard retry mode's backoff (at most ~3 s over 3 attempts) at typical latencies (tens of
#: ms); the record reported instead is simply redelivered. Raise it for slow side effects.
SAFETY_MARGIN_MS = 5_000

# --- DynamoDB TransactWriteItems limits ---
# https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html

#: At most 100 actions per transaction.
MAX_TRANSACTION_ACTIONS = 100
#: At most 4 MB of items per transaction. We measure the JSON of the actions, which is larger
#: than DynamoDB's item size (type tags, quotes), so staying under this stays under the limit.
MAX_TRANSACTION_BYTES = 4 * 1024 * 1024

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
