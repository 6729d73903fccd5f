"""CdcChecks on an AWS Solutions Constructs ``DynamoDBStreamsToLambda`` with its defaults.

Its event source defaults (aws-solutions-constructs core 2.105.0): TRIM_HORIZON, bisect on,
500 retries, a 24-hour maximum record age and an SQS on-failure queue; no
ReportBatchItemFailures and no alarm. A 24-hour record age equals the stream's retention, so
records never expire before the stream trims them.
"""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_lambda as lambda_
from aws_solutions_constructs.aws_dynamodbstreams_lambda import DynamoDBStreamsToLambda

from .validation_report import Finding, rule_ids, synthesize_with_checks

MAPPING = "SolutionsConstruct/StreamsToLambda/LambdaFunction/DynamoDBEventSource:"


# One worker synthesizes this module's app once (the suite runs with --dist loadgroup).
pytestmark = pytest.mark.xdist_group("nag-solutions-construct")


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> list[Finding]:
    app = App(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    stack = Stack(app, "SolutionsConstruct")
    DynamoDBStreamsToLambda(
        stack,
        "StreamsToLambda",
        lambda_function_props=lambda_.FunctionProps(
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler="index.handler",
            code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        ),
    )
    return synthesize_with_checks(app)


def test_its_24_hour_record_age_is_reported(findings: list[Finding]) -> None:
    assert any(
        f.rule_id == "CDC-ESM2" and f.severity == "error" and f.construct_path.startswith(MAPPING)
        for f in findings
    )


def test_its_missing_report_batch_item_failures_is_reported(findings: list[Finding]) -> None:
    assert any(
        f.rule_id == "CDC-ESM5" and f.severity == "error" and f.construct_path.startswith(MAPPING)
        for f in findings
    )


def test_exactly_these_and_the_missing_iterator_age_alarm(findings: list[Finding]) -> None:
    # Its finite retries, bisect, DLQ and TRIM_HORIZON pass; it creates no IteratorAge alarm,
    # and its DLQ is SQS (a pointer only).
    assert rule_ids(findings, "SolutionsConstruct") == {
        "CDC-ESM2",
        "CDC-ESM5",
        "CDC-ESM8",
        "CDC-ESM10",
    }
