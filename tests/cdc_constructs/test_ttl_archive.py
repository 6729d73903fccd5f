"""TtlArchive: a consumer of TTL deletions running the runtime's archive code, its bucket
(encrypted, TLS only, private, versioned, retained, lifecycle), PutObject under its prefix only;
or a member of a consumer group; refusals name what was wrong."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

from cdc_constructs import (
    CdcConfigurationError,
    ChangeCaptureTable,
    ConsumerGroupMember,
    StreamConsumer,
    StreamFilters,
    TtlArchive,
)
from tests.cdc_constructs.support import (
    cfn_lint,
    consumer_code,
    grants,
    logical_id,
    only,
    orders_table,
    resources,
)


def _template(stack: cdk.Stack) -> dict[str, Any]:
    return Template.from_stack(stack).to_json()


def _function(template: dict[str, Any]) -> dict[str, Any]:
    (function,) = [
        f["Properties"]
        for f in resources(template, "AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == "cdc_consumer.ttl_archive.handler"
    ]
    return function


def test_a_consumer_of_ttl_deletions_running_the_runtimes_archive(stack: cdk.Stack) -> None:
    TtlArchive(stack, "ExpiredOrders", table=orders_table(stack))
    template = _template(stack)

    variables = _function(template)["Environment"]["Variables"]
    bucket = logical_id(template, "ExpiredOrdersBucket")
    assert variables["CDC_ARCHIVE_BUCKET"] == {"Ref": bucket}
    assert variables["CDC_ARCHIVE_PREFIX"] == "expired/"
    assert variables["CDC_ARCHIVE_TABLE"] == {"Ref": logical_id(template, "OrdersTable")}
    assert variables["CDC_ARCHIVE_TTL_ATTRIBUTE"] == "expireAt"
    assert variables["CDC_CONSUMER_NAME"] == "ExpiredOrders"
    mapping = only(template, "AWS::Lambda::EventSourceMapping")
    patterns = [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]
    assert patterns == [StreamFilters.ttl_deletions_only()]
    assert mapping["MaximumRetryAttempts"] == 5  # a StreamConsumer's defaults


def test_the_bucket_is_private_encrypted_tls_only_versioned_and_retained(
    stack: cdk.Stack,
) -> None:
    TtlArchive(stack, "ExpiredOrders", table=orders_table(stack))
    template = Template.from_stack(stack)
    bucket_id = logical_id(template.to_json(), "ExpiredOrdersBucket")
    bucket = template.to_json()["Resources"][bucket_id]

    assert bucket["DeletionPolicy"] == "Retain"
    properties = bucket["Properties"]
    assert properties["VersioningConfiguration"] == {"Status": "Enabled"}
    assert properties["PublicAccessBlockConfiguration"] == {
        name: True
        for name in (
            "BlockPublicAcls",
            "BlockPublicPolicy",
            "IgnorePublicAcls",
            "RestrictPublicBuckets",
        )
    }
    encryption = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption[0]["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            }
        },
    )


def test_a_lifecycle_the_user_sets_is_added_to_the_noncurrent_versions_rule(
    stack: cdk.Stack,
) -> None:
    to_deep_archive = s3.LifecycleRule(
        transitions=[
            s3.Transition(
                storage_class=s3.StorageClass.DEEP_ARCHIVE, transition_after=Duration.days(180)
            )
        ]
    )
    TtlArchive(stack, "ExpiredOrders", table=orders_table(stack), lifecycle_rules=[to_deep_archive])

    template = _template(stack)
    bucket = template["Resources"][logical_id(template, "ExpiredOrdersBucket")]
    rules = bucket["Properties"]["LifecycleConfiguration"]["Rules"]
    assert rules[0]["NoncurrentVersionExpiration"] == {"NoncurrentDays": 90}
    assert rules[1]["Transitions"] == [{"StorageClass": "DEEP_ARCHIVE", "TransitionInDays": 180}]


def test_the_function_may_put_objects_under_the_prefix_and_nothing_more_in_s3(
    stack: cdk.Stack,
) -> None:
    key = kms.Key(stack, "ArchiveKey")
    TtlArchive(
        stack, "ExpiredOrders", table=orders_table(stack), encryption_key=key, archive_prefix="a/"
    )
    template = _template(stack)
    bucket = logical_id(template, "ExpiredOrdersBucket")
    role = logical_id(template, "ExpiredOrdersArchiveConsumerRole")

    on_archive = {(a, r) for a, r in grants(template, role) if bucket in r}
    objects = {"Fn::Join": ["", [{"Fn::GetAtt": [bucket, "Arn"]}, "/a/*"]]}
    assert on_archive == {("s3:PutObject", json.dumps(objects))}
    key_id = logical_id(template, "ArchiveKey")
    assert ("kms:GenerateDataKey", json.dumps({"Fn::GetAtt": [key_id, "Arn"]})) in grants(
        template, role
    )


def test_an_imported_bucket_is_used_as_it_is(stack: cdk.Stack) -> None:
    bucket = s3.Bucket.from_bucket_name(stack, "Shared", "shared-archive")
    archive = TtlArchive(stack, "ExpiredOrders", table=orders_table(stack), bucket=bucket)

    assert archive.bucket is bucket
    assert resources(_template(stack), "AWS::S3::Bucket").keys() == {
        logical_id(_template(stack), "ExpiredOrdersArchiveConsumerFailedBatchesBucket")
    }


def test_a_member_of_a_consumer_group(stack: cdk.Stack) -> None:
    orders = orders_table(stack)
    group = StreamConsumer(
        stack,
        "OrdersConsumers",
        table=orders,
        members=[ConsumerGroupMember("order-stats"), TtlArchive.group_member("ttl-archive")],
        **consumer_code(),
    )
    archive = TtlArchive(stack, "ExpiredOrders", table=orders, consumer=group, member="ttl-archive")
    template = _template(stack)

    assert archive.consumer is group and archive.consumer_name == "ttl-archive"
    assert len(resources(template, "AWS::Lambda::EventSourceMapping")) == 1
    (function,) = [
        f["Properties"]
        for f in resources(template, "AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == "index.handler"
    ]
    assert function["Environment"]["Variables"]["CDC_ARCHIVE_PREFIX"] == "expired/"
    role = logical_id(template, "OrdersConsumersRole")
    assert any(
        a == "s3:PutObject" and "ExpiredOrdersBucket" in r for a, r in grants(template, role)
    )


def _error(stack: cdk.Stack, **props: Any) -> str:
    with pytest.raises(CdcConfigurationError) as caught:
        TtlArchive(stack, "Archive", **props)
    assert stack.node.try_find_child("Archive") is None, "nothing may be built on error"
    return str(caught.value)


def test_refusals_name_each_problem(stack: cdk.Stack) -> None:
    orders = orders_table(stack)
    no_ttl = ChangeCaptureTable(
        stack,
        "NoTtl",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        time_to_live_attribute=None,
    )
    assert "time_to_live_attribute=None: the table's TTL attribute" in _error(stack, table=no_ttl)
    message = _error(stack, table=orders, archive_prefix="x", handler="mine.handler")
    assert "archive_prefix='x': '' or a string ending with '/'" in message
    assert "handler='mine.handler': not given" in message
    assert "member='ttl-archive': not given without consumer" in _error(
        stack, table=orders, member="ttl-archive"
    )


def test_a_group_without_the_member_is_refused(stack: cdk.Stack) -> None:
    orders = orders_table(stack)
    group = StreamConsumer(
        stack, "Group", table=orders, members=[ConsumerGroupMember("a")], **consumer_code()
    )
    message = _error(stack, table=orders, consumer=group, member="b", memory_size=512)
    assert "member='b': one of the consumer's members ['a']" in message
    assert "memory_size=512: not given with consumer" in message


def test_cfn_lint_is_clean_and_the_nag_packs_find_nothing(tmp_path: Any, cdk_context: dict) -> None:
    from aws_cdk import Validations
    from cdk_nag import AwsSolutionsChecks, ServerlessChecks

    from cdc_constructs.nag import CdcChecks

    app = cdk.App(outdir=str(tmp_path), context=cdk_context)
    stack = cdk.Stack(app, "Test", env=cdk.Environment(account="111111111111", region="eu-west-1"))
    TtlArchive(stack, "ExpiredOrders", table=orders_table(stack))
    Validations.of(app).add_plugins(AwsSolutionsChecks(app), ServerlessChecks(app), CdcChecks())
    app.synth()  # raises ValidationFailed on any unacknowledged finding
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [v for r in report["pluginReports"] for v in r["violations"]] == []
    assert cfn_lint(_template(stack)) == []
