"""Log groups: a customer-managed key for the ones the consumer makes (issue 11 §7), and an
existing log group as on aws-cdk-lib's Function (issue 13)."""

from __future__ import annotations

import json

import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk.assertions import Template

from cdc_constructs import CdcConfigurationError, ChangeCaptureTable, StreamConsumer
from tests.cdc_constructs.support import resources

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
CODE = lambda_.Code.from_inline("def handler(event, context):\n    return {}\n")


def _consumer(stack, **props) -> StreamConsumer:
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    return StreamConsumer(
        stack, "Consumer", table=table, code=CODE, handler="index.handler", **props
    )


def test_a_log_key_encrypts_the_consumers_and_the_redrives_log_groups(stack):
    key = kms.Key(stack, "LogKey", enable_key_rotation=True)
    _consumer(stack, log_encryption_key=key)
    template = Template.from_stack(stack).to_json()
    key_id = next(lid for lid in resources(template, "AWS::KMS::Key") if lid.startswith("LogKey"))
    groups = resources(template, "AWS::Logs::LogGroup")
    assert len(groups) == 2  # the consumer's and the redrive's
    for group in groups.values():
        assert group["Properties"]["KmsKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    policy = json.dumps(template["Resources"][key_id]["Properties"]["KeyPolicy"])
    assert '"Service": "logs.eu-west-1.amazonaws.com"' in policy
    assert "kms:EncryptionContext:aws:logs:arn" in policy
    assert "arn:" in policy and ":log-group:*" in policy


def test_without_a_log_key_log_groups_use_cloudwatch_logs_encryption(stack):
    _consumer(stack)
    for group in resources(Template.from_stack(stack).to_json(), "AWS::Logs::LogGroup").values():
        assert "KmsKeyId" not in group["Properties"]


def test_an_existing_log_group_is_the_functions_as_on_a_function(stack):
    group = logs.LogGroup(stack, "Mine", retention=logs.RetentionDays.ONE_YEAR)
    consumer = _consumer(stack, log_group=group)
    assert consumer.log_group is group
    template = Template.from_stack(stack).to_json()
    function = next(
        f["Properties"]
        for lid, f in resources(template, "AWS::Lambda::Function").items()
        if lid.startswith("ConsumerFunction")
    )
    mine = next(lid for lid in resources(template, "AWS::Logs::LogGroup") if lid.startswith("Mine"))
    assert function["LoggingConfig"]["LogGroup"] == {"Ref": mine}
    assert len(resources(template, "AWS::Logs::LogGroup")) == 2  # Mine and the redrive's


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"log_group": "given", "log_encryption_key": "given"}, "log_group/log_encryption_key"),
        ({"function": "given", "log_group": "given"}, "code/handler/log_group="),
    ],
)
def test_conflicting_log_props_are_refused(stack, props, expected):
    if "log_group" in props:
        props["log_group"] = logs.LogGroup(stack, "Mine")
    if "log_encryption_key" in props:
        props["log_encryption_key"] = kms.Key(stack, "Key", enable_key_rotation=True)
    if "function" in props:
        props["function"] = lambda_.Function(
            stack, "Fn", runtime=lambda_.Runtime.PYTHON_3_14, handler="index.handler", code=CODE
        )
    with pytest.raises(CdcConfigurationError) as caught:
        _consumer(stack, **props)
    assert expected in str(caught.value)


def test_an_imported_log_key_is_used_as_given(stack):
    key = kms.Key.from_key_arn(
        stack,
        "Imported",
        "arn:aws:kms:eu-west-1:111111111111:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    )
    _consumer(stack, log_encryption_key=key)
    groups = resources(Template.from_stack(stack).to_json(), "AWS::Logs::LogGroup").values()
    assert {g["Properties"]["KmsKeyId"] for g in groups} == {key.key_arn}


@pytest.mark.parametrize("construct", ["StreamFanOut", "OutboxPublisher"])
def test_a_log_key_encrypts_the_pipes_log_group(stack, construct):
    """Issue 24 §4: the pipes' log groups had no prop for a key (checkov CKV_AWS_158)."""
    from cdc_constructs import OutboxPublisher, StreamFanOut

    key = kms.Key(stack, "LogKey", enable_key_rotation=True)
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    props = {"table": table, "source": "com.example", "log_encryption_key": key}
    if construct == "OutboxPublisher":
        OutboxPublisher(stack, "Pipe", key_prefix="OUTBOX#", **props)
    else:
        StreamFanOut(stack, "Pipe", **props)
    template = Template.from_stack(stack).to_json()
    key_id = next(lid for lid in resources(template, "AWS::KMS::Key") if lid.startswith("LogKey"))
    (group,) = resources(template, "AWS::Logs::LogGroup").values()
    assert group["Properties"]["KmsKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    policy = json.dumps(template["Resources"][key_id]["Properties"]["KeyPolicy"])
    assert "kms:EncryptionContext:aws:logs:arn" in policy


def test_a_pipes_log_key_that_is_not_a_key_is_refused(stack):
    from cdc_constructs import StreamFanOut

    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    with pytest.raises(
        CdcConfigurationError, match=r"log_encryption_key='alias/logs': a kms\.IKey"
    ):
        StreamFanOut(
            stack, "Pipe", table=table, source="com.example", log_encryption_key="alias/logs"
        )
