"""A backfill's alarms and dashboard widgets: an execution that failed, timed out (ran longer
than the backfill's ``timeout``) or was aborted pages, and so does a segment function error or
throttle; items per second and executions are on the dashboard."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from cdc_consumer.metric_names import BACKFILL_ITEMS, BACKFILL_THROTTLES
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.alarms import alarm_on_any, consumer_metric

__all__ = ["BackfillMonitoring"]

_RUNBOOK = "See docs/backfill.md."


class BackfillMonitoring(Construct):
    """Alarms on the state machine's failed, timed-out and aborted executions and on the segment
    function's errors and throttles (each >= 1 in a minute, notifying ``alarm_topic``), and
    widgets on ``dashboard`` when one is given.

    Escape hatches: :attr:`alarms` (by name), :attr:`widgets`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        state_machine: sfn.StateMachine,
        function: lambda_.IFunction,
        consumer_name: str,
        metrics_namespace: str,
        alarm_topic: sns.ITopic | None,
        dashboard: cloudwatch.Dashboard | None,
    ) -> None:
        super().__init__(scope, construct_id)
        period = Duration.seconds(defaults.ALARM_PERIOD_SECONDS)
        metrics = {
            "ExecutionsFailed": (
                state_machine.metric_failed(period=period),
                "failed: a segment failed after its retries, or the start step refused",
            ),
            "ExecutionsTimedOut": (
                state_machine.metric_timed_out(period=period),
                "ran longer than its timeout and was stopped; a new execution with the same "
                "backfillId resumes it",
            ),
            "ExecutionsAborted": (
                state_machine.metric_aborted(period=period),
                "was stopped by hand before it finished",
            ),
            "SegmentErrors": (
                function.metric_errors(period=period),
                "had a segment function error (a refusal, a denied call, or a failure the "
                "state machine retries); its log says which",
            ),
            "SegmentThrottles": (
                function.metric_throttles(period=period),
                "had segment invocations throttled by Lambda (its reserved concurrency is the "
                "Map's concurrency plus one: a second backfill at once?)",
            ),
        }
        self.alarms: dict[str, cloudwatch.Alarm] = {
            name: alarm_on_any(
                self,
                f"{name}Alarm",
                metric,
                description=f"A backfill of {consumer_name} {what}. {_RUNBOOK}",
                topic=alarm_topic,
            )
            for name, (metric, what) in metrics.items()
        }
        self.widgets = _widgets(state_machine, consumer_name, metrics_namespace, self.alarms)
        if dashboard is not None:
            dashboard.add_widgets(*self.widgets)


def _widgets(
    state_machine: sfn.StateMachine,
    consumer_name: str,
    namespace: str,
    alarms: dict[str, cloudwatch.Alarm],
) -> list[cloudwatch.IWidget]:
    period = Duration.seconds(defaults.ALARM_PERIOD_SECONDS)
    items = consumer_metric(namespace, consumer_name, BACKFILL_ITEMS.name, cloudwatch.Stats.SUM)
    retries = consumer_metric(
        namespace, consumer_name, BACKFILL_THROTTLES.name, cloudwatch.Stats.SUM
    )
    return [
        cloudwatch.TextWidget(markdown=f"## Backfill of `{consumer_name}`", width=24, height=1),
        cloudwatch.GraphWidget(
            title="Items backfilled and retried pages (per minute)",
            left=[items.with_(label="items"), retries.with_(label="retried pages")],
            width=12,
        ),
        cloudwatch.GraphWidget(
            title="Executions",
            left=[
                state_machine.metric_started(period=period, label="started"),
                state_machine.metric_succeeded(period=period, label="succeeded"),
                state_machine.metric_failed(period=period, label="failed"),
                state_machine.metric_timed_out(period=period, label="timed out"),
                state_machine.metric_aborted(period=period, label="aborted"),
            ],
            width=12,
        ),
        cloudwatch.AlarmStatusWidget(
            title="Backfill alarms", alarms=list(alarms.values()), width=24, height=2
        ),
    ]
