"""The CdcChecks rules for backfills: a state machine running the runtime's backfill handler
over a Distributed Map (:class:`~cdc_constructs.nag.backfill_machine.BackfillMachine`).

What a template shows of a backfill is checked: that a failed execution pages, that the Map
bounds how many segments scan at once, that the segments are paced. What it cannot show (the
worker's ``ConsistentRead``, its resume records) is the runtime's, tested there.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnResource
from cdc_consumer.environment_variables import BACKFILL_ITEMS_PER_SECOND_ENV
from cdk_nag import NagMessageLevel, NagRuleCompliance

from cdc_constructs.nag.backfill_machine import BackfillMachine
from cdc_constructs.nag.rules import COMPLIANT, NON_COMPLIANT, CdcRule

__all__ = ["BACKFILL_RULES"]


def failed_execution_alarm(node: CfnResource, machine: BackfillMachine) -> NagRuleCompliance:
    """An alarm on AWS/States ExecutionsFailed with this state machine's StateMachineArn."""
    return COMPLIANT if machine.alarms_on("ExecutionsFailed") else NON_COMPLIANT


def bounded_concurrency(node: CfnResource, machine: BackfillMachine) -> NagRuleCompliance:
    """Every backfill Map sets MaxConcurrency (above 0) or MaxConcurrencyPath."""
    for state in machine.maps:
        concurrency: Any = state.get("MaxConcurrency")
        if "MaxConcurrencyPath" in state:
            continue
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
            return NON_COMPLIANT
    return COMPLIANT


def paced_segments(node: CfnResource, machine: BackfillMachine) -> NagRuleCompliance:
    """Each backfill function it invokes sets CDC_BACKFILL_ITEMS_PER_SECOND."""
    for function in machine.functions:
        if BACKFILL_ITEMS_PER_SECOND_ENV not in machine.environment_of(function):
            return NON_COMPLIANT
    return COMPLIANT


BACKFILL_RULES: tuple[CdcRule, ...] = (
    CdcRule(
        "BF1",
        NagMessageLevel.ERROR,
        "No alarm watches the backfill state machine's failed executions.",
        "A backfill that fails (a segment out of retries, a refusal at the start step) leaves "
        "the view incomplete, and nobody waits at the console for a run of hours. Add an "
        "alarm on the AWS/States ExecutionsFailed metric with the dimension StateMachineArn "
        "set to the state machine, in the same stack, at 1 (ViewBackfill makes it, and "
        "alarms on timed-out and aborted executions too).",
        failed_execution_alarm,
    ),
    CdcRule(
        "BF2",
        NagMessageLevel.ERROR,
        "The backfill's Distributed Map does not bound how many segments scan at once: "
        "MaxConcurrency is unset or 0.",
        "Unbounded, a Distributed Map runs up to 10,000 child executions at once: as many "
        "parallel scans, each reading the table as fast as it can, starving the application "
        "of the table's capacity and the account of Lambda concurrency. Set MaxConcurrency "
        "(ViewBackfill max_concurrency, default 10).",
        bounded_concurrency,
    ),
    CdcRule(
        "BF3",
        NagMessageLevel.WARN,
        "The backfill's segment function reads without a rate limit: "
        "CDC_BACKFILL_ITEMS_PER_SECOND is unset.",
        "Unpaced, every segment reads as fast as DynamoDB serves it, and the backfill competes "
        "with the application for the table's read capacity (on demand: for its throughput "
        "and your bill). Set the rate (ViewBackfill items_per_second, default 1,000 items/s "
        "over all segments), or acknowledge this rule with the reason the table can take it.",
        paced_segments,
    ),
)
"""The backfill rules, ``CDC-BF1`` ... ``CDC-BF3``."""
