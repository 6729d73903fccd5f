"""The redrive function's scheduled check (``{"check": "failure-age"}``): the age of the oldest
failed batch in an S3 on-failure destination, which S3 publishes no metric of, measured against
a bucket on the local endpoint (moto's server) and printed as the metric its alarm watches."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import boto3
import pytest
from cdc_consumer.metric_names import OLDEST_FAILURE_AGE
from cdc_consumer.redrive.age_check import check_failure_age
from cdc_consumer.redrive_handler import handler

from cdc_local.endpoint import LocalEndpoint

BUCKET = "failed-batches"
STREAM_LABEL = "2026-01-01T00:00:00.000"
UUID = "0f0e0d0c-0b0a-0908-0706-050403020100"
ENVIRON = {
    "CONSUMER_FUNCTION_NAME": "consumer",
    "CDC_CONSUMER_NAME": "order-stats",
    "STREAM_ARN": f"arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/{STREAM_LABEL}",
    "ON_FAILURE_BUCKET_NAME": BUCKET,
    "EVENT_SOURCE_MAPPING_UUID": UUID,
}


def _emf(printed: str) -> dict[str, Any]:
    (line,) = [json.loads(text) for text in printed.splitlines() if text.startswith("{")]
    return line


def test_the_oldest_object_of_the_mappings_prefix_is_measured(
    aws: LocalEndpoint, capsys: pytest.CaptureFixture[str]
) -> None:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    for key in (f"aws/lambda/{UUID}/shard-1/a", f"aws/lambda/{UUID}/shard-2/b", "aws/lambda/x/c"):
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"{}")
    # Three days after the oldest object's LastModified as S3 reports it (whole seconds): the
    # check's clock against the bucket's, not against this test's sub-second clock.
    written = s3.head_object(Bucket=BUCKET, Key=f"aws/lambda/{UUID}/shard-1/a")["LastModified"]
    later = written + timedelta(days=3)

    result = check_failure_age(ENVIRON, now=later)

    # The consumer's mappings' folders under aws/lambda/ (here its current one's; x is none).
    assert result["measured"] and result["where"] == f"s3://{BUCKET}/aws/lambda/"
    assert 3 * 86400 - 60 <= result["ageSeconds"] <= 3 * 86400
    line = _emf(capsys.readouterr().out)
    assert line["Consumer"] == "order-stats"
    assert line[OLDEST_FAILURE_AGE.name] == result["ageSeconds"]
    (definition,) = line["_aws"]["CloudWatchMetrics"]
    assert definition["Metrics"] == [{"Name": OLDEST_FAILURE_AGE.name, "Unit": "Seconds"}]


def test_an_empty_prefix_measures_zero_so_the_alarm_clears(
    aws: LocalEndpoint, capsys: pytest.CaptureFixture[str]
) -> None:
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    result = handler({"check": "failure-age"}, None, environ=ENVIRON)
    assert result["measured"] and result["ageSeconds"] == 0
    assert _emf(capsys.readouterr().out)[OLDEST_FAILURE_AGE.name] == 0


def test_a_queue_destination_is_not_measured_here(aws: LocalEndpoint) -> None:
    """SQS publishes ApproximateAgeOfOldestMessage: the queue's alarm reads that."""
    environ = {**ENVIRON, "ON_FAILURE_QUEUE_URL": "http://127.0.0.1/q"}
    del environ["ON_FAILURE_BUCKET_NAME"]
    assert handler({"check": "failure-age"}, None, environ=environ)["measured"] is False


def test_an_unknown_check_is_refused_naming_the_one_known() -> None:
    with pytest.raises(ValueError, match="'failure-age'"):
        handler({"check": "depth"}, None, environ=ENVIRON)
