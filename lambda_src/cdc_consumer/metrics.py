"""Per-batch counters, written as one CloudWatch embedded-metric-format (EMF) log line.

EMF is hand-written here (about 20 lines) instead of using Powertools' ``Metrics`` because the
runtime's only dependency is boto3, which the Lambda runtime already holds; Lambda turns any
stdout line in this format into metrics, so no ``PutMetricData`` permission is needed.
Format: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

from cdc_consumer.metric_names import (
    BATCH_FAILURES,
    CONSUMER_DIMENSION,
    CONSUMER_METRICS,
    CONTENTION_FAILURES,
    DUPLICATES_SKIPPED,
    FOREIGN_MARKERS,
    ITERATOR_LAG_MS,
    LEDGER_ENTRIES_WRITTEN,
    LEDGER_MEETINGS,
    LEDGER_RECORDS_LISTED,
    MARKERS_WRITTEN,
    RECORDS_PROCESSED,
    RECORDS_QUARANTINED,
    TRANSACTION_CONFLICTS,
    TTL_EXPIRIES,
)

# The metric names, units and dimension are the contract's (cdc_consumer.metric_names); the
# Monitoring construct alarms on the same names.
_UNITS = {metric.name: metric.unit for metric in CONSUMER_METRICS}


@dataclass
class BatchMetrics:
    """What one invocation did. ``newest_record_time`` drives ``IteratorLagMs``; the
    bookkeeping counts (markers, ledger entries and the records they list) say what it wrote to
    know what it applied."""

    records_processed: int = 0
    duplicates_skipped: int = 0
    records_quarantined: int = 0
    ttl_expiries: int = 0
    batch_failures: int = 0
    foreign_markers: int = 0
    markers_written: int = 0
    ledger_entries_written: int = 0
    ledger_records_listed: int = 0
    ledger_meetings: int = 0
    transaction_conflicts: int = 0
    contention_failures: int = 0
    newest_record_time: datetime | None = None

    def saw_record_time(self, created: datetime | None) -> None:
        if created is not None and (
            self.newest_record_time is None or created > self.newest_record_time
        ):
            self.newest_record_time = created

    def values(self, now: float) -> dict[str, float]:
        """Metric name -> value; lag only when a record carried a creation time."""
        values: dict[str, float] = {
            RECORDS_PROCESSED.name: self.records_processed,
            DUPLICATES_SKIPPED.name: self.duplicates_skipped,
            RECORDS_QUARANTINED.name: self.records_quarantined,
            TTL_EXPIRIES.name: self.ttl_expiries,
            BATCH_FAILURES.name: self.batch_failures,
            FOREIGN_MARKERS.name: self.foreign_markers,
            MARKERS_WRITTEN.name: self.markers_written,
            LEDGER_ENTRIES_WRITTEN.name: self.ledger_entries_written,
            LEDGER_RECORDS_LISTED.name: self.ledger_records_listed,
            LEDGER_MEETINGS.name: self.ledger_meetings,
            TRANSACTION_CONFLICTS.name: self.transaction_conflicts,
            CONTENTION_FAILURES.name: self.contention_failures,
        }
        if self.newest_record_time is not None:
            lag_ms = (now - self.newest_record_time.timestamp()) * 1000
            values[ITERATOR_LAG_MS.name] = max(0, round(lag_ms))
        return values


def emf_document(
    namespace: str, consumer: str, values: dict[str, float], now: float
) -> dict[str, Any]:
    """The EMF JSON object for ``values`` under one dimension set ``[["Consumer"]]``."""
    definitions = [{"Name": name, "Unit": _UNITS.get(name, "Count")} for name in values]
    return {
        "_aws": {
            "Timestamp": int(now * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": namespace,
                    "Dimensions": [[CONSUMER_DIMENSION]],
                    "Metrics": definitions,
                }
            ],
        },
        CONSUMER_DIMENSION: consumer,
        **values,
    }


def emit(
    namespace: str,
    consumer: str,
    metrics: BatchMetrics,
    now: float | None = None,
    stream: TextIO | None = None,
) -> dict[str, Any]:
    """Print the batch's EMF line to stdout (as Lambda expects) and return the document."""
    now = time.time() if now is None else now
    document = emf_document(namespace, consumer, metrics.values(now), now)
    print(json.dumps(document, separators=(",", ":")), file=stream or sys.stdout, flush=True)
    return document
