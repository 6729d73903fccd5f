"""ChangeCaptureTable and IdempotencyTable defaults, and their bring-your-own options."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Template

from cdc_constructs import ChangeCaptureTable, IdempotencyTable
from tests.cdc_constructs.support import only, resources

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


def test_change_capture_table_defaults(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    template = Template.from_stack(stack).to_json()
    props = only(template, "AWS::DynamoDB::GlobalTable")
    assert props["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expireAt", "Enabled": True}
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    # The AWS-managed key (aws/dynamodb): KMS encryption without a key to manage.
    assert props["SSESpecification"] == {"SSEEnabled": True, "SSEType": "KMS"}
    replica = props["Replicas"][0]
    assert "SSESpecification" not in replica
    assert replica["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert replica["DeletionProtectionEnabled"] is True
    (resource,) = resources(template, "AWS::DynamoDB::GlobalTable").values()
    assert resource["DeletionPolicy"] == "Retain"
    assert table.stream_view_type == "NEW_AND_OLD_IMAGES"
    assert table.time_to_live_attribute == "expireAt"


def test_change_capture_table_with_customer_key_and_options(stack):
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    ChangeCaptureTable(
        stack,
        "Orders",
        partition_key=PK,
        sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
        time_to_live_attribute="ttl",
        stream=dynamodb.StreamViewType.NEW_IMAGE,
        encryption_key=key,
        point_in_time_recovery=False,
        deletion_protection=False,
        removal_policy=RemovalPolicy.DESTROY,
        table_name="orders",
    )
    props = only(Template.from_stack(stack).to_json(), "AWS::DynamoDB::GlobalTable")
    assert props["TableName"] == "orders"
    assert props["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}
    assert props["TimeToLiveSpecification"]["AttributeName"] == "ttl"
    assert props["SSESpecification"] == {"SSEEnabled": True, "SSEType": "KMS"}
    replica = props["Replicas"][0]
    assert "KMSMasterKeyId" in replica["SSESpecification"]
    assert replica["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": False}
    assert replica["DeletionProtectionEnabled"] is False
    assert [k["AttributeName"] for k in props["KeySchema"]] == ["pk", "sk"]


def test_idempotency_table_has_the_powertools_schema(stack):
    made = IdempotencyTable(stack, "Idempotency")
    template = Template.from_stack(stack).to_json()
    props = resources(template, "AWS::DynamoDB::GlobalTable")[
        stack.get_logical_id(made.table.node.default_child)
    ]["Properties"]
    assert props["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert props["AttributeDefinitions"] == [{"AttributeName": "id", "AttributeType": "S"}]
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert "StreamSpecification" not in props
    ledger = resources(template, "AWS::DynamoDB::GlobalTable")[
        stack.get_logical_id(made.ledger_table.node.default_child)
    ]["Properties"]
    assert ledger["KeySchema"] == [
        {"AttributeName": "id", "KeyType": "HASH"},
        {"AttributeName": "seq", "KeyType": "RANGE"},
    ]
    assert ledger["TimeToLiveSpecification"] == props["TimeToLiveSpecification"]
    assert ledger["Replicas"] == props["Replicas"]
    replica = props["Replicas"][0]
    assert replica["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert replica["DeletionProtectionEnabled"] is True
