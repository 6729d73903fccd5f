"""Each CdcChecks rule against passing and failing fragments.

Every fragment is a small construct in one stack, synthesized once for the module: a
compliant consumer with exactly one thing changed. A fragment is identified by its construct
path, and the test checks exactly which rule ids CdcChecks reported for it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import (
    Acknowledgment,
    App,
    CfnParameter,
    CfnResource,
    Duration,
    Stack,
    Validations,
)
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk.aws_lambda_event_sources import (
    DynamoEventSource,
    S3OnFailureDestination,
    SqsDlq,
)
from constructs import Construct

from cdc_constructs.nag import RULES, CdcChecks

from .validation_report import Finding, rule_ids, synthesize_with_checks

STACK = "Fragments"
#: The fragments share tables, so their streams have many readers; readers per stream
#: (CDC-ESM11) are tested on apps of their own in test_readers.py.
SHARED_TABLES = "CDC-ESM11"
PIPE_ROLE = "arn:aws:iam::123456789012:role/pipe"
STRING = dynamodb.AttributeType.STRING

# One worker synthesizes this module's app once (the suite runs with --dist loadgroup).
pytestmark = pytest.mark.xdist_group("nag-rules")


Build = Callable[[Construct, "Shared"], None]
FRAGMENTS: dict[str, Build] = {}
EXPECTED: dict[str, set[str]] = {}


def fragment(name: str, *expected: str) -> Callable[[Build], Build]:
    """Register a fragment and the rule ids CdcChecks must report for it (and no others)."""

    def register(build: Build) -> Build:
        FRAGMENTS[name] = build
        EXPECTED[name] = set(expected)
        return build

    return register


class Shared(Construct):
    """What fragments share: tables of each stream view, a DLQ, an on-failure bucket, a topic
    and an alarmed function."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.tables = {
            view: dynamodb.Table(
                self,
                f"Table{view.value}",
                partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
                stream=view,
            )
            for view in dynamodb.StreamViewType
        }
        self.queue = sqs.Queue(self, "Dlq")
        self.bucket = s3.Bucket(self, "FailedBatches")
        self.topic = sns.Topic(self, "Failures")
        self.function = function(self, "Function")
        iterator_age_alarm(self, "IteratorAge", self.function)

    @property
    def table(self) -> dynamodb.Table:
        return self.tables[dynamodb.StreamViewType.NEW_AND_OLD_IMAGES]


def function(scope: Construct, construct_id: str) -> lambda_.Function:
    return lambda_.Function(
        scope,
        construct_id,
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
    )


def table_v2(scope: Construct, view: str) -> dynamodb.TableV2:
    """A TableV2 (AWS::DynamoDB::GlobalTable), as ChangeCaptureTable makes."""
    return dynamodb.TableV2(
        scope,
        "TableV2",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        dynamo_stream=dynamodb.StreamViewType(view),
    )


def iterator_age_alarm(scope: Construct, construct_id: str, fn: lambda_.IFunction) -> None:
    fn.metric("IteratorAge", statistic="Maximum").create_alarm(
        scope, construct_id, threshold=600_000, evaluation_periods=1
    )


def mapping(
    scope: Construct,
    shared: Shared,
    *,
    event_source_arn: str | None = None,
    fn: lambda_.IFunction | None = None,
    **changes: Any,
) -> lambda_.CfnEventSourceMapping:
    """An L1 event source mapping with every safe setting, except ``changes`` (None removes).
    Its on-failure destination is an S3 bucket (it keeps the failed batch itself)."""
    properties: dict[str, Any] = {
        "starting_position": "TRIM_HORIZON",
        "maximum_retry_attempts": 5,
        "maximum_record_age_in_seconds": 3600,
        "bisect_batch_on_function_error": True,
        "function_response_types": ["ReportBatchItemFailures"],
        "destination_config": destination(shared.bucket.bucket_arn),
    }
    properties.update(changes)
    return lambda_.CfnEventSourceMapping(
        scope,
        "Mapping",
        event_source_arn=event_source_arn or shared.table.table_stream_arn,
        function_name=(fn or shared.function).function_name,
        **{k: v for k, v in properties.items() if v is not None},
    )


def destination(arn: str) -> lambda_.CfnEventSourceMapping.DestinationConfigProperty:
    return lambda_.CfnEventSourceMapping.DestinationConfigProperty(
        on_failure=lambda_.CfnEventSourceMapping.OnFailureProperty(destination=arn)
    )


def pipe(
    scope: Construct,
    shared: Shared,
    *,
    source: str | None = None,
    filters: list[dict[str, Any]] | None = None,
    **changes: Any,
) -> pipes.CfnPipe:
    """A pipe from a table stream with every safe setting, except ``changes`` (None removes)."""
    properties: dict[str, Any] = {
        "starting_position": "TRIM_HORIZON",
        "maximum_retry_attempts": 5,
        "maximum_record_age_in_seconds": 3600,
        "on_partial_batch_item_failure": "AUTOMATIC_BISECT",
        "dead_letter_config": pipes.CfnPipe.DeadLetterConfigProperty(arn=shared.queue.queue_arn),
    }
    properties.update(changes)
    return pipes.CfnPipe(
        scope,
        "Pipe",
        role_arn=PIPE_ROLE,
        source=source or shared.table.table_stream_arn,
        target=shared.queue.queue_arn,
        source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
            dynamo_db_stream_parameters=pipes.CfnPipe.PipeSourceDynamoDBStreamParametersProperty(
                **{k: v for k, v in properties.items() if v is not None}
            ),
            filter_criteria=filter_criteria(pipes.CfnPipe, filters),
        ),
    )


def filter_criteria(l1: Any, patterns: list[dict[str, Any]] | None) -> Any:
    if not patterns:
        return None
    return l1.FilterCriteriaProperty(
        filters=[l1.FilterProperty(pattern=json.dumps(p)) for p in patterns]
    )


def filtered_mapping(
    scope: Construct,
    shared: Shared,
    pattern: dict[str, Any],
    view: dynamodb.StreamViewType | None = None,
    *,
    event_source_arn: str | None = None,
) -> None:
    """A safe mapping with one filter pattern on a stream: the shared table of ``view``'s, or
    ``event_source_arn``."""
    if view is not None:
        event_source_arn = shared.tables[view].table_stream_arn
    mapping(
        scope,
        shared,
        event_source_arn=event_source_arn,
        filter_criteria=filter_criteria(lambda_.CfnEventSourceMapping, [pattern]),
    )


def kinesis_mapping(scope: Construct, shared: Shared, **stream_props: Any) -> None:
    """A safe mapping on a new Kinesis stream, with a record age (about 28 h) that only a
    retention over the default 24 h allows."""
    stream = kinesis.Stream(scope, "Stream", **stream_props)
    mapping(
        scope, shared, event_source_arn=stream.stream_arn, maximum_record_age_in_seconds=100_000
    )


def l2_event_source(scope: Construct, shared: Shared, **changes: Any) -> None:
    """An alarmed function with the L2 DynamoEventSource, every safe setting but ``changes``."""
    fn = function(scope, "Function")
    iterator_age_alarm(scope, "Alarm", fn)
    properties: dict[str, Any] = {
        "starting_position": lambda_.StartingPosition.TRIM_HORIZON,
        "retry_attempts": 5,
        "max_record_age": Duration.hours(1),
        "bisect_batch_on_error": True,
        "report_batch_item_failures": True,
        "on_failure": S3OnFailureDestination(shared.bucket),
    }
    fn.add_event_source(DynamoEventSource(shared.table, **{**properties, **changes}))


NEW_IMAGE_FILTER = {"dynamodb": {"NewImage": {"status": {"S": ["PAID"]}}}}
OLD_IMAGE_FILTER = {"$or": [{"eventName": ["REMOVE"]}, {"dynamodb": {"OldImage": {}}}]}
TTL_DELETIONS_FILTER = {"userIdentity": {"type": ["Service"]}}


# --- passing fragments ---------------------------------------------------------------------


@fragment("compliant-mapping")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared)


@fragment("compliant-l2-event-source")
def _(scope: Construct, shared: Shared) -> None:
    l2_event_source(scope, shared, filters=[lambda_.FilterCriteria.filter(NEW_IMAGE_FILTER)])


@fragment("compliant-pipe")
def _(scope: Construct, shared: Shared) -> None:
    pipe(scope, shared, filters=[NEW_IMAGE_FILTER])


@fragment("compliant-kinesis-longer-retention")
def _(scope: Construct, shared: Shared) -> None:
    kinesis_mapping(scope, shared, retention_period=Duration.hours(48))


@fragment("compliant-through-property-override")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared, maximum_retry_attempts=None).add_property_override(
        "MaximumRetryAttempts", 3
    )


@fragment("compliant-unknown-stream-from-parameter")
def _(scope: Construct, shared: Shared) -> None:
    arn = CfnParameter(scope, "StreamArn", type="String").value_as_string
    mapping(scope, shared, event_source_arn=arn)


@fragment("compliant-filter-on-carried-image")
def _(scope: Construct, shared: Shared) -> None:
    filtered_mapping(scope, shared, NEW_IMAGE_FILTER, dynamodb.StreamViewType.NEW_IMAGE)


@fragment("compliant-filter-without-images-on-keys-only")
def _(scope: Construct, shared: Shared) -> None:
    filtered_mapping(scope, shared, TTL_DELETIONS_FILTER, dynamodb.StreamViewType.KEYS_ONLY)


@fragment("compliant-metric-math-alarm")
def _(scope: Construct, shared: Shared) -> None:
    fn = function(scope, "Function")
    cloudwatch.MathExpression(
        expression="age / 1000",
        using_metrics={"age": fn.metric("IteratorAge", statistic="Maximum")},
    ).create_alarm(scope, "Alarm", threshold=600, evaluation_periods=1)
    mapping(scope, shared, fn=fn)


@fragment("compliant-table-v2")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared, event_source_arn=table_v2(scope, "KEYS_ONLY").table_stream_arn)


@fragment("compliant-through-alias")
def _(scope: Construct, shared: Shared) -> None:
    fn = function(scope, "Function")
    iterator_age_alarm(scope, "Alarm", fn)
    alias = lambda_.Alias(scope, "Live", alias_name="live", version=fn.current_version)
    mapping(scope, shared, fn=alias)


@fragment("compliant-kinesis-enhanced-fan-out")
def _(scope: Construct, shared: Shared) -> None:
    stream = kinesis.Stream(scope, "Stream", retention_period=Duration.hours(48))
    consumer = kinesis.CfnStreamConsumer(
        scope, "Consumer", consumer_name="fan-out", stream_arn=stream.stream_arn
    )
    mapping(
        scope,
        shared,
        event_source_arn=consumer.attr_consumer_arn,
        maximum_record_age_in_seconds=100_000,
    )


@fragment("not-a-stream-sqs-mapping")
def _(scope: Construct, shared: Shared) -> None:
    lambda_.CfnEventSourceMapping(
        scope,
        "Mapping",
        event_source_arn=sqs.Queue(scope, "Queue").queue_arn,
        function_name=shared.function.function_name,
    )


@fragment("acknowledged-latest")
def _(scope: Construct, shared: Shared) -> None:
    consumer = mapping(scope, shared, starting_position="LATEST")
    Validations.of(consumer).acknowledge(
        Acknowledgment(id="CDC-ESM6", reason="only changes after go-live")
    )


# --- failing fragments ---------------------------------------------------------------------


@fragment("retries-unset", "CDC-ESM1")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared, maximum_retry_attempts=None)


@fragment("retries-infinite", "CDC-ESM1")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared, maximum_retry_attempts=-1)


@fragment("retries-from-parameter", "CDC-ESM1")
def _(scope: Construct, shared: Shared) -> None:
    retries = CfnParameter(scope, "Retries", type="Number").value_as_number
    mapping(scope, shared, maximum_retry_attempts=retries)


@fragment("pipe-retries-unset", "CDC-ESM1")
def _(scope: Construct, shared: Shared) -> None:
    pipe(scope, shared, maximum_retry_attempts=None)


@fragment("record-age-24h", "CDC-ESM2")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared, maximum_record_age_in_seconds=86_400)


@fragment("record-age-infinite", "CDC-ESM2")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared, maximum_record_age_in_seconds=-1)


@fragment("record-age-unset", "CDC-ESM2")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared, maximum_record_age_in_seconds=None)


@fragment("record-age-above-kinesis-default-retention", "CDC-ESM2")
def _(scope: Construct, shared: Shared) -> None:
    kinesis_mapping(scope, shared)


def _kinesis_consumer(scope: Construct, retention_days: int, **props: Any) -> None:
    from cdc_constructs import ChangeCaptureTable, KinesisConsumer, KinesisDestination

    table = ChangeCaptureTable(
        scope,
        "Table",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        kinesis=KinesisDestination(retention=Duration.days(retention_days)),
    )
    code = lambda_.Code.from_inline("def handler(event, context):\n    return {}\n")
    KinesisConsumer(scope, "Consumer", table=table, code=code, handler="index.handler", **props)


@fragment("compliant-kinesis-consumer-with-long-retention")
def _(scope: Construct, shared: Shared) -> None:
    _kinesis_consumer(scope, 30, max_record_age=Duration.days(2))


@fragment("kinesis-markers-expire-before-retention", "CDC-ESM9")
def _(scope: Construct, shared: Shared) -> None:
    """KinesisConsumer derives the lifetime; an escape hatch on its function sets it shorter."""
    _kinesis_consumer(scope, 30)
    consumer = scope.node.find_child("Consumer")
    consumer.function.add_environment("CDC_MARKER_TTL_SECONDS", str(7 * 24 * 3600))  # type: ignore[attr-defined]


def _runtime_consumer(scope: Construct, shared: Shared, **environment: str) -> None:
    """A consumer of this library's runtime made without its constructs: a function with the
    runtime's variables (quarantine queue kept 14 days), a mapping whose failed batches go to a
    bucket kept 30 days."""
    quarantine = sqs.Queue(scope, "Quarantine", retention_period=Duration.days(14))
    bucket = s3.Bucket(
        scope, "FailedBatches", lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(30))]
    )
    fn = function(scope, "Function")
    for name, value in {
        "CDC_CONSUMER_NAME": "stats",
        "QUARANTINE_QUEUE_URL": quarantine.queue_url,
        **environment,
    }.items():
        fn.add_environment(name, value)
    iterator_age_alarm(scope, "Alarm", fn)
    mapping(scope, shared, fn=fn, destination_config=destination(bucket.bucket_arn))


# 1 h record age, then 30 days in the bucket and up to a day more (S3 expires an object at the
# next midnight UTC after its days), then 14 days in the quarantine, plus a day.
REPLAY_WINDOWS_SECONDS = 3600 + (30 + 1 + 14 + 1) * 24 * 3600


@fragment("markers-expire-before-the-failed-batch-bucket", "CDC-ESM9")
def _(scope: Construct, shared: Shared) -> None:
    _runtime_consumer(scope, shared, CDC_MARKER_TTL_SECONDS=str(7 * 24 * 3600))


@fragment("marker-lifetime-unset", "CDC-ESM9")
def _(scope: Construct, shared: Shared) -> None:
    _runtime_consumer(scope, shared)


@fragment("compliant-marker-lifetime")
def _(scope: Construct, shared: Shared) -> None:
    _runtime_consumer(scope, shared, CDC_MARKER_TTL_SECONDS=str(REPLAY_WINDOWS_SECONDS))


@fragment("marker-lifetime-a-second-short", "CDC-ESM9")
def _(scope: Construct, shared: Shared) -> None:
    _runtime_consumer(scope, shared, CDC_MARKER_TTL_SECONDS=str(REPLAY_WINDOWS_SECONDS - 1))


@fragment("compliant-ledger-consumer-with-a-window")
def _(scope: Construct, shared: Shared) -> None:
    _runtime_consumer(
        scope,
        shared,
        CDC_MARKER_TTL_SECONDS=str(REPLAY_WINDOWS_SECONDS),
        CDC_LEDGER_TABLE_NAME="ledger",
    )
    mapping = scope.node.find_child("Mapping")
    mapping.tumbling_window_in_seconds = 900  # type: ignore[attr-defined]


@fragment("ledger-consumer-without-a-window", "CDC-ESM15")
def _(scope: Construct, shared: Shared) -> None:
    _runtime_consumer(
        scope,
        shared,
        CDC_MARKER_TTL_SECONDS=str(REPLAY_WINDOWS_SECONDS),
        CDC_LEDGER_TABLE_NAME="ledger",
    )


@fragment("compliant-window-at-a-factor-of-1")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared, tumbling_window_in_seconds=60, parallelization_factor=1)


@fragment("window-beside-a-factor-above-1", "CDC-ESM14")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared, tumbling_window_in_seconds=60, parallelization_factor=2)


@fragment("pipe-record-age-unset", "CDC-ESM2")
def _(scope: Construct, shared: Shared) -> None:
    pipe(scope, shared, maximum_record_age_in_seconds=None)


@fragment("bisect-off", "CDC-ESM3")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared, bisect_batch_on_function_error=False)


@fragment("pipe-bisect-off", "CDC-ESM3")
def _(scope: Construct, shared: Shared) -> None:
    pipe(scope, shared, on_partial_batch_item_failure=None)


@fragment("no-destination", "CDC-ESM4")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared, destination_config=None)


@fragment("pipe-no-dead-letter-config", "CDC-ESM4")
def _(scope: Construct, shared: Shared) -> None:
    pipe(scope, shared, dead_letter_config=None)


@fragment("no-report-batch-item-failures", "CDC-ESM5")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared, function_response_types=None)


@fragment("latest", "CDC-ESM6")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared, starting_position="LATEST")


@fragment("pipe-latest", "CDC-ESM6")
def _(scope: Construct, shared: Shared) -> None:
    pipe(scope, shared, starting_position="LATEST")


@fragment("new-image-filter-on-keys-only", "CDC-ESM7")
def _(scope: Construct, shared: Shared) -> None:
    filtered_mapping(scope, shared, NEW_IMAGE_FILTER, dynamodb.StreamViewType.KEYS_ONLY)


@fragment("old-image-filter-in-or-on-new-image", "CDC-ESM7")
def _(scope: Construct, shared: Shared) -> None:
    filtered_mapping(scope, shared, OLD_IMAGE_FILTER, dynamodb.StreamViewType.NEW_IMAGE)


@fragment("pipe-new-image-filter-on-old-image", "CDC-ESM7")
def _(scope: Construct, shared: Shared) -> None:
    table = shared.tables[dynamodb.StreamViewType.OLD_IMAGE]
    pipe(scope, shared, source=table.table_stream_arn, filters=[NEW_IMAGE_FILTER])


@fragment("new-image-filter-on-table-v2-keys-only", "CDC-ESM7")
def _(scope: Construct, shared: Shared) -> None:
    stream_arn = table_v2(scope, "KEYS_ONLY").table_stream_arn
    filtered_mapping(scope, shared, NEW_IMAGE_FILTER, event_source_arn=stream_arn)


TYPO_BELOW_DYNAMODB = {"dynamodb": {"NewImgae": {"status": {"S": ["PAID"]}}}}


@fragment("typo-below-dynamodb", "CDC-ESM12")
def _(scope: Construct, shared: Shared) -> None:
    filtered_mapping(scope, shared, TYPO_BELOW_DYNAMODB, dynamodb.StreamViewType.NEW_AND_OLD_IMAGES)


@fragment("pipe-attribute-type-typo", "CDC-ESM12")
def _(scope: Construct, shared: Shared) -> None:
    pipe(scope, shared, filters=[{"dynamodb": {"NewImage": {"status": {"s": ["PAID"]}}}}])


@fragment("rules-on-an-attribute-without-its-type", "CDC-ESM12")
def _(scope: Construct, shared: Shared) -> None:
    pattern = {"$or": [{"eventName": ["INSERT"]}, {"dynamodb": {"Keys": {"pk": ["O#1"]}}}]}
    filtered_mapping(scope, shared, pattern, dynamodb.StreamViewType.KEYS_ONLY)


@fragment("typo-in-the-data-of-a-table-kinesis-stream", "CDC-ESM12")
def _(scope: Construct, shared: Shared) -> None:
    stream = kinesis.Stream(scope, "Stream")
    dynamodb.Table(
        scope,
        "Table",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        kinesis_stream=stream,
    )
    pattern = {"data": {"dynamodb": {"NewImage": {"status": {"SS": ["a"], "Bool": [True]}}}}}
    filtered_mapping(scope, shared, pattern, event_source_arn=stream.stream_arn)


@fragment("typo-in-a-kinesis-record-field", "CDC-ESM12")
def _(scope: Construct, shared: Shared) -> None:
    stream = kinesis.Stream(scope, "Stream")
    filtered_mapping(scope, shared, {"partitionkey": ["A"]}, event_source_arn=stream.stream_arn)


@fragment("any-data-of-another-kinesis-stream")
def _(scope: Construct, shared: Shared) -> None:
    stream = kinesis.Stream(scope, "Stream")
    pattern = {"data": {"temperature": [{"numeric": [">", 0]}]}, "partitionKey": ["A"]}
    filtered_mapping(scope, shared, pattern, event_source_arn=stream.stream_arn)


@fragment("typed-filters-at-every-level")
def _(scope: Construct, shared: Shared) -> None:
    pattern = {
        "eventName": ["MODIFY"],
        "userIdentity": {"type": [{"exists": False}]},
        "dynamodb": {
            "Keys": {"pk": {"S": [{"prefix": "O#"}]}},
            "NewImage": {"address": {"M": {"city": {"S": ["Oslo"]}}}, "tags": {"SS": ["x"]}},
            "StreamViewType": ["NEW_AND_OLD_IMAGES"],
        },
    }
    filtered_mapping(scope, shared, pattern, dynamodb.StreamViewType.NEW_AND_OLD_IMAGES)


@fragment("no-iterator-age-alarm", "CDC-ESM8")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared, fn=function(scope, "Function"))


@fragment("alarm-on-another-metric", "CDC-ESM8")
def _(scope: Construct, shared: Shared) -> None:
    fn = function(scope, "Function")
    fn.metric_errors().create_alarm(scope, "Errors", threshold=1, evaluation_periods=1)
    mapping(scope, shared, fn=fn)


@fragment("sqs-destination-keeps-only-a-pointer", "CDC-ESM10")
def _(scope: Construct, shared: Shared) -> None:
    l2_event_source(scope, shared, on_failure=SqsDlq(shared.queue))


@fragment("sns-destination-keeps-only-a-pointer", "CDC-ESM10")
def _(scope: Construct, shared: Shared) -> None:
    mapping(scope, shared, destination_config=destination(shared.topic.topic_arn))


@fragment("sqs-destination-as-literal-arn", "CDC-ESM10")
def _(scope: Construct, shared: Shared) -> None:
    arn = "arn:aws:sqs:us-east-1:123456789012:failed-batches"
    mapping(scope, shared, destination_config=destination(arn))


@fragment("sqs-destination-on-kinesis-not-reported")
def _(scope: Construct, shared: Shared) -> None:
    stream = kinesis.Stream(scope, "Stream")
    mapping(
        scope,
        shared,
        event_source_arn=stream.stream_arn,
        destination_config=destination(shared.queue.queue_arn),
    )


TTL_DELETIONS_ONLY = {
    "eventName": ["REMOVE"],
    "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
}


def global_table(scope: Construct) -> dynamodb.CfnGlobalTable:
    """An AWS::DynamoDB::GlobalTable with a replica in a second region (an L1: the fragments'
    stack has no region, which TableV2's replicas need)."""
    return dynamodb.CfnGlobalTable(
        scope,
        "GlobalTable",
        attribute_definitions=[
            dynamodb.CfnGlobalTable.AttributeDefinitionProperty(
                attribute_name="pk", attribute_type="S"
            )
        ],
        key_schema=[
            dynamodb.CfnGlobalTable.KeySchemaProperty(attribute_name="pk", key_type="HASH")
        ],
        billing_mode="PAY_PER_REQUEST",
        replicas=[
            dynamodb.CfnGlobalTable.ReplicaSpecificationProperty(region="us-east-1"),
            dynamodb.CfnGlobalTable.ReplicaSpecificationProperty(region="us-west-2"),
        ],
        stream_specification=dynamodb.CfnGlobalTable.StreamSpecificationProperty(
            stream_view_type="NEW_AND_OLD_IMAGES"
        ),
    )


@fragment("ttl-identity-filter-on-a-table-with-replicas", "CDC-ESM13")
def _(scope: Construct, shared: Shared) -> None:
    """A TTL archive filtering on the identity would miss the other region's expiries."""
    stream_arn = global_table(scope).attr_stream_arn
    filtered_mapping(scope, shared, TTL_DELETIONS_ONLY, event_source_arn=stream_arn)


@fragment("ttl-identity-filter-of-a-pipe-on-a-table-with-replicas", "CDC-ESM13")
def _(scope: Construct, shared: Shared) -> None:
    """A pipe runs no code that could tell a replicated expiry: it is reported whatever it is."""
    pipe(scope, shared, source=global_table(scope).attr_stream_arn, filters=[TTL_DELETIONS_ONLY])


@fragment("ttl-identity-filter-on-kinesis-of-a-table-with-replicas", "CDC-ESM13")
def _(scope: Construct, shared: Shared) -> None:
    """The Kinesis stream a global table streams into carries the other regions' expiries
    without the identity too."""
    stream = kinesis.Stream(scope, "Stream")
    table = global_table(scope)
    table.replicas = [
        dynamodb.CfnGlobalTable.ReplicaSpecificationProperty(
            region=region,
            kinesis_stream_specification=dynamodb.CfnGlobalTable.KinesisStreamSpecificationProperty(
                stream_arn=stream.stream_arn
            ),
        )
        for region in ("us-east-1", "us-west-2")
    ]
    data_filter = {"data": TTL_DELETIONS_ONLY}
    filtered_mapping(scope, shared, data_filter, event_source_arn=stream.stream_arn)


@fragment("ttl-identity-filter-on-a-replicas-stream", "CDC-ESM13")
def _(scope: Construct, shared: Shared) -> None:
    """A replica's stream read at deployment (ReplicaTable's DescribeTable custom resource)."""
    describe = CfnResource(
        scope,
        "DescribeReplica",
        type="Custom::AWS",
        properties={
            "ServiceToken": "arn:aws:lambda:us-west-2:123456789012:function:provider",
            "Create": json.dumps(
                {
                    "service": "DynamoDB",
                    "action": "describeTable",
                    "parameters": {"TableName": "orders"},
                }
            ),
        },
    )
    stream_arn = describe.get_att("Table.LatestStreamArn").to_string()
    filtered_mapping(scope, shared, TTL_DELETIONS_ONLY, event_source_arn=stream_arn)


@fragment("ttl-identity-filter-on-a-single-region-table-not-reported")
def _(scope: Construct, shared: Shared) -> None:
    view = dynamodb.StreamViewType.NEW_AND_OLD_IMAGES
    filtered_mapping(scope, shared, TTL_DELETIONS_ONLY, view)


@fragment(
    "everything-unsafe",
    "CDC-ESM1",
    "CDC-ESM2",
    "CDC-ESM3",
    "CDC-ESM4",
    "CDC-ESM5",
    "CDC-ESM6",
    "CDC-ESM7",
    "CDC-ESM8",
)
def _(scope: Construct, shared: Shared) -> None:
    table = shared.tables[dynamodb.StreamViewType.KEYS_ONLY]
    lambda_.CfnEventSourceMapping(
        scope,
        "Mapping",
        event_source_arn=table.table_stream_arn,
        function_name=function(scope, "Function").function_name,
        starting_position="LATEST",
        filter_criteria=filter_criteria(lambda_.CfnEventSourceMapping, [NEW_IMAGE_FILTER]),
    )


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> list[Finding]:
    app = App(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    stack = Stack(app, STACK)
    Validations.of(stack).acknowledge(
        Acknowledgment(id=SHARED_TABLES, reason="test fragments share tables on purpose")
    )
    shared = Shared(stack, "Shared")
    for name, build in FRAGMENTS.items():
        build(Construct(stack, name), shared)
    return synthesize_with_checks(app)


@pytest.mark.parametrize("name", list(FRAGMENTS))
def test_fragment_reports_exactly_its_rules(findings: list[Finding], name: str) -> None:
    assert rule_ids(findings, f"{STACK}/{name}") == EXPECTED[name]


def test_shared_resources_are_not_reported(findings: list[Finding]) -> None:
    assert rule_ids(findings, f"{STACK}/Shared") == set()


def test_every_rule_has_a_failing_fragment() -> None:
    failing = set().union(*EXPECTED.values())
    assert failing == {rule.rule_id for rule in RULES} - {SHARED_TABLES}


def test_start_position_alarm_and_pointer_destination_are_warnings_the_rest_errors(
    findings: list[Finding],
) -> None:
    severities = {f.rule_id: f.severity for f in findings}
    warnings = {"CDC-ESM6", "CDC-ESM8", "CDC-ESM10", "CDC-ESM15"}
    assert {r for r, s in severities.items() if s == "warning"} == warnings
    assert {r for r, s in severities.items() if s == "error"} == {
        r.rule_id for r in RULES
    } - warnings - {SHARED_TABLES}


def test_findings_explain_what_to_change(findings: list[Finding]) -> None:
    (finding,) = [f for f in findings if f.construct_path.startswith(f"{STACK}/latest/")]
    assert "does not start at TRIM_HORIZON" in finding.description
    assert "Use TRIM_HORIZON" in finding.description


def test_a_ledger_consumer_without_a_window_is_told_why_and_its_price(tmp_path: Any) -> None:
    # On its own app: cdk-nag groups a rule's findings under the first one's description.
    from cdc_constructs import ChangeCaptureTable, StreamConsumer

    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Factor")
    table = ChangeCaptureTable(
        stack, "Orders", partition_key=dynamodb.Attribute(name="pk", type=STRING)
    )
    code = lambda_.Code.from_inline("def handler(event, context):\n    return {}\n")
    StreamConsumer(
        stack, "Consumer", table=table, code=code, handler="index.handler", parallelization_factor=4
    )
    (finding,) = [f for f in synthesize_with_checks(app) if f.rule_id == "CDC-ESM15"]
    assert finding.severity == "warning"
    assert (
        "its ParallelizationFactor is 4, and AWS refuses a tumbling window beside a factor "
        "above 1): its events name no shard, so the runtime keeps per-record markers, 2 write "
        "units per record in a transaction instead of about one ledger entry per transaction"
    ) in finding.description


def test_the_pointer_destination_finding_says_what_is_lost_and_the_fix(
    findings: list[Finding],
) -> None:
    (finding,) = [
        f
        for f in findings
        if f.construct_path.startswith(f"{STACK}/sqs-destination-keeps-only-a-pointer/")
    ]
    assert finding.severity == "warning"
    assert "only a pointer is kept; after 24 h a redrive can only report the records lost" in (
        finding.description
    )
    assert "on_failure=S3OnFailureDestination(bucket)" in finding.description


def test_a_filter_typo_finding_names_the_typo_its_path_and_the_field_meant(
    tmp_path: Any,
) -> None:
    # On its own app: cdk-nag groups a rule's findings under the first one's description.
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Typo")
    shared = Shared(stack, "Shared")
    view = dynamodb.StreamViewType.NEW_AND_OLD_IMAGES
    filtered_mapping(Construct(stack, "Consumer"), shared, TYPO_BELOW_DYNAMODB, view)

    (finding,) = synthesize_with_checks(app)

    assert finding.rule_id == "CDC-ESM12"
    assert finding.description.startswith(
        "filters[0].dynamodb.NewImgae: dynamodb has no field 'NewImgae' (did you mean 'NewImage'?)"
    )


def test_value_known_only_at_deployment_is_reported_with_the_value(tmp_path: Any) -> None:
    # On its own app: cdk-nag groups a rule's findings under the first one's description.
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Parameterized")
    retries = CfnParameter(stack, "Retries", type="Number").value_as_number
    mapping(Construct(stack, "Consumer"), Shared(stack, "Shared"), maximum_retry_attempts=retries)

    (finding,) = synthesize_with_checks(app)  # one reader of its stream: no CDC-ESM11

    assert finding.rule_id == "CDC-ESM1"
    assert finding.description.startswith("Rule threw an error during validation")
    assert '{"Ref":"Retries"}' in finding.description


def test_rules_have_unique_ids_and_a_one_line_cause() -> None:
    assert len({rule.rule_id for rule in RULES}) == len(RULES)
    for rule in RULES:
        assert "\n" not in rule.info
        assert rule.explanation


def test_checking_an_unsynthesized_app_names_the_fix(tmp_path: Any) -> None:
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "NotSynthesized")
    mapping(Construct(stack, "Consumer"), Shared(stack, "Shared"))
    with pytest.raises(RuntimeError, match=r"NotSynthesized.*run app\.synth\(\)"):
        CdcChecks().validate_scope(app)


def test_the_marker_lifetime_finding_says_what_to_set(findings: list[Finding]) -> None:
    path = f"{STACK}/markers-expire-before-the-failed-batch-bucket/"
    (finding,) = [f for f in findings if f.construct_path.startswith(path)]
    assert finding.rule_id == "CDC-ESM9"
    assert "Set CDC_MARKER_TTL_SECONDS on the function to at least" in finding.description
    assert "minimum_marker_lifetime" in finding.description
