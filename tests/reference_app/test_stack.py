"""The reference stack as `make synth` builds it: snapshot, cdk-nag, cfn-lint, IAM, must-shows.

The stack is synthesized once per test process (the ``reference`` fixture); the tests are in
one xdist group so that happens once per suite run.

Snapshot: tests/snapshots/CdcReferenceStack.json, asset hashes normalized. After an intended
change, review the diff of ``UPDATE_SNAPSHOTS=1 make test`` (or
``UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/reference_app/test_stack.py -k snapshot``)
and commit it.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from tests.cdc_constructs.support import (
    SNAPSHOT_DIR,
    Synthesized,
    actions,
    cfn_lint,
    grants,
    logical_id,
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
    acks = acknowledgements_of(reference)
    assert acks, "expected the by-design acknowledgements"
    for path, rule, reason in acks:
        assert path.count("/") >= 2, f"{rule} acknowledged too broadly, on {path}"
        assert len(reason) > 60, f"{rule} on {path}: reason too thin: {reason!r}"
        assert re.fullmatch(r"(AwsSolutions|Serverless|CDC)-\w+(\[[^\]]+\])?", rule), rule
    assert (
        "AwsSolutions-IAM5[Resource::<"
        f"{logical_id(reference.template, 'ExpiredOrdersArchiveBucket')}.Arn>/expired-orders/*]"
    ) in {rule for _, rule, _ in acks}
    # Two readers of the orders stream (the consumers' mapping and the OrderPaid pipe): no
    # third reader to accept (CDC-ESM11).
    assert [rule for _, rule, _ in acks if rule == "CDC-ESM11"] == []


def acknowledgements_of(reference: Synthesized) -> list[tuple[str, str, str]]:
    from cdc_constructs.nag.summary import acknowledgements

    return acknowledgements(reference.app)


def test_cfn_lint_is_clean(reference: Synthesized):
    matches = cfn_lint(reference.template)
    assert matches == []


def _resource(template: dict, prefix: str) -> dict:
    return template["Resources"][logical_id(template, prefix)]["Properties"]


def test_mapping_of_the_reference_consumer(reference: Synthesized):
    mapping = _resource(reference.template, "OrdersConsumersFunctionStreamMapping")
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["MaximumRetryAttempts"] == 5
    assert mapping["MaximumRecordAgeInSeconds"] == 3600
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["MetricsConfig"] == {"Metrics": ["EventCount"]}
    destination = mapping["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
    bucket = reference.template["Resources"][destination]
    # The default on-failure destination: a bucket that keeps each failed batch whole.
    assert destination.startswith("OrdersConsumersFailedBatchesBucket")
    assert bucket["Type"] == "AWS::S3::Bucket"
    assert bucket["DeletionPolicy"] == "Retain"
    assert bucket["Properties"]["VersioningConfiguration"] == {"Status": "Enabled"}
    (policy,) = [
        p["Properties"]["PolicyDocument"]
        for p in resources(reference.template, "AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": destination}
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
    assert len(tables) == 4  # orders, order-stats view, idempotency and its ledger table


def test_function_environment_names_every_resource_the_runtime_uses(reference: Synthesized):
    env = _resource(reference.template, "OrdersConsumersFunction")["Environment"]["Variables"]
    assert env["CDC_CONSUMER_NAME"] == "orders-consumers"
    assert [m["name"] for m in json.loads(env["CDC_CONSUMER_GROUP"])] == [
        "order-stats",
        "ttl-archive",
    ]
    assert env["CDC_METRICS_NAMESPACE"] == "CdcConstructs"
    for name in ("IDEMPOTENCY_TABLE_NAME", "QUARANTINE_QUEUE_URL", "VIEW_TABLE_NAME"):
        assert set(env[name]) == {"Ref"}, name


def test_no_wildcard_actions_in_any_policy(reference: Synthesized):
    wildcard = [a for s in statements(reference.template) for a in actions(s) if "*" in a]
    assert wildcard == []
    for resource in resources(reference.template, "AWS::SQS::QueuePolicy").values():
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            assert statement["Effect"] == "Deny" or "*" not in str(statement["Action"])


def test_no_resource_policy_allows_a_wildcard_action(reference: Synthesized):
    """Key, queue, topic and bucket policies too: their ``*`` actions are all Deny (TLS-only),
    except AWS's default key policy, which gives the account root ``kms:*`` so that IAM policies
    (which have no wildcard, above) decide who may use the key, and the logs key's statement
    for CloudWatch Logs, AWS's documented one (``kms:Encrypt*``...), for this account's log
    groups only (its encryption-context condition)."""
    allowed_wildcards = []
    for resource_id, resource in reference.template["Resources"].items():
        props = resource.get("Properties", {})
        for key in ("PolicyDocument", "KeyPolicy"):
            document = props.get(key)
            if not document:
                continue
            for statement in _as_list(document["Statement"]):
                if statement["Effect"] == "Allow" and any("*" in a for a in actions(statement)):
                    allowed_wildcards.append((resource["Type"], resource_id, statement))
    root = {
        "AWS": {
            "Fn::Join": [
                "",
                ["arn:", {"Ref": "AWS::Partition"}, ":iam::", {"Ref": "AWS::AccountId"}, ":root"],
            ]
        }
    }
    logs = [s for _, key, s in allowed_wildcards if key.startswith("LogsKey") and "Sid" in s]
    assert [s["Sid"] for s in logs] == ["AllowCloudWatchLogsOfThisAccount"]
    assert "kms:EncryptionContext:aws:logs:arn" in logs[0]["Condition"]["ArnLike"]
    assert [
        (kind, s["Action"], s["Principal"]) for kind, _, s in allowed_wildcards if s not in logs
    ] == [("AWS::KMS::Key", "kms:*", root)] * 2  # the alarm key's and the logs key's


def _as_list(value):
    return value if isinstance(value, list) else [value]


@pytest.mark.parametrize("consumer", ["OrdersConsumers"])
def test_each_consumer_reads_only_its_stream_and_sends_only_to_its_own_queues(
    reference: Synthesized, consumer: str
):
    template = reference.template
    role_grants = grants(template, role=logical_id(template, f"{consumer}Role"))
    stream = json.dumps({"Fn::GetAtt": [logical_id(template, "OrdersTable"), "StreamArn"]})
    stream_actions = {"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}
    assert {r for a, r in role_grants if a in stream_actions} == {stream}
    own_queue = json.dumps(
        {"Fn::GetAtt": [logical_id(template, f"{consumer}QuarantineQueue"), "Arn"]}
    )
    assert {r for a, r in role_grants if a.startswith("sqs:")} == {own_queue}
    assert {a for a, _ in role_grants if a.startswith("sqs:")} == {"sqs:SendMessage"}
    own_bucket = {"Fn::GetAtt": [logical_id(template, f"{consumer}FailedBatchesBucket"), "Arn"]}
    objects = json.dumps({"Fn::Join": ["", [own_bucket, "/*"]]})
    bucket_grants = {
        (a, r) for a, r in role_grants if a.startswith("s3:") and "FailedBatchesBucket" in r
    }
    assert bucket_grants == {("s3:PutObject", objects), ("s3:ListBucket", json.dumps(own_bucket))}
    assert not any(a.startswith("lambda:") for a, _ in role_grants)


def test_consumer_role_has_only_what_the_runtime_needs(reference: Synthesized):
    template = reference.template
    by_prefix = {
        prefix: json.dumps({"Fn::GetAtt": [logical_id(template, prefix), attribute]})
        for prefix, attribute in [
            ("OrdersTable", "StreamArn"),
            ("IdempotencyTable", "Arn"),
            ("IdempotencyLedgerTable", "Arn"),
            ("OrderStatsView", "Arn"),
            ("OrdersConsumersFailedBatchesBucket", "Arn"),
            ("OrdersConsumersQuarantineQueue", "Arn"),
            ("OrdersConsumersLogGroup", "Arn"),
            ("ExpiredOrdersArchiveBucket", "Arn"),
        ]
    }
    expected = {
        *[
            (a, by_prefix["OrdersTable"])
            for a in (
                "dynamodb:DescribeStream",
                "dynamodb:GetRecords",
                "dynamodb:GetShardIterator",
            )
        ],
        # No resource-level permission: the Lambda guide lists it for a DynamoDB stream source.
        ("dynamodb:ListStreams", "*"),
        *[
            (a, by_prefix["IdempotencyTable"])
            for a in (
                "dynamodb:BatchGetItem",  # Contributions' read of a batch's contributions
                "dynamodb:ConditionCheckItem",
                "dynamodb:DeleteItem",
                "dynamodb:GetItem",
                "dynamodb:PutItem",
                "dynamodb:UpdateItem",
            )
        ],
        *[
            (a, by_prefix["IdempotencyLedgerTable"])
            for a in (
                "dynamodb:BatchGetItem",  # the batch's lane heads (with an upgrade's markers)
                "dynamodb:GetItem",  # a lane's head again, after a conflict
                "dynamodb:PutItem",  # an entry, in the transaction
                "dynamodb:Query",  # the entries around a batch, one request
                "dynamodb:UpdateItem",  # the head, in the transaction
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
        (
            "s3:PutObject",
            json.dumps(
                {
                    "Fn::Join": [
                        "",
                        [json.loads(by_prefix["OrdersConsumersFailedBatchesBucket"]), "/*"],
                    ]
                }
            ),
        ),
        ("s3:ListBucket", by_prefix["OrdersConsumersFailedBatchesBucket"]),
        ("sqs:SendMessage", by_prefix["OrdersConsumersQuarantineQueue"]),
        ("logs:CreateLogStream", by_prefix["OrdersConsumersLogGroup"]),
        ("logs:PutLogEvents", by_prefix["OrdersConsumersLogGroup"]),
        # The TTL archive member's one S3 call, under its prefix only.
        (
            "s3:PutObject",
            json.dumps(
                {
                    "Fn::Join": [
                        "",
                        [json.loads(by_prefix["ExpiredOrdersArchiveBucket"]), "/expired-orders/*"],
                    ]
                }
            ),
        ),
    }
    assert grants(template, role=logical_id(template, "OrdersConsumersRole")) == expected


def test_alarms_notify_the_topic(reference: Synthesized):
    template = reference.template
    topic = logical_id(template, "AlarmsTopic")
    all_alarms = resources(template, "AWS::CloudWatch::Alarm")
    # The consumers' function and mapping: lag, dropped records (the on-failure alarm,
    # whatever the destination), failed deliveries to the destination, quarantine depth,
    # errors, throttles and the redrive's lost records and errors; per member (order-stats,
    # ttl-archive): quarantined, foreign markers and contention failures; the fan-out: 3 pipe
    # failures and its DLQ;
    # each OrderPaid route: its dead-letter queue; the order-stats backfill: failed, timed-out
    # and aborted executions, and its segment function's errors and throttles.
    assert len(all_alarms) == 8 + 2 * 3 + 4 + 2 + 3 + 2
    for alarm in all_alarms.values():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic}]
        assert alarm["Properties"]["OKActions"] == [{"Ref": topic}]
    names = {a["Properties"]["MetricName"] for a in all_alarms.values()}
    assert names == {
        "IteratorAge",
        "DroppedEventCount",
        "ApproximateNumberOfMessagesVisible",
        "RecordsQuarantined",
        "ForeignMarkers",
        "ContentionFailures",
        "Errors",
        "Throttles",
        "RedriveLostRecords",
        "DestinationDeliveryFailures",
        "ExecutionFailed",
        "ExecutionPartiallyFailed",
        "ExecutionTimeout",
        "ExecutionsFailed",
        "ExecutionsTimedOut",
        "ExecutionsAborted",
    }
    alarms = {
        a["Properties"]["MetricName"]: a["Properties"]
        for lid, a in all_alarms.items()
        if lid.startswith("OrdersConsumers") and "ttlarchive" not in lid
    }
    lag = alarms["IteratorAge"]
    assert lag["Statistic"] == "Maximum"
    assert lag["Threshold"] == 900_000 < 3600 * 1000
    quarantined = alarms["RecordsQuarantined"]
    assert quarantined["Namespace"] == "CdcConstructs"
    assert quarantined["Dimensions"] == [{"Name": "Consumer", "Value": "order-stats"}]
    assert quarantined["Threshold"] == 1
    assert quarantined["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    lost = alarms["RedriveLostRecords"]
    assert lost["Dimensions"] == [{"Name": "Consumer", "Value": "orders-consumers"}]
    assert len(resources(template, "AWS::CloudWatch::Dashboard")) == 1


def test_alarm_topic_is_encrypted_and_tls_only(reference: Synthesized):
    template = reference.template
    topic = only(template, "AWS::SNS::Topic")
    assert topic["KmsMasterKeyId"] == {"Fn::GetAtt": [logical_id(template, "AlarmsKey"), "Arn"]}
    key = _resource(template, "AlarmsKey")
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


# ---- redrive -------------------------------------------------------------------------------


@pytest.mark.parametrize(("consumer", "name"), [("OrdersConsumers", "orders-consumers")])
def test_each_consumer_has_its_redrive_function(reference: Synthesized, consumer: str, name: str):
    template = reference.template
    function = _resource(template, f"{consumer}RedriveFunction")
    assert function["Handler"] == "cdc_consumer.redrive_handler.handler"
    assert function["Runtime"] == "python3.14"
    assert function["ReservedConcurrentExecutions"] == 1
    env = function["Environment"]["Variables"]
    assert env["CONSUMER_FUNCTION_NAME"] == {"Ref": logical_id(template, f"{consumer}Function")}
    assert env["CDC_CONSUMER_NAME"] == name
    consumer_env = _resource(template, f"{consumer}Function")["Environment"]["Variables"]
    assert env["CDC_CONSUMER_GROUP"] == consumer_env["CDC_CONSUMER_GROUP"]
    bucket_id = logical_id(template, f"{consumer}FailedBatchesBucket")
    assert env["ON_FAILURE_BUCKET_NAME"] == {"Ref": bucket_id}
    assert env["EVENT_SOURCE_MAPPING_UUID"] == {
        "Ref": logical_id(template, f"{consumer}FunctionStreamMapping")
    }
    assert "ON_FAILURE_QUEUE_URL" not in env
    bucket = {"Fn::GetAtt": [bucket_id, "Arn"]}
    objects = json.dumps({"Fn::Join": ["", [bucket, "/*"]]})
    queues = [
        json.dumps({"Fn::GetAtt": [logical_id(template, f"{consumer}QuarantineQueue"), "Arn"]})
    ]
    log_group = json.dumps(
        {"Fn::GetAtt": [logical_id(template, f"{consumer}RedriveLogGroup"), "Arn"]}
    )
    consumer_arn = json.dumps({"Fn::GetAtt": [logical_id(template, f"{consumer}Function"), "Arn"]})
    stream = {"Fn::GetAtt": [logical_id(template, "OrdersTable"), "StreamArn"]}
    idempotency = json.dumps({"Fn::GetAtt": [logical_id(template, "IdempotencyTable"), "Arn"]})
    assert grants(template, role=logical_id(template, f"{consumer}RedriveRole")) == {
        ("lambda:InvokeFunction", consumer_arn),
        *[
            (action, queue)
            for action in (
                "sqs:ChangeMessageVisibility",
                "sqs:DeleteMessage",
                # Redrive.check() reads the queue's ARN before it touches a message.
                "sqs:GetQueueAttributes",
                "sqs:ReceiveMessage",
            )
            for queue in queues
        ],
        # The batches are in the bucket's objects: list, read, delete; of the stream only its
        # shard lineage (a child shard's batches are replayed after its parent's), no records.
        ("dynamodb:DescribeStream", json.dumps(stream)),
        ("s3:ListBucket", json.dumps(bucket)),
        ("s3:GetObject", objects),
        ("s3:DeleteObject", objects),
        ("logs:CreateLogStream", log_group),
        ("logs:PutLogEvents", log_group),
        # The redrive lease (one redrive of the consumer at a time): its item only, by the
        # statement's dynamodb:LeadingKeys condition.
        ("dynamodb:PutItem", idempotency),
        ("dynamodb:DeleteItem", idempotency),
    }
    assert env["IDEMPOTENCY_TABLE_NAME"] == consumer_env["IDEMPOTENCY_TABLE_NAME"]


# ---- TTL archive ----------------------------------------------------------------------------


def test_order_stats_and_the_ttl_archive_share_one_mapping(reference: Synthesized):
    """The orders stream serves two readers per shard: the consumers' mapping and the pipe.
    The mapping delivers every change (order-stats takes them all); the group hands the TTL
    archive only TTL deletions."""
    template = reference.template
    mappings = resources(template, "AWS::Lambda::EventSourceMapping")
    pipes = resources(template, "AWS::Pipes::Pipe")
    assert len(mappings) + len(pipes) == 2
    mapping = _resource(template, "OrdersConsumersFunctionStreamMapping")
    assert "FilterCriteria" not in mapping
    assert mapping["MaximumRetryAttempts"] == 5 and mapping["BisectBatchOnFunctionError"]
    function = _resource(template, "OrdersConsumersFunction")
    assert function["Handler"] == "cdc_consumer.window_handler.handler"  # windowed
    env = function["Environment"]["Variables"]
    assert env["CDC_HANDLER"] == "orders_consumers.handler"
    # The TtlArchive gives the member its bucket, prefix, table and TTL attribute.
    assert env["CDC_ARCHIVE_BUCKET"] == {"Ref": logical_id(template, "ExpiredOrdersArchiveBucket")}
    assert env["CDC_ARCHIVE_PREFIX"] == "expired-orders/"
    assert env["CDC_ARCHIVE_TABLE"] == {"Ref": logical_id(template, "OrdersTable")}
    assert env["CDC_ARCHIVE_TTL_ATTRIBUTE"] == "expireAt"
    assert json.loads(env["CDC_CONSUMER_GROUP"]) == [
        {"name": "order-stats", "filters": []},
        {
            "name": "ttl-archive",
            "filters": [
                {
                    "eventName": ["REMOVE"],
                    "userIdentity": {
                        "type": ["Service"],
                        "principalId": ["dynamodb.amazonaws.com"],
                    },
                }
            ],
        },
    ]


def test_ttl_archive_may_only_put_objects_under_its_prefix(reference: Synthesized):
    from reference_app.handlers.orders_schema import ARCHIVE_PREFIX

    template = reference.template
    bucket = logical_id(template, "ExpiredOrdersArchiveBucket")
    archive = json.dumps({"Fn::GetAtt": [bucket, "Arn"]})[:-2]  # the archive bucket's ARN
    s3_grants = {
        (action, resource)
        for action, resource in grants(template)
        if action.startswith("s3:") and archive in resource
    }
    assert s3_grants == {
        (
            "s3:PutObject",
            json.dumps(
                {"Fn::Join": ["", [{"Fn::GetAtt": [bucket, "Arn"]}, f"/{ARCHIVE_PREFIX}*"]]}
            ),
        )
    }


def test_archive_bucket_is_encrypted_tls_only_private_logged_and_versioned(
    reference: Synthesized,
):
    template = reference.template
    bucket = _resource(template, "ExpiredOrdersArchiveBucket")
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert bucket["LoggingConfiguration"]["DestinationBucketName"] == {
        "Ref": logical_id(template, "ArchiveAccessLogs")
    }
    # No transition: an archived order is one small object, which S3 would not transition.
    (noncurrent,) = bucket["LifecycleConfiguration"]["Rules"]
    # The only copy of expired orders: versioned, replaced or deleted versions kept 90 days.
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    assert noncurrent["NoncurrentVersionExpiration"] == {"NoncurrentDays": 90}
    assert noncurrent["Status"] == "Enabled"
    for prefix in ("ExpiredOrdersArchiveBucketPolicy", "ArchiveAccessLogsPolicy"):
        policy = _resource(template, prefix)["PolicyDocument"]["Statement"]
        assert any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            for s in policy
        ), prefix
    assert (
        template["Resources"][logical_id(template, "ExpiredOrdersArchiveBucket")]["DeletionPolicy"]
        == "Retain"
    )


# ---- order-paid fan-out ------------------------------------------------------------------------


def test_order_paid_pipe_publishes_only_orders_becoming_paid(reference: Synthesized):
    pipe = only(reference.template, "AWS::Pipes::Pipe")
    source = pipe["SourceParameters"]["DynamoDBStreamParameters"]
    assert source["StartingPosition"] == "TRIM_HORIZON"
    assert source["MaximumRetryAttempts"] == 5
    assert source["MaximumRecordAgeInSeconds"] == 3600
    assert source["OnPartialBatchItemFailure"] == "AUTOMATIC_BISECT"
    patterns = [
        json.loads(f["Pattern"]) for f in pipe["SourceParameters"]["FilterCriteria"]["Filters"]
    ]
    paid = {
        "status": {"S": ["paid"]},
        "customerId": {"S": [{"exists": True}]},
        "amount": {"N": [{"exists": True}]},
    }
    assert patterns == [
        {"eventName": ["INSERT"], "dynamodb": {"NewImage": paid}},
        {
            "eventName": ["MODIFY"],
            "dynamodb": {
                "NewImage": paid,
                "OldImage": {"status": {"S": [{"anything-but": ["paid"]}]}},
            },
        },
        {
            "eventName": ["MODIFY"],
            "dynamodb": {"NewImage": paid, "OldImage": {"status": {"S": [{"exists": False}]}}},
        },
    ]
    target = pipe["TargetParameters"]["EventBridgeEventBusParameters"]
    assert (target["Source"], target["DetailType"]) == ("com.example.orders", "OrderPaid")
    assert pipe["Target"] == {"Fn::GetAtt": [logical_id(reference.template, "OrderPaidBus"), "Arn"]}


@pytest.mark.parametrize("route", ["Invoicing", "Fulfilment"])
def test_two_rules_route_order_paid_to_a_queue_each(reference: Synthesized, route: str):
    template = reference.template
    rule = _resource(template, f"{route}Rule")
    assert rule["EventBusName"] == {"Ref": logical_id(template, "OrderPaidBus")}
    assert rule["EventPattern"] == {"source": ["com.example.orders"], "detail-type": ["OrderPaid"]}
    (target,) = rule["Targets"]
    queue_id = logical_id(template, f"{route}Queue")
    dead_letters = logical_id(template, f"{route}DeadLetters")
    assert target["Arn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [dead_letters, "Arn"]}}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] == 5
    queue = _resource(template, f"{route}Queue")
    assert queue["SqsManagedSseEnabled"] is True
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": [dead_letters, "Arn"]}
    for queue_ref in (queue_id, dead_letters):
        (policy,) = [
            p["Properties"]["PolicyDocument"]["Statement"]
            for p in resources(template, "AWS::SQS::QueuePolicy").values()
            if p["Properties"]["Queues"] == [{"Ref": queue_ref}]
        ]
        assert any(s["Effect"] == "Deny" for s in policy)
        # aws-cdk-lib's SqsQueue target: the events service, for this rule only.
        (send,) = [s for s in policy if s["Effect"] == "Allow"]
        assert send["Principal"] == {"Service": "events.amazonaws.com"}
        assert "sqs:SendMessage" in actions(send)
        assert set(actions(send)) <= {
            "sqs:GetQueueAttributes",
            "sqs:GetQueueUrl",
            "sqs:SendMessage",
        }
        rule_arn = {"Fn::GetAtt": [logical_id(template, f"{route}Rule"), "Arn"]}
        assert send["Condition"] == {"ArnEquals": {"aws:SourceArn": rule_arn}}


def test_reference_stack_counts(reference: Synthesized):
    counts: dict[str, int] = {}
    for resource in reference.template["Resources"].values():
        counts[resource["Type"]] = counts.get(resource["Type"], 0) + 1
    # The consumers (a group), their redrive, the order-stats backfill's segment function.
    assert counts["AWS::Lambda::Function"] == 3
    assert counts["AWS::StepFunctions::StateMachine"] == 1
    assert counts["AWS::Lambda::EventSourceMapping"] == 1
    assert counts["AWS::Pipes::Pipe"] == 1
    assert counts["AWS::Events::Rule"] == 2
    assert counts["AWS::S3::Bucket"] == 3  # archive, its access logs, the failed-batch bucket
    assert counts["AWS::Lambda::LayerVersion"] == 1
