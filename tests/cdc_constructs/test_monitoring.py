"""StreamConsumerMonitoring: alarm thresholds derived from the consumer, topic and dashboard."""

from __future__ import annotations

import json

import pytest
from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template

from cdc_constructs import (
    AlarmTopic,
    CdcConfigurationError,
    ChangeCaptureTable,
    StreamConsumer,
    StreamConsumerMonitoring,
)
from tests.cdc_constructs.support import consumer_code, only, resources, with_code

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


def _alarms(template: dict) -> dict[str, dict]:
    """The alarms by name: Monitoring's own, and the redrive's as ``RedriveLostRecords`` and
    ``RedriveErrors``."""
    redrive = {
        "RedriveLostRecordsAlarm": "RedriveLostRecords",
        "RedriveErrorsAlarm": "RedriveErrors",
    }
    named = {}
    for lid, r in resources(template, "AWS::CloudWatch::Alarm").items():
        found = [name for part, name in redrive.items() if part in lid]
        named[found[0] if found else lid.split("Monitoring")[1][:-8]] = r["Properties"]
    return named


def test_default_alarms(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    StreamConsumer(
        stack, "Consumer", **consumer_code(), table=table, max_record_age=Duration.hours(2)
    )
    template = Template.from_stack(stack).to_json()
    alarms = _alarms(template)
    assert set(alarms) == {
        "IteratorAge",
        "DroppedRecords",
        "DestinationDeliveryFailures",
        "QuarantineQueueDepth",
        "RecordsQuarantined",
        "ForeignMarkers",
        "ContentionFailures",
        "FunctionErrors",
        "FunctionThrottles",
        "RedriveLostRecords",
        "RedriveErrors",
    }
    lag = alarms["IteratorAge"]
    assert lag["Threshold"] == 30 * 60 * 1000  # a quarter of the 2 h max record age
    assert lag["Statistic"] == "Maximum"
    assert lag["ComparisonOperator"] == "GreaterThanThreshold"
    assert lag["EvaluationPeriods"] == 3
    for name in ("QuarantineQueueDepth",):
        assert alarms[name]["MetricName"] == "ApproximateNumberOfMessagesVisible"
        assert alarms[name]["Threshold"] == 1
        assert alarms[name]["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    # The on-failure alarm: records given up on, whatever the destination (issue 12).
    dropped = alarms["DroppedRecords"]
    assert (dropped["Namespace"], dropped["MetricName"]) == ("AWS/Lambda", "DroppedEventCount")
    (mapping_id,) = resources(template, "AWS::Lambda::EventSourceMapping")
    assert dropped["Dimensions"] == [
        {"Name": "EventSourceMappingUUID", "Value": {"Ref": mapping_id}}
    ]
    assert (dropped["Statistic"], dropped["Period"], dropped["EvaluationPeriods"]) == (
        "Sum",
        60,
        1,
    )  # the first minute with a dropped record: well within five minutes
    assert dropped["Threshold"] == 1
    assert dropped["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarms["FunctionErrors"]["MetricName"] == "Errors"
    assert alarms["FunctionThrottles"]["MetricName"] == "Throttles"
    lost = alarms["RedriveLostRecords"]
    assert (lost["Namespace"], lost["MetricName"]) == ("CdcConstructs", "RedriveLostRecords")
    assert lost["Dimensions"] == [{"Name": "Consumer", "Value": "Consumer"}]
    assert lost["Threshold"] == 1 and lost["Statistic"] == "Sum"
    topics = {json.dumps(alarm["AlarmActions"]) for alarm in alarms.values()}
    assert len(topics) == 1  # every alarm, the redrive's included, notifies the one topic
    for alarm in alarms.values():
        assert alarm["TreatMissingData"] == "notBreaching"
        assert alarm["AlarmActions"] == alarm["OKActions"]
        assert len(alarm["AlarmActions"]) == 1
    # A topic of its own, encrypted with a rotated customer key, TLS-only.
    assert "KmsMasterKeyId" in only(template, "AWS::SNS::Topic")
    assert only(template, "AWS::KMS::Key")["EnableKeyRotation"] is True
    dashboard = only(template, "AWS::CloudWatch::Dashboard")
    body = json.dumps(dashboard["DashboardBody"])
    for metric in ("IteratorAge", "RecordsProcessed", "IteratorLagMs", "PolledEventCount"):
        assert metric in body


def test_given_topic_dashboard_and_threshold(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    topic = sns.Topic(stack, "Ops")
    dashboard = cloudwatch.Dashboard(stack, "Board")
    consumer = StreamConsumer(
        stack,
        "Consumer",
        **consumer_code(),
        table=table,
        alarm_topic=topic,
        dashboard=dashboard,
        iterator_age_alarm_threshold=Duration.minutes(5),
    )
    assert consumer.monitoring is not None and consumer.monitoring.dashboard is dashboard
    template = Template.from_stack(stack).to_json()
    assert len(resources(template, "AWS::SNS::Topic")) == 1
    assert len(resources(template, "AWS::CloudWatch::Dashboard")) == 1
    alarms = _alarms(template)
    assert alarms["IteratorAge"]["Threshold"] == 300_000
    topic_id = next(iter(resources(template, "AWS::SNS::Topic")))
    assert all(a["AlarmActions"] == [{"Ref": topic_id}] for a in alarms.values())


def test_alarm_topic_subscribes_emails(stack):
    AlarmTopic(stack, "Alarms", emails=["ops@example.com"])
    subscription = only(Template.from_stack(stack).to_json(), "AWS::SNS::Subscription")
    assert subscription["Protocol"] == "email"
    assert subscription["Endpoint"] == "ops@example.com"


def test_monitoring_checks_its_threshold_before_building(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    consumer = StreamConsumer(stack, "Consumer", **consumer_code(), table=table, monitoring=False)
    with pytest.raises(CdcConfigurationError) as caught:
        StreamConsumerMonitoring(
            stack, "Monitoring", consumer=consumer, iterator_age_threshold=Duration.hours(1)
        )
    assert "iterator_age_threshold='3600 s': more than 0 and below max_record_age (3600 s)" in str(
        caught.value
    )
    assert stack.node.try_find_child("Monitoring") is None


def test_without_monitoring_a_given_topic_still_hears_of_lost_records(stack):
    """...and of a redrive that failed: the redrive's two alarms stay."""
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    topic = sns.Topic(stack, "Ops")
    StreamConsumer(
        stack, "Consumer", **consumer_code(), table=table, monitoring=False, alarm_topic=topic
    )
    template = Template.from_stack(stack).to_json()
    alarms = {
        a["Properties"]["MetricName"]: a
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
    }
    assert set(alarms) == {"RedriveLostRecords", "Errors"}
    topic_id = next(iter(resources(template, "AWS::SNS::Topic")))
    for alarm in alarms.values():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}]
        assert alarm["Properties"]["OKActions"] == [{"Ref": topic_id}]


@pytest.mark.parametrize(
    ("props", "named"),
    [
        ({"dashboard": "board"}, "dashboard"),
        ({"iterator_age_alarm_threshold": Duration.minutes(5)}, "iterator_age_alarm_threshold"),
    ],
)
def test_without_monitoring_dashboard_and_threshold_are_refused(stack, props, named):
    if props.get("dashboard") == "board":
        props = {"dashboard": cloudwatch.Dashboard(stack, "Board")}
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    with pytest.raises(CdcConfigurationError) as caught:
        StreamConsumer(stack, "Consumer", table=table, monitoring=False, **with_code(props))
    assert f"{named}='given with monitoring=False': omitted, or monitoring=True" in str(
        caught.value
    )


class _Recorded:
    """An alarm-action strategy that records the alarms it was applied to."""

    def __init__(self) -> None:
        self.alarms: list[cloudwatch.Alarm] = []

    def add_alarm_actions(self, alarm: cloudwatch.Alarm) -> None:
        self.alarms.append(alarm)


def test_monitoring_applies_a_given_alarm_action_strategy_and_makes_no_topic(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    consumer = StreamConsumer(
        stack, "Consumer", **consumer_code(), table=table, monitoring=False, redrive=False
    )
    strategy = _Recorded()
    monitoring = StreamConsumerMonitoring(stack, "Watch", consumer=consumer, alarm_action=strategy)
    assert strategy.alarms == list(monitoring.alarms.values())
    assert monitoring.alarm_topic is None
    assert resources(Template.from_stack(stack).to_json(), "AWS::SNS::Topic") == {}


def test_the_redrive_alarm_is_given_the_topic_when_made_and_never_rewired(stack):
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    consumer = StreamConsumer(stack, "Consumer", **consumer_code(), table=table, monitoring=False)
    # Watching the consumer later adds the redrive's alarm to the list, not an action to it.
    StreamConsumerMonitoring(stack, "Watch", consumer=consumer)
    lost = consumer.redrive.lost_records_alarm.node.default_child
    assert stack.resolve(lost.alarm_actions) is None


def test_a_batch_the_destination_refused_is_alarmed_on_the_consumer_function(stack):
    """Issue 30: when Lambda cannot write a failed batch to its destination (a bucket policy, a
    key, a quota) it counts DestinationDeliveryFailures and drops the batch."""
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    consumer = StreamConsumer(stack, "Consumer", **consumer_code(), table=table)
    template = Template.from_stack(stack).to_json()
    alarm = _alarms(template)["DestinationDeliveryFailures"]
    assert (alarm["Namespace"], alarm["MetricName"]) == (
        "AWS/Lambda",
        "DestinationDeliveryFailures",
    )
    function_id = stack.get_logical_id(consumer.function.node.default_child)
    assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function_id}}]
    assert (alarm["Statistic"], alarm["Threshold"], alarm["EvaluationPeriods"]) == ("Sum", 1, 1)
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["AlarmActions"] == alarm["OKActions"] != []
    assert "not in the destination" in alarm["AlarmDescription"]


def test_the_redrive_functions_errors_are_alarmed_and_on_the_dashboard(stack):
    """Issue 30: a redrive that crashes or times out is reported by nothing else."""
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    consumer = StreamConsumer(stack, "Consumer", **consumer_code(), table=table)
    assert consumer.redrive is not None
    template = Template.from_stack(stack).to_json()
    alarm = _alarms(template)["RedriveErrors"]
    function_id = stack.get_logical_id(consumer.redrive.function.node.default_child)
    assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/Lambda", "Errors")
    assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function_id}}]
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (
        1,
        "GreaterThanOrEqualToThreshold",
    )
    topic = consumer.alarm_topic
    assert topic is not None
    assert alarm["AlarmActions"] == [{"Ref": stack.get_logical_id(topic.node.default_child)}]
    assert consumer.alarms["RedriveErrors"] is consumer.redrive.errors_alarm
    body = json.dumps(only(template, "AWS::CloudWatch::Dashboard")["DashboardBody"])
    assert "DestinationDeliveryFailures" in body and "Redrive and replication" in body


def _widgets(template: dict) -> dict[str, dict]:
    """The dashboard's metric widgets by title (the body's tokens read as "X")."""
    body = only(template, "AWS::CloudWatch::Dashboard")["DashboardBody"]
    parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
    text = "".join(part if isinstance(part, str) else "X" for part in parts)
    return {
        widget["properties"]["title"]: widget
        for widget in json.loads(text)["widgets"]
        if widget["type"] == "metric"
    }


def test_ledger_entries_are_on_the_dashboard_beside_the_records(stack):
    """The ledger's entries and the records they list are graphed as the markers are, in one
    widget on the row of the runtime's records (issue 29: counted as markers are)."""
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    StreamConsumer(stack, "Consumer", **consumer_code(), table=table)
    widgets = _widgets(Template.from_stack(stack).to_json())
    bookkeeping = widgets["Bookkeeping (items written)"]
    metrics = bookkeeping["properties"]["metrics"]
    assert [m[:4] for m in metrics] == [
        ["CdcConstructs", name, "Consumer", "Consumer"]
        for name in ("MarkersWritten", "LedgerEntriesWritten", "LedgerRecordsListed")
    ]
    assert all(m[4]["stat"] == "Sum" for m in metrics)
    records = widgets["Runtime (records)"]
    assert records["y"] == bookkeeping["y"] and records["x"] < bookkeeping["x"]
