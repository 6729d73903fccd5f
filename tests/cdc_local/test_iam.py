"""IAM enforced in the local pipeline (issue 24): each function runs under its own synthesized
role, every call is checked against the template's statements, and a denied call fails the run,
named, instead of being retried into the on-failure destination.

The reference stack is run as synthesized, then with one needed action taken out of a role: the
run must fail naming that action (so enforcement is real), and pass with enforcement switched
off (so it is the enforcement that fails it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cdc_local.accounting import peek_messages
from cdc_local.assembly import PIPE_TYPE
from cdc_local.endpoint import LocalEndpoint
from cdc_local.exceptions import AccessDeniedError, ServiceRoleDeniedError
from cdc_local.faults import FaultPlan
from cdc_local.runner import LocalPipeline
from cdc_local.service_roles import STATE_MACHINE_TYPE, pipe_calls, state_machine_calls
from reference_app.oracle import order_stats_wiring
from reference_app.workload import OrderWorkload, apply

STACK = "CdcReferenceStack"
#: A small run with one poison order: its records are quarantined.
WORKLOAD = OrderWorkload(changes=120, orders=12, poison=1, seed=3)


def write_workload(pipeline: LocalPipeline) -> None:
    wiring = order_stats_wiring(pipeline)
    ddb = pipeline.client("dynamodb")
    for change in WORKLOAD.plan():
        apply(ddb, wiring.source_table, change)


def without_action(assembly: Path, destination: Path, action: str, role_prefix: str) -> Path:
    """A copy of ``assembly`` whose stack no longer grants ``action`` to the role whose logical
    id starts with ``role_prefix`` (every other statement as synthesized)."""
    shutil.copytree(assembly, destination)
    path = destination / f"{STACK}.template.json"
    template = json.loads(path.read_text())
    removed = 0
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        roles = [r.get("Ref", "") for r in resource["Properties"].get("Roles", [])]
        if not any(r.startswith(role_prefix) for r in roles):
            continue
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            actions = (
                statement["Action"]
                if isinstance(statement["Action"], list)
                else [statement["Action"]]
            )
            if action in actions:
                statement["Action"] = [a for a in actions if a != action] or ["sqs:ListQueues"]
                removed += 1
    assert removed, f"no statement grants {action} to a role {role_prefix}*"
    path.write_text(json.dumps(template))
    return destination


def role_name(pipeline: LocalPipeline, prefix: str) -> str:
    return next(name for lid, name in pipeline._resources.refs.items() if lid.startswith(prefix))


def test_every_function_runs_under_its_own_role_and_the_reference_stack_passes(
    aws: LocalEndpoint, reference_assembly: Path
) -> None:
    """The consumer's calls (markers, view, quarantine), its mapping's reads and the redrive's
    are all allowed by the statements the constructs synthesized."""
    with LocalPipeline(reference_assembly, STACK, endpoint=aws) as pipeline:
        assert pipeline.iam_enforced
        sessions = pipeline.roles.sessions if pipeline.roles else {}
        assert set(sessions) == set(pipeline.functions)
        assert len({s.role_arn for s in sessions.values()}) == len(sessions)  # one role each
        recorded = pipeline.recent_output
        write_workload(pipeline)
        pipeline.run()
        wiring = order_stats_wiring(pipeline)
        assert peek_messages(pipeline.client("sqs"), wiring.quarantine_queue_url), list(recorded)


def test_the_redrive_function_drains_the_quarantine_under_its_own_role(
    aws: LocalEndpoint, reference_assembly: Path
) -> None:
    """The provisioned redrive function (cdc_consumer.redrive_handler), invoked with
    ``{"source": "quarantine"}`` under its role: it checks the queue (GetQueueAttributes),
    receives, invokes the consumer (lambda:InvokeFunction, answered in process) and deletes.
    Every message is handled and nothing is denied."""
    with LocalPipeline(reference_assembly, STACK, endpoint=aws) as pipeline:
        write_workload(pipeline)
        pipeline.run()
        wiring = order_stats_wiring(pipeline)
        before = peek_messages(pipeline.client("sqs"), wiring.quarantine_queue_url)
        redrive = next(f for lid, f in pipeline.functions.items() if "Redrive" in lid)

        result = redrive.invoke({"source": "quarantine"})

        assert not result.failed, result.output
        (report,) = result.response["reports"]
        assert report["messages_received"] == len(before) > 0, report
        assert report["failed"] == [] and report["kept"] == [], report  # every message handled


@pytest.mark.parametrize(
    ("action", "role", "resource_part"),
    [
        # the runtime's quarantine send (the consumer's code)
        ("sqs:SendMessage", "OrdersConsumersRole", "QuarantineQueue"),
        # the view's writes, inside TransactWriteItems (each item's action on its table)
        ("dynamodb:UpdateItem", "OrdersConsumersRole", ":table/"),
        # the event source mapping's reads, with the function's role
        ("dynamodb:GetRecords", "OrdersConsumersRole", "/stream/"),
    ],
)
def test_a_role_without_one_needed_action_fails_the_run_naming_it(
    aws: LocalEndpoint,
    reference_assembly: Path,
    tmp_path: Path,
    action: str,
    role: str,
    resource_part: str,
) -> None:
    """Removing one action the consumer needs from its role makes the run fail with
    AccessDeniedError naming the function, the role, the action and the resource, at the first
    denied call: the batch is not retried into the on-failure destination."""
    assembly = without_action(reference_assembly, tmp_path / "cdk.out", action, role)
    with LocalPipeline(assembly, STACK, endpoint=aws) as pipeline:
        write_workload(pipeline)
        with pytest.raises(AccessDeniedError) as denied:
            pipeline.run()
        wiring = order_stats_wiring(pipeline)
        assert denied.value.action == action
        assert denied.value.function == wiring.function.name
        assert denied.value.role == role_name(pipeline, role)
        assert resource_part in denied.value.resource
        assert action in str(denied.value) and denied.value.role in str(denied.value)
        assert pipeline.counters.on_failure_messages == 0


def test_a_role_without_list_streams_fails_when_the_mapping_starts(
    aws: LocalEndpoint, reference_assembly: Path, tmp_path: Path
) -> None:
    """Lambda lists the table's streams when the mapping starts (its guide names
    dynamodb:ListStreams among a DynamoDB source's permissions); the action takes no resource,
    so the local evaluator checks it on ``*``, where the mapping would call it."""
    action, role = "dynamodb:ListStreams", "OrdersConsumersRole"
    assembly = without_action(reference_assembly, tmp_path / "cdk.out", action, role)
    with pytest.raises(AccessDeniedError) as denied:
        LocalPipeline(assembly, STACK, endpoint=aws).start()
    assert (denied.value.action, denied.value.resource) == (action, "*")
    assert action in str(denied.value) and "OrdersConsumers" in denied.value.role


def test_without_enforcement_the_same_role_runs(
    aws: LocalEndpoint, reference_assembly: Path, tmp_path: Path
) -> None:
    """The switch: with ``enforce_iam=False`` the role short of sqs:SendMessage is not checked
    (the functions use the endpoint's credentials), so it is the enforcement that fails the run
    above."""
    assembly = without_action(
        reference_assembly, tmp_path / "cdk.out", "sqs:SendMessage", "OrdersConsumersRole"
    )
    with LocalPipeline(assembly, STACK, endpoint=aws, enforce_iam=False) as pipeline:
        assert not pipeline.iam_enforced
        write_workload(pipeline)
        pipeline.run()
        assert pipeline.counters.on_failure_messages == 0


def test_a_denied_invoke_of_another_function_is_named(
    aws: LocalEndpoint, reference_assembly: Path, tmp_path: Path
) -> None:
    """The redrive's lambda:InvokeFunction is checked too (the pipeline answers Invoke in
    process): without it the redrive fails naming the consumer's ARN."""
    assembly = without_action(
        reference_assembly, tmp_path / "cdk.out", "lambda:InvokeFunction", "OrdersConsumersRedrive"
    )
    with LocalPipeline(assembly, STACK, endpoint=aws) as pipeline:
        write_workload(pipeline)
        pipeline.run()
        redrive = next(f for lid, f in pipeline.functions.items() if "Redrive" in lid)
        with pytest.raises(AccessDeniedError) as denied:
            redrive.invoke({"source": "quarantine"})
        assert denied.value.action == "lambda:InvokeFunction"
        assert denied.value.resource == order_stats_wiring(pipeline).function.arn


def without_grant(
    assembly: Path, destination: Path, action: str, role_prefix: str, resource_part: str
) -> Path:
    """A copy of ``assembly`` whose stack no longer grants ``action`` on the resources whose
    JSON holds ``resource_part`` to the role whose logical id starts with ``role_prefix``
    (the statement keeps its other resources; every other statement as synthesized)."""
    shutil.copytree(assembly, destination)
    path = destination / f"{STACK}.template.json"
    template = json.loads(path.read_text())
    removed = 0
    for resource in template["Resources"].values():
        properties = resource["Properties"] if resource["Type"] == "AWS::IAM::Policy" else {}
        roles = [r.get("Ref", "") for r in properties.get("Roles", [])]
        if not any(r.startswith(role_prefix) for r in roles):
            continue
        for statement in properties["PolicyDocument"]["Statement"]:
            actions = (
                statement["Action"]
                if isinstance(statement["Action"], list)
                else [statement["Action"]]
            )
            targets = statement["Resource"]
            targets = targets if isinstance(targets, list) else [targets]
            kept = [t for t in targets if resource_part not in json.dumps(t)]
            if action not in actions or len(kept) == len(targets):
                continue
            removed += 1
            if kept:  # the others keep every action of the statement
                properties["PolicyDocument"]["Statement"].append({**statement, "Resource": kept})
            statement["Action"] = [a for a in actions if a != action] or ["sqs:ListQueues"]
    assert removed, f"no statement grants {action} on {resource_part} to a role {role_prefix}*"
    path.write_text(json.dumps(template))
    return destination


@pytest.mark.parametrize("action", ["s3:ListBucket", "s3:PutObject"])
def test_a_fault_run_fails_naming_each_grant_of_the_failure_path_it_lacks(
    aws: LocalEndpoint, reference_assembly: Path, tmp_path: Path, action: str
) -> None:
    """Issue 30: only a run whose batches actually fail exercises the on-failure destination's
    grants. Every invocation crashes, so every batch is given up on and sent to the failed-batch
    bucket, which AWS requires the function's role to list and write: without either grant the
    run fails naming it (before, the local destination never listed the bucket, so a role
    without s3:ListBucket passed here and lost every failed batch on AWS)."""
    assembly = without_grant(
        reference_assembly, tmp_path / "cdk.out", action, "OrdersConsumersRole", "FailedBatches"
    )
    with LocalPipeline(
        assembly, STACK, endpoint=aws, faults=FaultPlan(crash_probability=1.0)
    ) as pipeline:
        write_workload(pipeline)
        with pytest.raises(AccessDeniedError) as denied:
            pipeline.run()
        wiring = order_stats_wiring(pipeline)
        assert denied.value.action == action
        assert denied.value.function == wiring.function.name
        assert denied.value.role == role_name(pipeline, "OrdersConsumersRole")
        assert "failedbatches" in denied.value.resource.lower()
        assert pipeline.counters.on_failure_messages == 0


def test_the_same_fault_run_with_every_grant_delivers_its_batches_to_the_bucket(
    aws: LocalEndpoint, reference_assembly: Path
) -> None:
    """The control: with the grants as synthesized the same run sends its failed batches to
    the bucket, under the function's role, listing it first as AWS does."""
    with LocalPipeline(
        reference_assembly, STACK, endpoint=aws, faults=FaultPlan(crash_probability=1.0)
    ) as pipeline:
        write_workload(pipeline)
        pipeline.run()
        assert pipeline.counters.on_failure_messages > 0


def test_the_pipes_and_the_state_machines_roles_allow_the_calls_their_services_make(
    aws: LocalEndpoint, reference_assembly: Path
) -> None:
    """Issue 30: no pipe runs locally and the local backfill plays the state machine, so their
    roles are evaluated for the calls AWS makes with them when the pipeline starts."""
    with LocalPipeline(reference_assembly, STACK, endpoint=aws) as pipeline:
        resources = pipeline._resources
        (pipe,) = resources.stack.of_type(PIPE_TYPE)
        (machine,) = resources.stack.of_type(STATE_MACHINE_TYPE)
        pipe_actions = {action for action, _ in pipe_calls(resources, pipe)}
        assert pipe_actions == {
            "dynamodb:DescribeStream",
            "dynamodb:GetRecords",
            "dynamodb:GetShardIterator",
            "events:PutEvents",
            "sqs:SendMessage",
        }
        machine_calls = state_machine_calls(resources, machine)
        assert {action for action, _ in machine_calls} == {
            "lambda:InvokeFunction",
            "states:StartExecution",
        }
        segment = next(f for lid, f in pipeline.functions.items() if "Segment" in lid)
        assert ("lambda:InvokeFunction", segment.arn) in machine_calls


@pytest.mark.parametrize(
    ("action", "role", "resource_type"),
    [
        ("dynamodb:GetRecords", "OrderPaidRole", PIPE_TYPE),  # the pipe's source reads
        ("events:PutEvents", "OrderPaidRole", PIPE_TYPE),  # its target
        ("sqs:SendMessage", "OrderPaidRole", PIPE_TYPE),  # its dead-letter queue
        ("lambda:InvokeFunction", "OrderStatsBackfillStateMachineRole", STATE_MACHINE_TYPE),
        ("states:StartExecution", "OrderStatsBackfillStateMachineRole", STATE_MACHINE_TYPE),
    ],
)
def test_a_pipe_or_state_machine_role_without_a_call_fails_the_start_naming_it(
    aws: LocalEndpoint,
    reference_assembly: Path,
    tmp_path: Path,
    action: str,
    role: str,
    resource_type: str,
) -> None:
    assembly = without_action(reference_assembly, tmp_path / "cdk.out", action, role)
    with pytest.raises(ServiceRoleDeniedError) as denied:
        LocalPipeline(assembly, STACK, endpoint=aws).start()
    assert denied.value.action == action
    assert denied.value.resource_type == resource_type
    assert denied.value.role.startswith(STACK) or role in denied.value.role
    assert action in str(denied.value)


@pytest.mark.parametrize("action", ["s3:ListBucket", "s3:GetObject", "s3:DeleteObject"])
def test_the_redrive_of_a_fault_runs_batches_fails_naming_each_grant_it_lacks(
    aws: LocalEndpoint, reference_assembly: Path, tmp_path: Path, action: str
) -> None:
    """The failure path's other end: the redrive function lists the failed-batch bucket, reads
    each object and deletes it once replayed, under its own role; without one of those grants
    the redrive fails naming it."""
    assembly = without_action(
        reference_assembly, tmp_path / "cdk.out", action, "OrdersConsumersRedrive"
    )
    with LocalPipeline(
        assembly, STACK, endpoint=aws, faults=FaultPlan(crash_probability=1.0)
    ) as pipeline:
        write_workload(pipeline)
        pipeline.run()
        assert pipeline.counters.on_failure_messages > 0
        assert pipeline.faults is not None
        pipeline.faults.plan = FaultPlan()  # the fault is fixed: the replay succeeds
        redrive = next(f for lid, f in pipeline.functions.items() if "Redrive" in lid)
        with pytest.raises(AccessDeniedError) as denied:
            redrive.invoke({"source": "on-failure"})
            pipeline.check_access()
        assert denied.value.action == action
        assert "failedbatches" in denied.value.resource.lower()
