"""The checks fail, naming the step, when the stack did not deploy, a consumer cannot load its
layer, or its environment is wrong; the summary is not ok when the view is not reconciled.
(Stub clients stand in for the emulator's APIs here; test_deploy_local.py runs them for real.)"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from deploy_local import backfill, checks
from deploy_local.deployed_stack import (
    DeployedFunction,
    DeployedStack,
    OrderStatsWiring,
    StackResource,
    StreamMapping,
)
from deploy_local.exceptions import StepFailed
from deploy_local.summary import Summary

STREAM = "arn:aws:dynamodb:us-east-1:000000000000:table/Orders/stream/2026-01-01T00:00:00.000"
ENVIRONMENT = {
    "CDC_CONSUMER_NAME": "order-stats",
    "IDEMPOTENCY_TABLE_NAME": "Idempotency",
    "QUARANTINE_QUEUE_URL": "http://localhost:1/000000000000/Quarantine",
    "VIEW_TABLE_NAME": "View",
}


def stack(
    environment: dict[str, str] | None = None,
    layers: tuple[str, ...] = ("arn:layer:1",),
    resource_status: str = "CREATE_COMPLETE",
) -> DeployedStack:
    function = DeployedFunction(
        name="OrderStatsFunction",
        handler="order_stats.handler",
        runtime="python3.14",
        architectures=("arm64",),
        layers=layers,
        environment=ENVIRONMENT if environment is None else environment,
    )
    return DeployedStack(
        name="CdcReferenceStack",
        status="CREATE_COMPLETE",
        resources=(
            StackResource("Fn", "AWS::Lambda::Function", function.name, resource_status),
            StackResource("Map", "AWS::Lambda::EventSourceMapping", "uuid-1", "CREATE_COMPLETE"),
        ),
        outputs={},
        functions={function.name: function},
        mappings=(StreamMapping("uuid-1", function.name, STREAM, {}),),
    )


class Clients:
    """Stub boto3 clients: tables and queues that exist, and what an invoke answers."""

    def __init__(self, tables: set[str], queues: set[str], invoke: dict[str, Any]) -> None:
        self.tables, self.queues, self.invoke_answer = tables, queues, invoke

    def __call__(self, service: str) -> Any:
        return self

    def describe_table(self, TableName: str) -> dict[str, Any]:
        return self._exists(TableName in self.tables, "ResourceNotFoundException")

    def get_queue_attributes(self, QueueUrl: str) -> dict[str, Any]:
        return self._exists(QueueUrl in self.queues, "AWS.SimpleQueueService.NonExistentQueue")

    def invoke(self, FunctionName: str, Payload: str) -> dict[str, Any]:
        assert json.loads(Payload) == {"Records": []}
        answer = dict(self.invoke_answer)
        answer["Payload"] = io.BytesIO(json.dumps(answer.pop("body")).encode())
        return answer

    @staticmethod
    def _exists(found: bool, code: str) -> dict[str, Any]:
        if not found:
            raise ClientError({"Error": {"Code": code, "Message": "not found"}}, "Describe")
        return {}


EXPECTED = {"Fn": "AWS::Lambda::Function", "Map": "AWS::Lambda::EventSourceMapping"}

HEALTHY = Clients(
    tables={"Idempotency", "View"},
    queues={ENVIRONMENT["QUARANTINE_QUEUE_URL"]},
    invoke={"StatusCode": 200, "body": {"batchItemFailures": []}},
)


def test_a_healthy_stack_passes_every_check() -> None:
    deployed = stack()
    assert checks.check_created(deployed, EXPECTED) == 2
    assert checks.check_environment(HEALTHY, deployed) == 3
    assert checks.check_layer_imports(HEALTHY, deployed) == 1
    wiring = OrderStatsWiring.of(deployed)
    assert (wiring.source_table, wiring.view_table, wiring.consumer_name) == (
        "Orders",
        "View",
        "order-stats",
    )


def test_a_resource_that_was_not_created_fails_the_deployment_check() -> None:
    with pytest.raises(StepFailed, match=r"step 'check deployment' failed: .*Fn CREATE_FAILED"):
        checks.check_created(stack(resource_status="CREATE_FAILED"), EXPECTED)


def test_a_template_resource_the_emulator_skipped_fails_the_deployment_check() -> None:
    expected = {**EXPECTED, "Pipe": "AWS::Pipes::Pipe", "CDKMetadata": "AWS::CDK::Metadata"}
    with pytest.raises(StepFailed, match=r"missing: Pipe \(AWS::Pipes::Pipe\)$"):
        checks.check_created(stack(), expected)


def test_a_layer_the_function_cannot_import_fails_the_layer_check() -> None:
    broken = Clients(
        tables=HEALTHY.tables,
        queues=HEALTHY.queues,
        invoke={
            "StatusCode": 200,
            "FunctionError": "Unhandled",
            "body": {"errorMessage": "No module named 'cdc_consumer'"},
        },
    )
    with pytest.raises(StepFailed, match=r"'layer import' failed: .*No module named 'cdc_"):
        checks.check_layer_imports(broken, stack())


def test_a_consumer_without_a_layer_fails_the_layer_check() -> None:
    with pytest.raises(StepFailed, match="OrderStatsFunction has no layer"):
        checks.check_layer_imports(HEALTHY, stack(layers=()))


def test_a_wrong_environment_names_every_problem() -> None:
    environment = {k: v for k, v in ENVIRONMENT.items() if k != "CDC_CONSUMER_NAME"}
    environment["VIEW_TABLE_NAME"] = "NoSuchView"
    with pytest.raises(StepFailed) as failure:
        checks.check_environment(HEALTHY, stack(environment=environment))
    assert failure.value.step == "check environment"
    assert "lacks CDC_CONSUMER_NAME" in failure.value.reason
    assert "VIEW_TABLE_NAME=NoSuchView: ResourceNotFoundException" in failure.value.reason


def test_the_order_stats_consumer_is_found_by_its_environment_not_its_logical_id() -> None:
    without_view = {k: v for k, v in ENVIRONMENT.items() if k != "VIEW_TABLE_NAME"}
    with pytest.raises(StepFailed, match=r"one stream consumer with VIEW_TABLE_NAME .* found 0"):
        OrderStatsWiring.of(stack(environment=without_view))


def _healthy_summary() -> Summary:
    return Summary(
        stack="S",
        resources_created=75,
        consumers_loaded=2,
        orders_written=60,
        view_reconciled=True,
        poison_quarantined=True,
        diff_changes=["[+] AWS::SNS::Subscription Alarms/Email0 AlarmsEmail00FF1726A"],
        backfill_refused=True,
        backfill_status="SUCCEEDED",
        backfill_segments=4,
        backfill_segments_succeeded=4,
        backfill_table_items=21,
        backfilled_items=21,
        view_reconciled_after_backfill=True,
    )


def test_the_summary_is_not_ok_when_the_view_is_not_reconciled() -> None:
    summary = _healthy_summary()
    assert summary.ok
    summary.view_reconciled = False
    assert not summary.ok
    assert "view reconciled" in summary.table() and "no (" in summary.table()
    assert json.loads(summary.json_line())["ok"] is False


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("backfill_refused", False),
        ("backfill_status", "FAILED"),
        ("backfill_segments_succeeded", 3),
        ("backfilled_items", 20),
        ("view_reconciled_after_backfill", False),
    ],
)
def test_the_summary_is_not_ok_when_the_backfill_did_not_hold(field: str, value: Any) -> None:
    summary = _healthy_summary()
    setattr(summary, field, value)
    assert not summary.ok


def test_a_refusal_is_known_by_its_error_on_aws_and_by_its_message_on_ministack() -> None:
    aws = backfill.BackfillRun("FAILED", error="BackfillRefusedError")
    ministack = backfill.BackfillRun(
        "FAILED",
        error="Runtime.HandlerError",
        cause='{"errorMessage": "totalSegments is 0; DynamoDB\'s Scan takes 1..1,000,000"}',
    )
    other = backfill.BackfillRun("FAILED", error="Runtime.HandlerError", cause="Boom")
    assert backfill.refused(aws) and backfill.refused(ministack)
    assert not backfill.refused(other)
    assert not backfill.refused(backfill.BackfillRun("RUNNING"))


def test_the_backfill_is_found_by_its_type_and_handler() -> None:
    with pytest.raises(StepFailed, match=r"one state machine and one function running .* 0 and 0"):
        backfill.BackfillWiring.of(stack())
