"""The CloudWatch metrics the runtime, the redrive and the backfill emit, and the alarms read.

Every metric is an embedded-metric-format (EMF) metric with one dimension,
:data:`CONSUMER_DIMENSION`, in the namespace the function's ``CDC_METRICS_NAMESPACE`` names
(:data:`DEFAULT_METRICS_NAMESPACE` by default). :mod:`cdc_consumer.metrics` writes them;
StreamConsumerMonitoring and the backfill's and redrive's alarms (``cdc_constructs``) watch them.
Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "BACKFILL_ITEMS",
    "BACKFILL_METRICS",
    "BACKFILL_PAGES",
    "BACKFILL_THROTTLES",
    "BATCH_FAILURES",
    "BOOKKEEPING_METRICS",
    "CONSUMER_DIMENSION",
    "CONSUMER_METRICS",
    "CONTENTION_FAILURES",
    "CONTENTION_METRICS",
    "COUNT_METRICS",
    "DEFAULT_METRICS_NAMESPACE",
    "DUPLICATES_SKIPPED",
    "FOREIGN_MARKERS",
    "ITERATOR_LAG_MS",
    "LEDGER_ENTRIES_WRITTEN",
    "LEDGER_MEETINGS",
    "LEDGER_RECORDS_LISTED",
    "MARKERS_WRITTEN",
    "OLDEST_FAILURE_AGE",
    "RECORDS_PROCESSED",
    "RECORDS_QUARANTINED",
    "REDRIVE_FAILED_MESSAGES",
    "REDRIVE_LOST_RECORDS",
    "REDRIVE_METRICS",
    "REDRIVE_RECORDS_REPLAYED",
    "TRANSACTION_CONFLICTS",
    "TTL_EXPIRIES",
    "Metric",
]


@dataclass(frozen=True)
class Metric:
    """An embedded-metric-format metric: its name and CloudWatch unit."""

    name: str
    unit: str = "Count"


DEFAULT_METRICS_NAMESPACE: Final = "CdcConstructs"
"""The namespace the runtime and redrive write to, and the constructs' alarms read, by default."""

CONSUMER_DIMENSION: Final = "Consumer"
"""The one dimension of every metric here: the consumer's name."""

RECORDS_PROCESSED: Final = Metric("RecordsProcessed")

DUPLICATES_SKIPPED: Final = Metric("DuplicatesSkipped")

RECORDS_QUARANTINED: Final = Metric("RecordsQuarantined")

TTL_EXPIRIES: Final = Metric("TtlExpiries")

BATCH_FAILURES: Final = Metric("BatchFailures")

FOREIGN_MARKERS: Final = Metric("ForeignMarkers")
"""Records whose marker was written by a consumer of another stream under the same name
(ForeignMarkerError): reported failed, never skipped."""

ITERATOR_LAG_MS: Final = Metric("IteratorLagMs", "Milliseconds")
"""Age of the newest record of the batch when it was handled (only when a record carried
its creation time)."""

COUNT_METRICS: Final = (
    RECORDS_PROCESSED,
    DUPLICATES_SKIPPED,
    RECORDS_QUARANTINED,
    TTL_EXPIRIES,
    BATCH_FAILURES,
    FOREIGN_MARKERS,
)
"""The runtime's per-batch counts of records, in the order of its EMF line."""

MARKERS_WRITTEN: Final = Metric("MarkersWritten")
"""Processed-markers committed (one per record that needs one: the Kinesis route, snapshot rows,
a consumer without a ledger table)."""

LEDGER_ENTRIES_WRITTEN: Final = Metric("LedgerEntriesWritten")
"""Ledger entries committed: one per transaction and stream (``cdc_consumer.ledger``)."""

LEDGER_RECORDS_LISTED: Final = Metric("LedgerRecordsListed")
"""Records those entries list (each in place of a marker): divided by
:data:`LEDGER_ENTRIES_WRITTEN`, the records an entry covers, the ledger's saving."""

BOOKKEEPING_METRICS: Final = (MARKERS_WRITTEN, LEDGER_ENTRIES_WRITTEN, LEDGER_RECORDS_LISTED)
"""The runtime's per-batch counts of what it wrote to know what it applied (markers and ledger
entries, which live as long: the replay windows rule), after :data:`COUNT_METRICS` in its EMF
line."""

LEDGER_MEETINGS: Final = Metric("LedgerMeetings")
"""Transactions that met another writer in a ledger lane (another delivery of the same shard
committed since the lookup): the lane is read again, nothing fails (``cdc_consumer.contention``)."""

TRANSACTION_CONFLICTS: Final = Metric("TransactionConflicts")
"""Transactions DynamoDB cancelled with ``TransactionConflict`` (another transaction on one of
their items at the same moment): retried after a backoff with jitter."""

CONTENTION_FAILURES: Final = Metric("ContentionFailures")
"""Batches stopped because meetings and conflicts outlasted the contention budget (the record is
reported and retried by Lambda); alarmed, since in ordinary load it stays 0."""

CONTENTION_METRICS: Final = (LEDGER_MEETINGS, TRANSACTION_CONFLICTS, CONTENTION_FAILURES)
"""The runtime's per-batch counts of other writers met on its items, after
:data:`BOOKKEEPING_METRICS` in its EMF line."""

CONSUMER_METRICS: Final = (
    *COUNT_METRICS,
    *BOOKKEEPING_METRICS,
    *CONTENTION_METRICS,
    ITERATOR_LAG_MS,
)
"""Every metric the consumer runtime emits, one EMF line per batch."""

REDRIVE_LOST_RECORDS: Final = Metric("RedriveLostRecords")

REDRIVE_RECORDS_REPLAYED: Final = Metric("RedriveRecordsReplayed")

REDRIVE_FAILED_MESSAGES: Final = Metric("RedriveFailedMessages")

REDRIVE_METRICS: Final = (REDRIVE_LOST_RECORDS, REDRIVE_RECORDS_REPLAYED, REDRIVE_FAILED_MESSAGES)
"""Every metric the redrive function emits, one EMF line per run."""

OLDEST_FAILURE_AGE: Final = Metric("OldestFailedBatchAge", "Seconds")
"""The age of the oldest failed batch an on-failure destination keeps where AWS publishes no
such metric (an S3 bucket's objects): what the redrive function's scheduled check measures
(dimension Consumer; 0 when none waits), and what the construct's age alarm watches."""

BACKFILL_ITEMS: Final = Metric("BackfillItems")

BACKFILL_PAGES: Final = Metric("BackfillPages")

BACKFILL_THROTTLES: Final = Metric("BackfillRetries")
"""Consumer invocations of a page the segment retried (throttled or failed records)."""

BACKFILL_METRICS: Final = (BACKFILL_ITEMS, BACKFILL_PAGES, BACKFILL_THROTTLES)
"""Every metric the segment function emits (dimension ``Consumer``), one EMF line per
invocation."""
