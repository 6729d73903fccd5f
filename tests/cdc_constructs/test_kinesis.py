"""The Kinesis route's constructs: the table's Kinesis destination (stream encryption, mode,
retention, precision) and KinesisConsumer (mapping settings, validation against the stream's
retention, IAM, alarms, enhanced fan-out)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from cdc_constructs import (
    ChangeCaptureTable,
    KinesisConsumer,
    KinesisDestination,
    KinesisFilters,
    StreamFilters,
)
from cdc_constructs.exceptions import CdcConfigurationError
from tests.cdc_constructs.support import cfn_lint, consumer_code, only, resources, with_code

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


def kinesis_table(stack: Any, **destination: Any) -> ChangeCaptureTable:
    return ChangeCaptureTable(
        stack, "Orders", partition_key=PK, kinesis=KinesisDestination(**destination)
    )


def statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        found += policy["Properties"]["PolicyDocument"]["Statement"]
    return found


def actions_on(template: dict[str, Any], action_prefix: str) -> list[tuple[list[str], Any]]:
    found = []
    for statement in statements(template):
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        if any(action.startswith(action_prefix) for action in actions):
            found.append((sorted(actions), statement["Resource"]))
    return found


def test_table_streams_to_a_new_encrypted_on_demand_stream_in_microseconds(stack: Any) -> None:
    table = kinesis_table(stack)
    template = Template.from_stack(stack).to_json()
    stream = only(template, "AWS::Kinesis::Stream")
    assert stream["StreamEncryption"] == {"EncryptionType": "KMS", "KeyId": "alias/aws/kinesis"}
    assert stream["StreamModeDetails"] == {"StreamMode": "ON_DEMAND"}
    assert stream["RetentionPeriodHours"] == 168
    (stream_id,) = resources(template, "AWS::Kinesis::Stream")
    replica = only(template, "AWS::DynamoDB::GlobalTable")["Replicas"][0]
    assert replica["KinesisStreamSpecification"] == {
        "StreamArn": {"Fn::GetAtt": [stream_id, "Arn"]},
        "ApproximateCreationDateTimePrecision": "MICROSECOND",
    }
    # The DynamoDB stream stays: the Kinesis route is in addition, not instead.
    assert only(template, "AWS::DynamoDB::GlobalTable")["StreamSpecification"] == {
        "StreamViewType": "NEW_AND_OLD_IMAGES"
    }
    assert table.kinesis_retention is not None and table.kinesis_retention.to_hours() == 168
    (resource,) = resources(template, "AWS::Kinesis::Stream").values()
    assert resource["DeletionPolicy"] == "Retain"


def test_provisioned_customer_key_retention_and_milliseconds(stack: Any) -> None:
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    kinesis_table(
        stack,
        shard_count=4,
        encryption_key=key,
        retention=Duration.days(30),
        precision="MILLISECOND",
    )
    template = Template.from_stack(stack).to_json()
    stream = only(template, "AWS::Kinesis::Stream")
    assert stream["ShardCount"] == 4
    assert stream["StreamModeDetails"] == {"StreamMode": "PROVISIONED"}
    assert stream["RetentionPeriodHours"] == 720
    assert stream["StreamEncryption"]["EncryptionType"] == "KMS"
    assert "Fn::GetAtt" in stream["StreamEncryption"]["KeyId"]
    replica = only(template, "AWS::DynamoDB::GlobalTable")["Replicas"][0]
    assert replica["KinesisStreamSpecification"]["ApproximateCreationDateTimePrecision"] == (
        "MILLISECOND"
    )


def test_existing_stream_needs_its_retention(stack: Any) -> None:
    existing = kinesis.Stream.from_stream_arn(
        stack, "Existing", "arn:aws:kinesis:eu-west-1:111111111111:stream/changes"
    )
    with pytest.raises(CdcConfigurationError) as error:
        kinesis_table(stack, stream=existing, shard_count=2)
    message = str(error.value)
    assert "kinesis.retention=None: the existing stream's retention period" in message
    assert "kinesis.shard_count" in message
    kinesis_table(stack, stream=existing, retention=Duration.hours(48))
    template = Template.from_stack(stack).to_json()
    assert resources(template, "AWS::Kinesis::Stream") == {}
    replica = only(template, "AWS::DynamoDB::GlobalTable")["Replicas"][0]
    assert replica["KinesisStreamSpecification"]["StreamArn"] == (
        "arn:aws:kinesis:eu-west-1:111111111111:stream/changes"
    )


def test_bad_destination_props_are_refused_together(stack: Any) -> None:
    with pytest.raises(CdcConfigurationError) as error:
        kinesis_table(stack, precision="SECOND", retention=Duration.hours(12), shard_count=0)
    message = str(error.value)
    assert "3 invalid props" in message
    assert "kinesis.precision='SECOND'" in message
    assert "kinesis.retention" in message and "24 h to 365 days" in message
    assert "kinesis.shard_count=0" in message


def consumer_function(template: dict[str, Any]) -> dict[str, Any]:
    """The consumer's function (not its redrive's)."""
    (function,) = [
        f
        for f in resources(template, "AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] != "cdc_consumer.redrive_handler.handler"
    ]
    return dict(function["Properties"])


def test_consumer_defaults_mapping_and_least_privilege(stack: Any) -> None:
    table = kinesis_table(stack)
    consumer = KinesisConsumer(stack, "Replica", **consumer_code(), table=table)
    template = Template.from_stack(stack).to_json()
    mapping = only(template, "AWS::Lambda::EventSourceMapping")
    (stream_id,) = resources(template, "AWS::Kinesis::Stream")
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [stream_id, "Arn"]}
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    assert mapping["BatchSize"] == 100
    assert mapping["MaximumRetryAttempts"] == 5
    # The 7-day stream's retention minus a day (issue 30): an outage waits in the stream.
    assert mapping["MaximumRecordAgeInSeconds"] == 6 * 24 * 3600
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    # Per-record markers keyed by the DynamoDB change need no shard: no window.
    assert "TumblingWindowInSeconds" not in mapping
    assert mapping["ParallelizationFactor"] == 1
    on_failure = mapping["DestinationConfig"]["OnFailure"]["Destination"]
    assert on_failure["Fn::GetAtt"][0].startswith("ReplicaFailedBatchesBucket")
    # Kinesis read on this stream only; no DynamoDB stream actions; send on the queues only.
    # (The consumer's, then its redrive's: a range read back and the retention; issue 30.)
    kinesis_statements = actions_on(template, "kinesis:")
    assert kinesis_statements == [
        (
            [
                "kinesis:DescribeStream",
                "kinesis:DescribeStreamSummary",
                "kinesis:GetRecords",
                "kinesis:GetShardIterator",
                "kinesis:ListShards",
            ],
            {"Fn::GetAtt": [stream_id, "Arn"]},
        ),
        (
            [
                "kinesis:DescribeStreamSummary",
                "kinesis:GetRecords",
                "kinesis:GetShardIterator",
            ],
            {"Fn::GetAtt": [stream_id, "Arn"]},
        ),
    ]
    assert actions_on(template, "dynamodb:GetRecords") == []
    assert actions_on(template, "dynamodb:DescribeStream") == []
    for statement in statements(template):
        assert statement["Resource"] != "*"
    variables = consumer_function(template)["Environment"]["Variables"]
    assert variables["CDC_CONSUMER_NAME"] == "Replica"
    # The replay windows (cdc_constructs.marker_lifetime): the 7-day stream, or the 6-day record
    # age then 14 days in the failed-batch bucket (and a day of S3's rounding to midnight UTC),
    # then 14 days in the quarantine, plus a day.
    assert variables["CDC_MARKER_TTL_SECONDS"] == str((6 + 14 + 1 + 14 + 1) * 24 * 3600)
    assert set(consumer.alarms) >= {
        "IteratorAge",
        "DroppedRecords",
        "FunctionErrors",
        "FunctionThrottles",
        "RecordsQuarantined",
    }


def test_consumer_record_age_must_stay_below_the_kinesis_retention(stack: Any) -> None:
    table = kinesis_table(stack, retention=Duration.hours(24))
    with pytest.raises(CdcConfigurationError) as error:
        KinesisConsumer(
            stack, "Late", **consumer_code(), table=table, max_record_age=Duration.hours(24)
        )
    assert "max_record_age" in str(error.value)
    assert "Kinesis stream's retention (86400 s)" in str(error.value)
    # Above DynamoDB Streams' 24 h is fine when the Kinesis stream keeps records longer.
    longer = ChangeCaptureTable(
        stack,
        "Longer",
        partition_key=PK,
        kinesis=KinesisDestination(retention=Duration.days(7)),
    )
    KinesisConsumer(
        stack, "Patient", **consumer_code(), table=longer, max_record_age=Duration.days(2)
    )


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"retry_attempts": -1}, "retry_attempts=-1"),
        ({"starting_position": lambda_.StartingPosition.LATEST}, "starting_position"),
        ({"batch_size": 0}, "batch_size=0"),
        ({"parallelization_factor": 11}, "parallelization_factor=11"),
        ({"max_record_age": Duration.days(8)}, "max_record_age"),
        ({"filters": [{"dynamodb": {"Keys": {}}}]}, "the DynamoDB change is under 'data'"),
        ({"filters": [{}] * 6}, "at most 5 patterns"),
        (
            {"tumbling_window": Duration.minutes(1)},
            "tumbling_window=Duration.minutes.1.: omitted: a KinesisConsumer keeps per-record "
            "markers",
        ),
    ],
)
def test_consumer_refuses_unsafe_settings(stack: Any, props: dict[str, Any], expected: str) -> None:
    table = kinesis_table(stack, retention=Duration.days(30))
    with pytest.raises(CdcConfigurationError, match=expected.replace("(", r"\(")):
        KinesisConsumer(stack, "Consumer", table=table, **with_code(props))


def test_consumer_needs_a_kinesis_source(stack: Any) -> None:
    plain = ChangeCaptureTable(stack, "Plain", partition_key=PK)
    with pytest.raises(CdcConfigurationError, match="kinesis=KinesisDestination"):
        KinesisConsumer(stack, "NoKinesis", **consumer_code(), table=plain)
    with pytest.raises(CdcConfigurationError, match="stream_retention=None"):
        KinesisConsumer(
            stack,
            "NoRetention",
            **consumer_code(),
            stream=kinesis.Stream.from_stream_arn(
                stack, "S", "arn:aws:kinesis:eu-west-1:111111111111:stream/s"
            ),
        )


def test_filters_on_data_fields_synthesize(stack: Any) -> None:
    table = kinesis_table(stack)
    KinesisConsumer(
        stack,
        "Archive",
        **consumer_code(),
        table=table,
        filters=[KinesisFilters.on_data(StreamFilters.ttl_deletions_only())],
    )
    mapping = only(Template.from_stack(stack).to_json(), "AWS::Lambda::EventSourceMapping")
    (pattern,) = mapping["FilterCriteria"]["Filters"]
    assert json.loads(pattern["Pattern"]) == {
        "data": {
            "eventName": ["REMOVE"],
            "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
        }
    }


def test_enhanced_fan_out_consumer(stack: Any) -> None:
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    table = kinesis_table(stack, encryption_key=key)
    KinesisConsumer(stack, "Fast", **consumer_code(), table=table, enhanced_fan_out=True)
    template = Template.from_stack(stack).to_json()
    (consumer_id,) = resources(template, "AWS::Kinesis::StreamConsumer")
    mapping_resource = next(iter(resources(template, "AWS::Lambda::EventSourceMapping").values()))
    assert consumer_id in mapping_resource["DependsOn"]
    assert mapping_resource["Properties"]["EventSourceArn"] == {
        "Fn::GetAtt": [consumer_id, "ConsumerARN"]
    }
    fan_out = [s for s in actions_on(template, "kinesis:") if "kinesis:SubscribeToShard" in s[0]]
    assert fan_out == [
        (
            ["kinesis:DescribeStreamConsumer", "kinesis:SubscribeToShard"],
            {"Fn::GetAtt": [consumer_id, "ConsumerARN"]},
        )
    ]
    decrypt = actions_on(template, "kms:Decrypt")
    assert any(resource == {"Fn::GetAtt": ["Key961B73FD", "Arn"]} for _, resource in decrypt)


def test_the_kinesis_route_template_passes_cfn_lint(stack: Any) -> None:
    table = kinesis_table(stack, shard_count=2)
    consumer = KinesisConsumer(
        stack, "Replica", **consumer_code(), table=table, enhanced_fan_out=True
    )
    consumer.grant_view_table(
        dynamodb.TableV2(stack, "View", partition_key=PK), env_var="VIEW_TABLE_NAME"
    )
    assert cfn_lint(Template.from_stack(stack).to_json()) == []


@pytest.mark.parametrize(
    ("retention", "age"),
    [
        (Duration.hours(24), Duration.hours(1)),  # never below the stream route's hour
        (Duration.hours(48), Duration.hours(24)),
        (Duration.days(7), Duration.days(6)),
        (Duration.days(30), Duration.days(7)),  # AWS's most for a mapping
    ],
)
def test_the_default_record_age_is_the_retention_minus_a_day_within_aws_range(
    stack: Any, retention: Duration, age: Duration
) -> None:
    """Issue 30: one hour on a seven-day stream sent every outage longer than an hour to the
    bucket; the default follows the stream's retention (RETAINED_RECORD_AGE_MARGIN_SECONDS)."""
    consumer = KinesisConsumer(
        stack, "Replica", **consumer_code(), table=kinesis_table(stack, retention=retention)
    )
    mapping = only(Template.from_stack(stack).to_json(), "AWS::Lambda::EventSourceMapping")
    assert mapping["MaximumRecordAgeInSeconds"] == age.to_seconds()
    assert consumer.max_record_age.to_seconds() == age.to_seconds()


def test_a_given_record_age_is_kept_and_the_lag_alarm_stays_at_15_minutes(stack: Any) -> None:
    table = kinesis_table(stack)
    KinesisConsumer(stack, "Derived", **consumer_code(), table=table)
    KinesisConsumer(
        stack,
        "Given",
        **consumer_code(),
        table=table,
        max_record_age=Duration.minutes(20),
        extra_reader_reason="Kinesis: no reader limit checked here",
    )
    template = Template.from_stack(stack).to_json()
    ages = sorted(
        m["MaximumRecordAgeInSeconds"]
        for m in resources(template, "AWS::Lambda::EventSourceMapping").values()
        for m in [m["Properties"]]
    )
    assert ages == [1200, 6 * 24 * 3600]
    lags = sorted(
        a["Properties"]["Threshold"]
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "IteratorAge"
    )
    assert lags == [300_000, 900_000]  # a quarter of 20 minutes; 15 minutes, not 36 hours


def _replication_alarms(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = {}
    for alarm in resources(template, "AWS::CloudWatch::Alarm").values():
        properties = alarm["Properties"]
        for metric in properties.get("Metrics", []):
            expression = json.dumps(metric.get("Expression", ""))
            for name in (
                "AgeOfOldestUnreplicatedRecord",
                "ThrottledPutRecordCount",
                "FailedToReplicateRecordCount",
            ):
                if f"MAX({name})" in expression:
                    found[name] = {
                        **properties,
                        "expression": expression,
                        "period": metric["Period"],
                    }
    return found


def test_the_tables_replication_to_its_stream_is_alarmed(stack: Any) -> None:
    """Issue 30: a change DynamoDB cannot put into the stream reaches no consumer, and no
    consumer metric moves; DynamoDB's own replication metrics are alarmed."""
    consumer = KinesisConsumer(stack, "Replica", **consumer_code(), table=kinesis_table(stack))
    template = Template.from_stack(stack).to_json()
    alarms = _replication_alarms(template)
    assert set(alarms) == {
        "AgeOfOldestUnreplicatedRecord",
        "ThrottledPutRecordCount",
        "FailedToReplicateRecordCount",
    }
    for alarm in alarms.values():
        assert 'SCHEMA(\\"AWS/DynamoDB\\", DelegatedOperation, TableName)' in alarm["expression"]
        assert "WHERE TableName = '" in alarm["expression"]
        assert alarm["period"] == 300
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert alarm["AlarmActions"] and alarm["OKActions"]  # the consumer's topic
    assert alarms["AgeOfOldestUnreplicatedRecord"]["Threshold"] == 900_000
    assert alarms["ThrottledPutRecordCount"]["EvaluationPeriods"] == 2
    assert alarms["FailedToReplicateRecordCount"]["Threshold"] == 1
    assert alarms["FailedToReplicateRecordCount"]["EvaluationPeriods"] == 1
    assert {"ReplicationAge", "ReplicationThrottled", "ReplicationFailed"} <= set(consumer.alarms)
    assert "DestinationDeliveryFailures" in consumer.alarms


def test_without_the_table_or_monitoring_there_are_no_replication_alarms(stack: Any) -> None:
    stream = kinesis.Stream(stack, "Changes", retention_period=Duration.days(7))
    by_stream = KinesisConsumer(
        stack, "ByStream", **consumer_code(), stream=stream, stream_retention=Duration.days(7)
    )
    quiet = KinesisConsumer(
        stack, "Quiet", **consumer_code(), table=kinesis_table(stack), monitoring=False
    )
    assert by_stream.replication_alarms is None and quiet.replication_alarms is None
    assert _replication_alarms(Template.from_stack(stack).to_json()) == {}
