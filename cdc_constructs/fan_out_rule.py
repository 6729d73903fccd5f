"""FanOutRule: a rule on a fan-out's event bus, with the dead-letter queue its target needs and
the alarms that say an event was not delivered (``StreamFanOut.add_rule``).

A rule's target is retried and then given up on: the event goes to the target's dead-letter
queue, or, when EventBridge cannot put it there either (a queue policy, a key, a size), nowhere.
``FailedInvocations`` counts the first, ``InvocationsFailedToBeSentToDlq`` the second (AWS/Events,
dimensions EventBusName and RuleName on a custom bus: Amazon EventBridge user guide, "Monitoring
Amazon EventBridge"); each alarms at the first one, as does a message in the dead-letter queue,
and its age before the queue deletes it (:mod:`cdc_constructs.failure_age`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.alarms import SnsAlarmAction, alarm_on_any
from cdc_constructs.failure_age import age_alarm, oldest_message_age
from cdc_constructs.queues import dead_letter_queue

__all__ = ["RULE_FAILURE_METRICS", "FanOutRule", "RuleTarget"]

RuleTarget = Callable[[Mapping[str, Any]], events.IRuleTarget]
"""Makes the rule's target from the keyword arguments every aws-cdk-lib target takes
(``dead_letter_queue``, ``retry_attempts``, ``max_event_age``), say
``lambda safety: targets.SqsQueue(queue, **safety)``."""

RULE_FAILURE_METRICS = {
    "FailedInvocations": "an event its target refused after every retry went to the rule's "
    "dead-letter queue",
    "InvocationsFailedToBeSentToDlq": "an event its target refused could not be put on the "
    "dead-letter queue either (its policy, key or size): it is lost",
}
"""The rule's AWS/Events metrics that mean an event was not delivered, each alarmed at >= 1."""


class FanOutRule(Construct):
    """A rule on ``event_bus``, its target given a dead-letter queue, finite retries and event
    age, and four alarms: ``FailedInvocations``, ``InvocationsFailedToBeSentToDlq`` (Sum >= 1),
    ``DeadLetterQueue`` (visible messages >= 1) and ``DeadLetterQueueAge`` (the oldest at half
    the queue's 14 days). Made by :meth:`StreamFanOut.add_rule`, which passes the fan-out's bus
    and alarm topic.

    :param event_bus: the bus the rule is on (the fan-out's).
    :param event_pattern: the events it takes.
    :param target: makes the target from the keyword arguments every aws-cdk-lib target takes
        (``RuleTarget``): the dead-letter queue, 5 retries and a 1 hour event age.
    :param alarm_topic: where its alarms notify (the fan-out's).
    :param dead_letter_queue: Default: a new queue (SQS-managed encryption, TLS-only, 14 days,
        retained), as the pipe's.
    :param description: the rule's description. Default none.
    :param removal_policy: for the dead-letter queue made here. Default RETAIN: it may hold the
        only copy of an event.

    Escape hatches: :attr:`rule`, :attr:`dead_letter_queue`, :attr:`alarms` (by name).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        event_bus: events.IEventBus,
        event_pattern: events.EventPattern,
        target: Callable[[Mapping[str, Any]], events.IRuleTarget],
        alarm_topic: sns.ITopic,
        dead_letter_queue: sqs.IQueue | None = None,
        description: str | None = None,
        removal_policy: RemovalPolicy = defaults.RECORD_REMOVAL_POLICY,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dead_letter_queue: sqs.IQueue = dead_letter_queue or _dead_letter_queue(
            self, construct_id, removal_policy
        )
        safety = {
            "dead_letter_queue": self.dead_letter_queue,
            "retry_attempts": defaults.RETRY_ATTEMPTS,
            "max_event_age": Duration.seconds(defaults.MAX_RECORD_AGE_SECONDS),
        }
        self.rule = events.Rule(
            self,
            "Rule",
            description=description,
            event_bus=event_bus,
            event_pattern=event_pattern,
            targets=[target(safety)],
        )
        self.alarms: dict[str, cloudwatch.Alarm] = self._alarms(event_bus, alarm_topic)

    def _alarms(self, bus: events.IEventBus, topic: sns.ITopic) -> dict[str, cloudwatch.Alarm]:
        period = Duration.seconds(defaults.ALARM_PERIOD_SECONDS)
        dimensions = {"EventBusName": bus.event_bus_name, "RuleName": self.rule.rule_name}
        alarms = {
            name: alarm_on_any(
                self,
                f"{name}Alarm",
                cloudwatch.Metric(
                    namespace="AWS/Events",
                    metric_name=name,
                    dimensions_map=dimensions,
                    statistic=cloudwatch.Stats.SUM,
                    period=period,
                ),
                description=f"The rule {self.node.id} on the fan-out's bus: {meaning}.",
                topic=topic,
            )
            for name, meaning in RULE_FAILURE_METRICS.items()
        }
        alarms["DeadLetterQueue"] = alarm_on_any(
            self,
            "DeadLetterQueueAlarm",
            self.dead_letter_queue.metric_approximate_number_of_messages_visible(
                statistic=cloudwatch.Stats.MAXIMUM, period=period
            ),
            description=f"Events the rule {self.node.id} could not deliver wait in its "
            "dead-letter queue, whole: read them and send them again once the target is fixed.",
            topic=topic,
        )
        alarms["DeadLetterQueueAge"] = age_alarm(
            self,
            "DeadLetterQueueAgeAlarm",
            oldest_message_age(self.dead_letter_queue),
            window_seconds=defaults.ON_FAILURE_QUEUE_RETENTION_DAYS * 86_400,
            what=f"An event the rule {self.node.id} could not deliver",
            ends="the dead-letter queue deletes it",
            action=SnsAlarmAction(topic),
        )
        return alarms


def _dead_letter_queue(scope: Construct, name: str, removal_policy: RemovalPolicy) -> sqs.Queue:
    return dead_letter_queue(
        scope,
        "DeadLetterQueue",
        purpose=f"the events the fan-out rule {name} could not deliver, alarmed on >= 1 message",
        removal_policy=removal_policy,
    )
