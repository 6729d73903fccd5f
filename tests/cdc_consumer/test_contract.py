"""The contract (tests/test_boundaries.py ``CONTRACT_MODULES``: environment variables, metrics,
service limits, replay windows, handler paths and each feature's message shapes): the shared
names and shapes, importable without boto3 or the CDK."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cdc_consumer
import pytest
from cdc_consumer import (
    environment_variables,
    message_fields,
    metric_names,
    quarantine_shapes,
    redrive_shapes,
    service_limits,
)
from cdc_consumer.quarantine import quarantine_message
from cdc_consumer.sinks import outbox_shapes

from tests.test_boundaries import CONTRACT_MODULES

LAMBDA_SRC = Path(cdc_consumer.__file__).resolve().parents[1]


def test_importing_the_contract_loads_neither_boto3_nor_the_runtime() -> None:
    """What the constructs import: the contract's modules, their packages and nothing else."""
    names = [module.__name__ for module in CONTRACT_MODULES]
    probe = (
        "import importlib, json, sys\n"
        f"for name in {names!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('boto3', 'botocore', 'aws_cdk', 'cdc_consumer'))))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=LAMBDA_SRC,
        env={"PYTHONPATH": str(LAMBDA_SRC), "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    )
    packages = ["cdc_consumer", "cdc_consumer.backfill", "cdc_consumer.sinks"]
    # The sinks package names its protocol (typing only) in its __init__.
    assert json.loads(loaded.stdout) == sorted([*names, *packages, "cdc_consumer.sinks.protocol"])


def test_the_package_exports_its_names_lazily() -> None:
    assert set(cdc_consumer.__all__) == set(cdc_consumer._EXPORTS)
    for name in cdc_consumer.__all__:
        assert getattr(cdc_consumer, name) is not None
    assert set(cdc_consumer.__all__) <= set(dir(cdc_consumer))
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        cdc_consumer.Nothing  # noqa: B018


def test_the_quarantine_message_round_trips() -> None:
    record = {"eventID": "1", "eventSourceARN": "arn:stream", "dynamodb": {"SequenceNumber": "7"}}
    body = quarantine_message("totals", record, ValueError("bad amount"))
    message = quarantine_shapes.QuarantineMessage.from_dict(json.loads(json.dumps(body)))
    assert message.consumer == "totals"
    assert message.source_arn == "arn:stream"
    assert message.error == quarantine_shapes.ErrorDescription("ValueError", "bad amount")
    assert message.record == record
    assert message.to_dict() == body
    assert set(body) == {"version", "consumer", "sourceArn", "error", "record", "quarantinedAt"}


def test_a_quarantine_message_without_its_record_is_refused() -> None:
    with pytest.raises(message_fields.ContractError, match="lacks 'record'"):
        quarantine_shapes.QuarantineMessage.from_dict({"consumer": "totals"})


def test_the_on_failure_message_has_aws_shape_and_round_trips() -> None:
    """AWS Lambda developer guide, "Retain discarded records for a DynamoDB event source"."""
    message = redrive_shapes.OnFailureMessage(
        batch=redrive_shapes.StreamBatchInfo(
            shard_id="shardId-1",
            start_sequence_number="100",
            end_sequence_number="200",
            stream_arn="arn:stream",
            approximate_arrival_of_first_record="2019-11-14T00:38:04.835Z",
            approximate_arrival_of_last_record="2019-11-14T00:38:05.580Z",
            batch_size=3,
        ),
        request_context=redrive_shapes.OnFailureRequestContext(
            "c9b8fa9f", "arn:function", redrive_shapes.RETRY_ATTEMPTS_EXHAUSTED, 1
        ),
        response_context=redrive_shapes.OnFailureResponseContext(200, "$LATEST", "Unhandled"),
        timestamp="2019-11-14T00:38:06.021Z",
    )
    document = message.to_dict()
    assert set(document) == {
        "requestContext",
        "responseContext",
        "version",
        "timestamp",
        "DDBStreamBatchInfo",
    }
    assert document["version"] == "1.0"
    assert set(document["DDBStreamBatchInfo"]) == {
        "shardId",
        "startSequenceNumber",
        "endSequenceNumber",
        "approximateArrivalOfFirstRecord",
        "approximateArrivalOfLastRecord",
        "batchSize",
        "streamArn",
    }
    assert redrive_shapes.OnFailureMessage.from_dict(json.loads(json.dumps(document))) == message
    with_payload = redrive_shapes.OnFailureMessage.from_dict({**document, "payload": "{}"})
    assert with_payload.to_dict() == {**document, "payload": "{}"}


def test_an_on_failure_message_without_its_batch_is_refused() -> None:
    with pytest.raises(message_fields.ContractError, match="DDBStreamBatchInfo"):
        redrive_shapes.OnFailureMessage.from_dict({"version": "1.0"})
    with pytest.raises(message_fields.ContractError, match="lacks 'streamArn'"):
        batch = {"shardId": "s", "startSequenceNumber": "1", "endSequenceNumber": "2"}
        redrive_shapes.OnFailureMessage.from_dict({"DDBStreamBatchInfo": batch})


def test_the_outbox_item_and_event_detail_round_trip() -> None:
    item = outbox_shapes.OutboxItem(
        "e-1", "OrderPaid", '{"amount": "25.00"}', "2026-11-30T22:00:00Z"
    )
    assert item.to_dict() == {
        "eventId": "e-1",
        "eventType": "OrderPaid",
        "payload": '{"amount": "25.00"}',
        "occurredAt": "2026-11-30T22:00:00Z",
    }
    assert outbox_shapes.OutboxItem.from_dict(item.to_dict()) == item
    detail = outbox_shapes.OutboxEventDetail(item, "stream-event-1", "300")
    assert outbox_shapes.OutboxEventDetail.from_dict(detail.to_dict()) == detail
    assert outbox_shapes.OUTBOX_KEY_PREFIX == "OUTBOX#"


def test_environment_metrics_and_limits() -> None:
    assert environment_variables.CONSUMER_ENVIRONMENT == (
        "CDC_CONSUMER_NAME",
        "IDEMPOTENCY_TABLE_NAME",
        "QUARANTINE_QUEUE_URL",
        "QUARANTINE_BUCKET_NAME",
        "CDC_METRICS_NAMESPACE",
    )
    assert set(environment_variables.CONSUMER_ENVIRONMENT) <= set(
        environment_variables.REDRIVE_ENVIRONMENT
    ) | {
        "IDEMPOTENCY_TABLE_NAME",
        "QUARANTINE_BUCKET_NAME",  # the redrive reads the object a pointer message names
    }
    assert [m.name for m in metric_names.CONSUMER_METRICS] == [
        "RecordsProcessed",
        "DuplicatesSkipped",
        "RecordsQuarantined",
        "TtlExpiries",
        "BatchFailures",
        "ForeignMarkers",
        "MarkersWritten",
        "LedgerEntriesWritten",
        "LedgerRecordsListed",
        "LedgerMeetings",
        "TransactionConflicts",
        "ContentionFailures",
        "IteratorLagMs",
    ]
    assert metric_names.ITERATOR_LAG_MS.unit == "Milliseconds"
    counts = (
        metric_names.COUNT_METRICS + metric_names.BOOKKEEPING_METRICS + metric_names.REDRIVE_METRICS
    )
    assert {m.unit for m in counts} == {"Count"}
    assert service_limits.STREAM_RETENTION_SECONDS == 24 * 60 * 60
    assert service_limits.MAX_TRANSACTION_ACTIONS == 100
    assert service_limits.MAX_TRANSACTION_BYTES == 4 * 1024 * 1024
