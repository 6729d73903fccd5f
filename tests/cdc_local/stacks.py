"""Small CDK test apps for the local pipeline: one stack per scenario, synthesized once.

Each stack has a table with a stream, the probe handler (tests/cdc_local/handlers/probe, with a
layer) and one DynamoEventSource with the settings under test.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs

HANDLERS = Path(__file__).parent / "handlers"


def _table(
    stack: cdk.Stack, view: dynamodb.StreamViewType = dynamodb.StreamViewType.NEW_AND_OLD_IMAGES
) -> dynamodb.TableV2:
    return dynamodb.TableV2(
        stack,
        "Items",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
        dynamo_stream=view,
        time_to_live_attribute="expiresAt",
        global_secondary_indexes=[
            dynamodb.GlobalSecondaryIndexPropsV2(
                index_name="byMode",
                partition_key=dynamodb.Attribute(name="mode", type=dynamodb.AttributeType.STRING),
            )
        ],
        local_secondary_indexes=[
            dynamodb.LocalSecondaryIndexProps(
                index_name="byOther",
                sort_key=dynamodb.Attribute(name="other", type=dynamodb.AttributeType.STRING),
            )
        ],
    )


def _function(
    stack: cdk.Stack, name: str, code: str, environment: Mapping[str, str] = {}
) -> lambda_.Function:
    layer = stack.node.try_find_child("Layer") or lambda_.LayerVersion(
        stack, "Layer", code=lambda_.Code.from_asset(str(HANDLERS / "layer"))
    )
    function = lambda_.Function(
        stack,
        name,
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=lambda_.Code.from_asset(str(HANDLERS / code)),
        layers=[layer] if code == "probe" else [],
        timeout=cdk.Duration.seconds(30),
        environment=dict(environment),
    )
    # The mapping lists the table's streams when it starts (the local pipeline checks it, as the
    # Lambda guide names it); DynamoEventSource's grant on a TableV2 leaves it out.
    function.add_to_role_policy(
        iam.PolicyStatement(actions=["dynamodb:ListStreams"], resources=["*"])
    )
    return function


def _scenario(app: cdk.App, name: str, **source: Any) -> None:
    stack = cdk.Stack(app, name)
    table = _table(stack)
    function = _function(stack, "Probe", "probe")
    function.add_event_source(sources.DynamoEventSource(table, **source))


def build(outdir: Path) -> Path:
    app = cdk.App(outdir=str(outdir))

    # Basic: every resource kind, environment intrinsics, bisect + retries + RBIF + SQS destination.
    stack = cdk.Stack(app, "Basic")
    table = _table(stack)
    dlq = sqs.Queue(stack, "OnFailure", retention_period=cdk.Duration.days(14))
    sqs.Queue(
        stack, "WithRedrive", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3)
    )
    bucket = s3.Bucket(stack, "Archive")
    topic = sns.Topic(stack, "Alarms")
    sink = dynamodb.TableV2(
        stack,
        "Sink",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
    )
    function = _function(
        stack,
        "Probe",
        "probe",
        {
            "TABLE_NAME": table.table_name,
            "SINK_TABLE": sink.table_name,
            "TABLE_ARN": table.table_arn,
            "STREAM_ARN": table.table_stream_arn or "",
            "QUEUE_URL": dlq.queue_url,
            "QUEUE_NAME": dlq.queue_name,
            "QUEUE_ARN": dlq.queue_arn,
            "BUCKET_NAME": bucket.bucket_name,
            "TOPIC_ARN": topic.topic_arn,
            "JOINED": cdk.Fn.join("|", [table.table_name, "suffix"]),
            "SELECTED": cdk.Fn.select(1, cdk.Fn.split("/", table.table_arn)),
            "SUBSTITUTED": cdk.Fn.sub(
                "${AWS::Region}:${AWS::AccountId}:${Name}", {"Name": table.table_name}
            ),
        },
    )
    function.add_event_source(
        sources.DynamoEventSource(
            table,
            starting_position=lambda_.StartingPosition.TRIM_HORIZON,
            batch_size=10,
            bisect_batch_on_error=True,
            retry_attempts=2,
            max_record_age=cdk.Duration.hours(1),
            report_batch_item_failures=True,
            on_failure=sources.SqsDlq(dlq),
        )
    )
    # The probe's "write" mode puts items into the sink: its role must allow it (IAM is enforced).
    function.add_to_role_policy(
        iam.PolicyStatement(actions=["dynamodb:PutItem"], resources=[sink.table_arn])
    )

    # Plain: Lambda's defaults except a small batch and finite retries; no bisect, no RBIF.
    _scenario(
        app,
        "Plain",
        starting_position=lambda_.StartingPosition.TRIM_HORIZON,
        batch_size=4,
        retry_attempts=1,
    )

    # Filtered: INSERTs whose new status starts with "p", or TTL deletions.
    _scenario(
        app,
        "Filtered",
        starting_position=lambda_.StartingPosition.TRIM_HORIZON,
        filters=[
            lambda_.FilterCriteria.filter(
                {
                    "eventName": lambda_.FilterRule.is_equal("INSERT"),
                    "dynamodb": {
                        "NewImage": {"status": {"S": lambda_.FilterRule.begins_with("p")}}
                    },
                }
            ),
            lambda_.FilterCriteria.filter(
                {"userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]}}
            ),
        ],
    )

    # Parallel: four lanes by partition key, no retries, an SQS destination.
    stack = cdk.Stack(app, "Parallel")
    table = _table(stack)
    dlq = sqs.Queue(stack, "OnFailure")
    _function(stack, "Probe", "probe").add_event_source(
        sources.DynamoEventSource(
            table,
            starting_position=lambda_.StartingPosition.TRIM_HORIZON,
            batch_size=5,
            parallelization_factor=4,
            retry_attempts=0,
            on_failure=sources.SqsDlq(dlq),
        )
    )

    # S3 destination and record age.
    stack = cdk.Stack(app, "AgeToS3")
    table = _table(stack)
    bucket = s3.Bucket(stack, "Failures")
    _function(stack, "Probe", "probe").add_event_source(
        sources.DynamoEventSource(
            table,
            starting_position=lambda_.StartingPosition.TRIM_HORIZON,
            batch_size=10,
            retry_attempts=0,
            max_record_age=cdk.Duration.seconds(60),
            on_failure=sources.S3OnFailureDestination(bucket),
        )
    )

    # A batching window, from LATEST.
    _scenario(
        app,
        "Window",
        starting_position=lambda_.StartingPosition.LATEST,
        batch_size=3,
        max_batching_window=cdk.Duration.seconds(5),
    )

    # A tumbling window of a minute, beside bisect, retries, RBIF and an SQS destination.
    stack = cdk.Stack(app, "Tumbling")
    table = _table(stack)
    dlq = sqs.Queue(stack, "OnFailure")
    _function(stack, "Probe", "probe").add_event_source(
        sources.DynamoEventSource(
            table,
            starting_position=lambda_.StartingPosition.TRIM_HORIZON,
            batch_size=4,
            bisect_batch_on_error=True,
            retry_attempts=1,
            report_batch_item_failures=True,
            tumbling_window=cdk.Duration.seconds(60),
            on_failure=sources.SqsDlq(dlq),
        )
    )

    # Two functions, both `index.handler`, on one stream.
    stack = cdk.Stack(app, "TwoFunctions")
    table = _table(stack)
    for name, code in (("Probe", "probe"), ("Other", "other")):
        _function(stack, name, code).add_event_source(
            sources.DynamoEventSource(
                table, starting_position=lambda_.StartingPosition.TRIM_HORIZON
            )
        )

    app.synth()
    return outdir
