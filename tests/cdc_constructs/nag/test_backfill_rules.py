"""CdcChecks' backfill rules (CDC-BF1..3) on a state machine running the backfill handler over a
Map: ViewBackfill's passes; one made by hand without an alarm, a MaxConcurrency or a rate is
reported; a state machine that runs no backfill is not looked at."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from cdc_consumer.handler_paths import BACKFILL_HANDLER

from cdc_constructs import StreamConsumer, ViewBackfill
from cdc_constructs.nag import BACKFILL_RULES
from tests.cdc_constructs.nag.validation_report import rule_ids, synthesize_with_checks
from tests.cdc_constructs.support import consumer_code, orders_table


def _hand_made(stack: cdk.Stack, handler: str) -> None:
    """A Distributed Map invoking ``handler``, with no alarm, no MaxConcurrency, no rate."""
    function = lambda_.Function(
        stack,
        "Worker",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler=handler,
        code=lambda_.Code.from_inline("# in the layer\n"),
    )
    segments = sfn.DistributedMap(stack, "Segments", items_path="$.segments")
    segments.item_processor(tasks.LambdaInvoke(stack, "Scan", lambda_function=function))
    sfn.StateMachine(stack, "Machine", definition_body=sfn.DefinitionBody.from_chainable(segments))


def _findings(tmp_path: Any, build: Any) -> Any:
    app = cdk.App(outdir=str(tmp_path))
    build(cdk.Stack(app, "Test"))
    return synthesize_with_checks(app)


def test_a_hand_made_backfill_without_alarm_bound_or_rate_is_reported(tmp_path: Any) -> None:
    findings = _findings(tmp_path, lambda stack: _hand_made(stack, BACKFILL_HANDLER))
    assert rule_ids(findings, "Test/Machine") == {"CDC-BF1", "CDC-BF2", "CDC-BF3"}
    severity = {f.rule_id: f.severity for f in findings}
    assert severity == {"CDC-BF1": "error", "CDC-BF2": "error", "CDC-BF3": "warning"}
    (bound,) = [f for f in findings if f.rule_id == "CDC-BF2"]
    assert "MaxConcurrency is unset or 0" in bound.description


def test_a_state_machine_running_no_backfill_is_not_checked(tmp_path: Any) -> None:
    assert _findings(tmp_path, lambda stack: _hand_made(stack, "index.handler")) == []


def _view_backfill(stack: cdk.Stack, **props: Any) -> None:
    consumer = StreamConsumer(stack, "Consumer", table=orders_table(stack), **consumer_code())
    ViewBackfill(stack, "Backfill", consumer=consumer, **props)


def test_view_backfill_passes_every_rule(tmp_path: Any) -> None:
    assert _findings(tmp_path, _view_backfill) == []


def test_view_backfill_without_a_rate_acknowledges_it_with_the_reason(tmp_path: Any) -> None:
    assert _findings(tmp_path, lambda s: _view_backfill(s, items_per_second=None)) == []


def test_backfill_rules_have_unique_ids_and_a_one_line_cause() -> None:
    assert [rule.rule_id for rule in BACKFILL_RULES] == ["CDC-BF1", "CDC-BF2", "CDC-BF3"]
    for rule in BACKFILL_RULES:
        assert "\n" not in rule.info and rule.explanation
