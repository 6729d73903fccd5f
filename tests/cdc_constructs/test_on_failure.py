"""The on-failure destination (issue 12): an S3 bucket that keeps failed batches whole by default,
aws-cdk-lib's SqsDlq / SnsDlq / S3OnFailureDestination each with least privilege, the redrive's
read-and-delete grants, and the alarm that fires whatever the destination."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from aws_cdk.aws_lambda_event_sources import S3OnFailureDestination, SnsDlq, SqsDlq

from cdc_constructs import CdcConfigurationError, ChangeCaptureTable, StreamConsumer
from cdc_constructs.redrive import REDRIVE_HANDLER
from tests.cdc_constructs.support import grants, logical_id, only, resources, with_code

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


def _consumer(stack: cdk.Stack, **props: Any) -> StreamConsumer:
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    return StreamConsumer(stack, "Consumer", table=table, **with_code(props))


def _role(template: dict[str, Any], prefix: str) -> str:
    return logical_id(template, prefix)


def _service_grants(template: dict[str, Any], role: str, *services: str) -> set[tuple[str, str]]:
    return {
        (action, resource)
        for action, resource in grants(template, role=role)
        if action.split(":")[0] in services
    }


def _get_att(template: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [logical_id(template, prefix), "Arn"]}


def _objects(arn: dict[str, Any]) -> str:
    return json.dumps({"Fn::Join": ["", [arn, "/*"]]})


def _redrive_env(template: dict[str, Any]) -> dict[str, Any]:
    (redrive,) = [
        r["Properties"]
        for r in resources(template, "AWS::Lambda::Function").values()
        if r["Properties"]["Handler"] == REDRIVE_HANDLER
    ]
    return dict(redrive["Environment"]["Variables"])


# --- The default: a bucket -------------------------------------------------------------------


def test_default_bucket_is_encrypted_tls_only_private_versioned_retained_with_a_lifecycle(
    stack: cdk.Stack,
) -> None:
    _consumer(stack)
    template = Template.from_stack(stack).to_json()
    (bucket_id, bucket), *others = resources(template, "AWS::S3::Bucket").items()
    assert not others
    props = bucket["Properties"]
    assert props["BucketEncryption"] == {
        "ServerSideEncryptionConfiguration": [
            {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
        ]
    }
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    (rule,) = props["LifecycleConfiguration"]["Rules"]
    assert rule["Status"] == "Enabled"
    assert rule["ExpirationInDays"] == 14
    assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": 14}
    assert rule["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    assert bucket["DeletionPolicy"] == "Retain" and bucket["UpdateReplacePolicy"] == "Retain"
    (policy,) = resources(template, "AWS::S3::BucketPolicy").values()
    (deny,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert policy["Properties"]["Bucket"] == {"Ref": bucket_id}


def test_failed_batch_retention_is_a_prop_of_at_least_14_days(stack: cdk.Stack) -> None:
    _consumer(stack, failed_batch_retention=Duration.days(30))
    bucket = only(Template.from_stack(stack).to_json(), "AWS::S3::Bucket")
    (rule,) = bucket["LifecycleConfiguration"]["Rules"]
    assert rule["ExpirationInDays"] == 30
    assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": 30}
    with pytest.raises(CdcConfigurationError, match=r"failed_batch_retention.*at least 14"):
        _consumer(cdk.Stack(cdk.App(), "Other"), failed_batch_retention=Duration.days(7))


def test_the_consumer_may_only_put_objects_into_its_own_bucket(stack: cdk.Stack) -> None:
    _consumer(stack)
    template = Template.from_stack(stack).to_json()
    bucket = _get_att(template, "ConsumerFailedBatchesBucket")
    assert _service_grants(template, _role(template, "ConsumerRole"), "s3", "kms") == {
        ("s3:PutObject", _objects(bucket)),
        ("s3:ListBucket", json.dumps(bucket)),  # AWS's documented requirement for S3
    }


def test_the_redrive_may_only_list_read_and_delete_in_that_bucket(stack: cdk.Stack) -> None:
    _consumer(stack)
    template = Template.from_stack(stack).to_json()
    bucket = _get_att(template, "ConsumerFailedBatchesBucket")
    redrive_role = _role(template, "ConsumerRedriveRole")
    assert _service_grants(template, redrive_role, "s3", "kms") == {
        ("s3:ListBucket", json.dumps(bucket)),
        ("s3:GetObject", _objects(bucket)),
        ("s3:DeleteObject", _objects(bucket)),
    }
    # With S3 the records are in the objects: the redrive never reads the stream's records. It
    # only describes the stream, for the shards' lineage (a child's objects wait for the
    # parent's, docs/design.md §5).
    # Of the idempotency table, only its redrive lease (one item: the statement's
    # dynamodb:LeadingKeys condition; tests/cdc_constructs/test_redrive.py).
    stream = {"Fn::GetAtt": [logical_id(template, "OrdersTable"), "StreamArn"]}
    idempotency = json.dumps(_get_att(template, "ConsumerIdempotencyTable"))
    assert _service_grants(template, redrive_role, "dynamodb") == {
        ("dynamodb:DescribeStream", json.dumps(stream)),
        ("dynamodb:PutItem", idempotency),
        ("dynamodb:DeleteItem", idempotency),
    }


def test_a_customer_key_encrypts_the_bucket_and_is_granted_for_data_keys_only(
    stack: cdk.Stack,
) -> None:
    key = kms.Key(stack, "Key")
    _consumer(stack, encryption_key=key)
    template = Template.from_stack(stack).to_json()
    encryption = only(template, "AWS::S3::Bucket")["BucketEncryption"]
    (setting,) = encryption["ServerSideEncryptionConfiguration"]
    assert setting["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    key_arn = json.dumps(_get_att(template, "Key"))
    consumer = _service_grants(template, _role(template, "ConsumerRole"), "kms")
    assert ("kms:GenerateDataKey", key_arn) in consumer
    assert ("kms:Decrypt", key_arn) in _service_grants(
        template, _role(template, "ConsumerRedriveRole"), "kms"
    )


# --- aws-cdk-lib's destinations, each with least privilege -----------------------------------


def test_s3_on_failure_destination_of_your_own_bucket(stack: cdk.Stack) -> None:
    key = kms.Key(stack, "Key")
    bucket = s3.Bucket(
        stack,
        "Failures",
        encryption_key=key,
        lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(14))],
    )
    consumer = _consumer(stack, on_failure=S3OnFailureDestination(bucket))
    template = Template.from_stack(stack).to_json()
    assert len(resources(template, "AWS::S3::Bucket")) == 1  # no default bucket
    arn = _get_att(template, "Failures")
    mapping = only(template, "AWS::Lambda::EventSourceMapping")
    assert mapping["DestinationConfig"]["OnFailure"]["Destination"] == arn
    key_arn = json.dumps(_get_att(template, "Key"))
    assert _service_grants(template, _role(template, "ConsumerRole"), "s3", "kms") == {
        ("s3:PutObject", _objects(arn)),
        ("s3:ListBucket", json.dumps(arn)),
        ("kms:GenerateDataKey", key_arn),
    }
    assert consumer.on_failure.kind == "s3" and consumer.dead_letter_queue is None
    env = _redrive_env(template)
    assert Template.from_stack(stack).to_json()  # synthesizes
    assert "ON_FAILURE_BUCKET_NAME" in env and "ON_FAILURE_QUEUE_URL" not in env


def test_sqs_dlq_gets_send_message_only_and_keeps_the_queue_alarm(stack: cdk.Stack) -> None:
    queue = sqs.Queue(stack, "Failures")
    consumer = _consumer(stack, on_failure=SqsDlq(queue))
    template = Template.from_stack(stack).to_json()
    arn = json.dumps(_get_att(template, "Failures"))
    assert _service_grants(template, _role(template, "ConsumerRole"), "sqs") == {
        ("sqs:SendMessage", arn),
        ("sqs:SendMessage", json.dumps(_get_att(template, "ConsumerQuarantineQueue"))),
    }
    # A bucket of its own for quarantined records too big for a message, and nothing else: the
    # consumer may put under cdc-quarantine/ only, the redrive read and delete there only.
    (bucket_id,) = resources(template, "AWS::S3::Bucket")
    assert bucket_id == logical_id(template, "ConsumerQuarantineRecordsBucket")
    quarantined = _get_att(template, "ConsumerQuarantineRecordsBucket")
    prefix = json.dumps({"Fn::Join": ["", [quarantined, "/cdc-quarantine/*"]]})
    assert _service_grants(template, _role(template, "ConsumerRole"), "s3") == {
        ("s3:PutObject", prefix)
    }
    assert _service_grants(template, _role(template, "ConsumerRedriveRole"), "s3") == {
        ("s3:GetObject", prefix),
        ("s3:DeleteObject", prefix),
    }
    assert {"DroppedRecords", "OnFailureQueueDepth"} <= set(consumer.alarms)
    env = _redrive_env(template)
    assert "ON_FAILURE_QUEUE_URL" in env and "ON_FAILURE_BUCKET_NAME" not in env
    assert consumer.dead_letter_queue is not None


def test_sns_dlq_gets_publish_only(stack: cdk.Stack) -> None:
    topic = sns.Topic(stack, "Failures")
    consumer = _consumer(stack, on_failure=SnsDlq(topic))
    template = Template.from_stack(stack).to_json()
    topic_id = logical_id(template, "Failures")
    consumer_role = _role(template, "ConsumerRole")
    assert _service_grants(template, consumer_role, "sns") == {
        ("sns:Publish", json.dumps({"Ref": topic_id}))
    }
    assert {action for action, _ in _service_grants(template, consumer_role, "s3")} == {
        "s3:PutObject"  # under cdc-quarantine/ of its quarantine bucket only (test above)
    }
    assert "DroppedRecords" in consumer.alarms
    env = _redrive_env(template)  # the redrive drains the quarantine only
    assert "ON_FAILURE_QUEUE_URL" not in env and "ON_FAILURE_BUCKET_NAME" not in env


def test_on_failure_queue_keeps_working_as_an_sqs_destination(stack: cdk.Stack) -> None:
    queue = sqs.Queue(stack, "Failures")
    consumer = _consumer(stack, on_failure_queue=queue)
    template = Template.from_stack(stack).to_json()
    mapping = only(template, "AWS::Lambda::EventSourceMapping")
    assert mapping["DestinationConfig"]["OnFailure"]["Destination"] == _get_att(
        template, "Failures"
    )
    assert consumer.dead_letter_queue is queue


def test_on_failure_is_one_of_aws_cdk_libs_destinations_and_not_given_twice(
    stack: cdk.Stack,
) -> None:
    queue = sqs.Queue(stack, "Failures")
    with pytest.raises(CdcConfigurationError) as error:
        _consumer(stack, on_failure=SqsDlq(queue), on_failure_queue=queue)
    assert "on_failure=SqsDlq(queue) replaces on_failure_queue=queue" in str(error.value)

    class Custom:
        def bind(self, target: Any, handler: Any) -> lambda_.DlqDestinationConfig:
            return lambda_.DlqDestinationConfig(destination="arn:aws:sqs:eu-west-1:1:q")

    with pytest.raises(CdcConfigurationError, match="SqsDlq, SnsDlq or S3OnFailureDestination"):
        _consumer(cdk.Stack(cdk.App(), "Other"), on_failure=Custom())
