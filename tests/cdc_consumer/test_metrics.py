"""EMF lines: the names, units, namespace and dimension the Monitoring construct alarms on."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

from cdc_consumer import Change, StreamProcessor
from cdc_consumer.metrics import BatchMetrics, emit
from cdc_consumer.testing import FakeContext, TableStream, stream_event


def test_an_emf_line_declares_every_metric_under_the_consumer_dimension() -> None:
    metrics = BatchMetrics(records_processed=3, duplicates_skipped=1, ttl_expiries=1)
    metrics.saw_record_time(datetime.fromtimestamp(1_000, tz=UTC))
    metrics.saw_record_time(datetime.fromtimestamp(1_010, tz=UTC))  # the newest counts
    out = io.StringIO()

    emit("CdcConstructs", "order-stats", metrics, now=1_012.5, stream=out)

    document = json.loads(out.getvalue())
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "CdcConstructs"
    assert directive["Dimensions"] == [["Consumer"]]
    assert {m["Name"]: m["Unit"] for m in directive["Metrics"]} == {
        "RecordsProcessed": "Count",
        "DuplicatesSkipped": "Count",
        "RecordsQuarantined": "Count",
        "TtlExpiries": "Count",
        "BatchFailures": "Count",
        "ForeignMarkers": "Count",
        "MarkersWritten": "Count",
        "LedgerEntriesWritten": "Count",
        "LedgerRecordsListed": "Count",
        "LedgerMeetings": "Count",
        "TransactionConflicts": "Count",
        "ContentionFailures": "Count",
        "IteratorLagMs": "Milliseconds",
    }
    assert document["_aws"]["Timestamp"] == 1_012_500
    assert document["Consumer"] == "order-stats"
    assert (document["RecordsProcessed"], document["DuplicatesSkipped"]) == (3, 1)
    assert document["IteratorLagMs"] == 2_500
    assert out.getvalue().count("\n") == 1  # one line, as CloudWatch Logs needs


def test_the_namespace_comes_from_the_environment(resources, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CDC_METRICS_NAMESPACE", "Team/Orders")
    processor: StreamProcessor = resources.processor()

    @processor.projection
    def nothing(change: Change) -> list[dict[str, object]]:
        return []

    record = TableStream().put({"pk": "A"})
    processor.handle(stream_event([record]), FakeContext())

    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith('{"_aws"')]
    assert json.loads(line)["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Team/Orders"
