"""The reference stack as `make synth` builds it: snapshot, cdk-nag, cfn-lint, IAM, must-shows.

The stack is synthesized once per test process (the ``reference`` fixture); the tests are in
one xdist group so that happens once per suite run.

Snapshot: tests/snapshots/CdcReferenceStack.json, asset hashes normalized. After an intended
change, review the diff of ``UPDATE_SNAPSHOTS=1 make test`` (or
``UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/cdc_constructs``) and commit it.
"""

from __future__ import annotations

import json
import os

import pytest
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from tests.cdc_constructs.support import (
    SNAPSHOT_DIR,
    Synthesized,
    actions,
    cfn_lint,
    grants,
    normalize,
    only,
    resources,
    statements,
)

pytestmark = pytest.mark.xdist_group("reference_stack")

SNAPSHOT = SNAPSHOT_DIR / "CdcReferenceStack.json"


def test_snapshot(reference: Synthesized):
    current = normalize(reference.template)
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    assert SNAPSHOT.exists(), f"no snapshot at {SNAPSHOT}: run UPDATE_SNAPSHOTS=1 make test"
    expected = json.loads(SNAPSHOT.read_text())
    assert current == expected, (
        "CdcReferenceStack changed; if intended, run UPDATE_SNAPSHOTS=1 make test and "
        "review the diff of tests/snapshots/CdcReferenceStack.json"
    )


def test_snapshot_ignores_asset_hashes(reference: Synthesized):
    changed = json.loads(json.dumps(reference.template).replace("a", "a"))
    function = next(iter(resources(changed, "AWS::Lambda::Function").values()))
    function["Properties"]["Code"]["S3Key"] = "f" * 64 + ".zip"
    assert normalize(changed) == normalize(reference.template)


@pytest.mark.parametrize("pack", [AwsSolutionsChecks, ServerlessChecks], ids=lambda p: p.__name__)
def test_cdk_nag_has_no_unacknowledged_findings(reference: Synthesized, pack):
    report = pack(reference.app).validate_scope(reference.app)
    findings = [
        f"{violation.rule_name} at {resource.construct_path}"
        for violation in report.violations
        for resource in violation.violating_resources
    ]
    assert findings == []


def test_acknowledgements_are_scoped_and_reasoned(reference: Synthesized):
    from app import acknowledgements

    acks = acknowledgements(reference.app)
    assert acks, "expected the by-design acknowledgements"
    for path, rule, reason in acks:
        assert path.count("/") >= 2, f"{rule} acknowledged too broadly, on {path}"
        assert len(reason) > 60, f"{rule} on {path}: reason too thin: {reason!r}"


def test_cfn_lint_is_clean(reference: Synthesized):
    matches = cfn_lint(reference.template)
    assert matches == []


def test_mapping_of_the_reference_consumer(reference: Synthesized):
    mapping = only(reference.template, "AWS::Lambda::EventSourceMapping")
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["MaximumRetryAttempts"] == 5
    assert mapping["MaximumRecordAgeInSeconds"] == 3600
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["MetricsConfig"] == {"Metrics": ["EventCount"]}
    destination = mapping["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
    queue = reference.template["Resources"][destination]
    assert queue["Type"] == "AWS::SQS::Queue"
    assert queue["Properties"]["MessageRetentionPeriod"] == 1_209_600
    assert queue["Properties"]["SqsManagedSseEnabled"] is True
    (policy,) = [
        p["Properties"]["PolicyDocument"]
        for p in resources(reference.template, "AWS::SQS::QueuePolicy").values()
        if p["Properties"]["Queues"] == [{"Ref": destination}]
    ]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for s in policy["Statement"]
    )


def test_reference_tables(reference: Synthesized):
    tables = {
        lid: r["Properties"]
        for lid, r in resources(reference.template, "AWS::DynamoDB::GlobalTable").items()
    }
    orders = next(p for lid, p in tables.items() if lid.startswith("Orders"))
    assert orders["TimeToLiveSpecification"] == {"AttributeName": "expireAt", "Enabled": True}
    assert orders["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert len(tables) == 3  # orders, order-stats view, idempotency


def test_function_environment_names_every_resource_the_runtime_uses(reference: Synthesized):
    env = only(reference.template, "AWS::Lambda::Function")["Environment"]["Variables"]
    assert env["CDC_CONSUMER_NAME"] == "order-stats"
    assert env["CDC_METRICS_NAMESPACE"] == "CdcConstructs"
    for name in ("IDEMPOTENCY_TABLE_NAME", "QUARANTINE_QUEUE_URL", "VIEW_TABLE_NAME"):
        assert set(env[name]) == {"Ref"}, name


def test_no_wildcard_actions_in_any_policy(reference: Synthesized):
    wildcard = [a for s in statements(reference.template) for a in actions(s) if "*" in a]
    assert wildcard == []
    for resource in resources(reference.template, "AWS::SQS::QueuePolicy").values():
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            assert statement["Effect"] == "Deny" or "*" not in str(statement["Action"])


def test_consumer_role_has_only_what_the_runtime_needs(reference: Synthesized):
    template = reference.template
    by_prefix = {
        prefix: json.dumps({"Fn::GetAtt": [_logical_id(template, prefix), attribute]})
        for prefix, attribute in [
            ("OrdersTable", "StreamArn"),
            ("IdempotencyTable", "Arn"),
            ("OrderStatsView", "Arn"),
            ("OrderStatsOnFailureQueue", "Arn"),
            ("OrderStatsQuarantineQueue", "Arn"),
            ("OrderStatsLogGroup", "Arn"),
        ]
    }
    expected = {
        *[
            (a, by_prefix["OrdersTable"])
            for a in (
                "dynamodb:DescribeStream",
                "dynamodb:GetRecords",
                "dynamodb:GetShardIterator",
                "dynamodb:ListStreams",
            )
        ],
        *[
            (a, by_prefix["IdempotencyTable"])
            for a in (
                "dynamodb:ConditionCheckItem",
                "dynamodb:DeleteItem",
                "dynamodb:GetItem",
                "dynamodb:PutItem",
                "dynamodb:UpdateItem",
            )
        ],
        *[
            (a, by_prefix["OrderStatsView"])
            for a in (
                "dynamodb:ConditionCheckItem",
                "dynamodb:DeleteItem",
                "dynamodb:PutItem",
                "dynamodb:UpdateItem",
            )
        ],
        ("sqs:SendMessage", by_prefix["OrderStatsOnFailureQueue"]),
        ("sqs:SendMessage", by_prefix["OrderStatsQuarantineQueue"]),
        ("logs:CreateLogStream", by_prefix["OrderStatsLogGroup"]),
        ("logs:PutLogEvents", by_prefix["OrderStatsLogGroup"]),
    }
    assert grants(template) == expected


def test_alarms_notify_the_topic(reference: Synthesized):
    template = reference.template
    topic = _logical_id(template, "AlarmsTopic")
    alarms = {
        a["Properties"]["MetricName"]: a["Properties"]
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
    }
    assert (
        set(alarms)
        == {
            "IteratorAge",
            "ApproximateNumberOfMessagesVisible",
            "RecordsQuarantined",
            "Errors",
            "Throttles",
        }
        and len(resources(template, "AWS::CloudWatch::Alarm")) == 6
    )
    for alarm in resources(template, "AWS::CloudWatch::Alarm").values():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic}]
    lag = alarms["IteratorAge"]
    assert lag["Statistic"] == "Maximum"
    assert lag["Threshold"] == 900_000 < 3600 * 1000
    quarantined = alarms["RecordsQuarantined"]
    assert quarantined["Namespace"] == "CdcConstructs"
    assert quarantined["Dimensions"] == [{"Name": "Consumer", "Value": "order-stats"}]
    assert quarantined["Threshold"] == 1
    assert quarantined["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert len(resources(template, "AWS::CloudWatch::Dashboard")) == 1


def test_alarm_topic_is_encrypted_and_tls_only(reference: Synthesized):
    template = reference.template
    topic = only(template, "AWS::SNS::Topic")
    assert topic["KmsMasterKeyId"] == {"Fn::GetAtt": [_logical_id(template, "AlarmsKey"), "Arn"]}
    key = only(template, "AWS::KMS::Key")
    assert key["EnableKeyRotation"] is True
    cloudwatch = [
        s
        for s in key["KeyPolicy"]["Statement"]
        if s["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert cloudwatch and cloudwatch[0]["Action"] == ["kms:Decrypt", "kms:GenerateDataKey"]
    (statement,) = only(template, "AWS::SNS::TopicPolicy")["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Deny"
    assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_no_email_subscription_without_context(reference: Synthesized):
    assert resources(reference.template, "AWS::SNS::Subscription") == {}


def _logical_id(template: dict, prefix: str) -> str:
    ids = [
        lid
        for lid in template["Resources"]
        if lid.startswith(prefix) and len(lid) == len(prefix) + 8
    ]
    assert len(ids) == 1, f"{prefix}: {ids}"
    return ids[0]
