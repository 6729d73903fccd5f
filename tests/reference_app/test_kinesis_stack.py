"""CdcKinesisReferenceStack as `make synth` builds it (beside CdcReferenceStack): snapshot,
cdk-nag (the app's synthesis fails on any unacknowledged finding), CdcChecks, cfn-lint, and the
Kinesis route's settings.

Snapshot: tests/snapshots/CdcKinesisReferenceStack.json, asset hashes normalized; after an
intended change, ``UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest
tests/reference_app/test_kinesis_stack.py -k snapshot`` and review the diff.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from aws_cdk import App

from app import KINESIS_STACK_NAME
from reference_app.kinesis_stack import CdcKinesisReferenceStack
from tests.cdc_constructs.nag.validation_report import synthesize_with_checks
from tests.cdc_constructs.support import (
    SNAPSHOT_DIR,
    Synthesized,
    cfn_lint,
    normalize,
    only,
    resources,
)

SNAPSHOT = SNAPSHOT_DIR / f"{KINESIS_STACK_NAME}.json"


@pytest.fixture(scope="module")
def template(reference: Synthesized) -> dict[str, Any]:
    """The Kinesis stack's template from the app the ``reference`` fixture synthesized (its
    synthesis ran cdk-nag's AwsSolutions, Serverless and CdcChecks on both stacks)."""
    path = reference.assembly_dir / f"{KINESIS_STACK_NAME}.template.json"
    return json.loads(path.read_text())


def test_snapshot(template: dict[str, Any]) -> None:
    current = normalize(template)
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    assert SNAPSHOT.exists(), f"no snapshot at {SNAPSHOT}: re-record it (module docstring)"
    assert current == json.loads(SNAPSHOT.read_text()), (
        f"{KINESIS_STACK_NAME} changed; if intended, re-record and review the diff of {SNAPSHOT}"
    )


def test_cfn_lint_is_clean(template: dict[str, Any]) -> None:
    assert cfn_lint(template) == []


def test_cdc_checks_report_nothing(tmp_path_factory: pytest.TempPathFactory) -> None:
    app = App(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    CdcKinesisReferenceStack(app, "CdcKinesisReference")
    assert synthesize_with_checks(app) == []


def test_table_streams_to_an_encrypted_stream_in_microseconds(template: dict[str, Any]) -> None:
    (stream_id,) = resources(template, "AWS::Kinesis::Stream")
    stream = only(template, "AWS::Kinesis::Stream")
    assert stream["StreamEncryption"]["EncryptionType"] == "KMS"
    assert stream["RetentionPeriodHours"] == 168
    orders = next(
        props["Properties"]
        for props in resources(template, "AWS::DynamoDB::GlobalTable").values()
        if "KinesisStreamSpecification" in props["Properties"]["Replicas"][0]
    )
    assert orders["Replicas"][0]["KinesisStreamSpecification"] == {
        "StreamArn": {"Fn::GetAtt": [stream_id, "Arn"]},
        "ApproximateCreationDateTimePrecision": "MICROSECOND",
    }


def test_two_consumers_read_the_stream_safely(template: dict[str, Any]) -> None:
    (stream_id,) = resources(template, "AWS::Kinesis::Stream")
    mappings = [
        m["Properties"] for m in resources(template, "AWS::Lambda::EventSourceMapping").values()
    ]
    assert len(mappings) == 2
    for mapping in mappings:
        assert mapping["EventSourceArn"] == {"Fn::GetAtt": [stream_id, "Arn"]}
        assert mapping["StartingPosition"] == "TRIM_HORIZON"
        assert mapping["MaximumRetryAttempts"] == 5
        assert mapping["MaximumRecordAgeInSeconds"] == 6 * 24 * 3600  # 7-day stream, less a day
        assert mapping["BisectBatchOnFunctionError"] is True
        assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        assert "OnFailure" in mapping["DestinationConfig"]
    handlers = sorted(
        f["Properties"]["Handler"] for f in resources(template, "AWS::Lambda::Function").values()
    )
    # Each consumer and its redrive function (issue 30: the Kinesis route gets one too).
    assert handlers == ["cdc_consumer.redrive_handler.handler"] * 2 + [
        "order_stats.handler",
        "orders_replica.handler",
    ]
    for function in resources(template, "AWS::Lambda::Function").values():
        variables = function["Properties"]["Environment"]["Variables"]
        # The 7-day stream, or the 6-day record age then 14 days in the failed-batch bucket and
        # S3's day of rounding to midnight UTC; then 14 days in the quarantine, plus a day
        # (cdc_constructs.marker_lifetime).
        assert variables["CDC_MARKER_TTL_SECONDS"] == str((6 + 14 + 1 + 14 + 1) * 24 * 3600)
