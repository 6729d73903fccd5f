"""The roles of the services the local pipeline plays but does not run, evaluated for the calls
those services make with them: an EventBridge Pipe's and a Step Functions state machine's.

A function's role is enforced call by call (:mod:`cdc_local.authorization`). No pipe runs
locally, and the local backfill plays the state machine's part itself (:mod:`cdc_local.backfill`),
so their roles would never be asked. Here they are asked, once, when the pipeline starts with IAM
enforced, with moto's evaluator on the template's statements (resolved to the local ARNs, as the
functions' roles are), for the calls AWS makes with them:

- a pipe reading a DynamoDB stream: ``dynamodb:DescribeStream``, ``dynamodb:GetRecords`` and
  ``dynamodb:GetShardIterator`` on the stream (another route's source: the reads its route names,
  e.g. a Kinesis stream's ``kinesis:DescribeStream``, ``DescribeStreamSummary``, ``GetRecords``,
  ``GetShardIterator``, ``ListShards``); its target's
  send (``events:PutEvents``, ``sqs:SendMessage``, ``sns:Publish``, ``lambda:InvokeFunction``,
  ``states:StartExecution``); its dead-letter queue's ``sqs:SendMessage``;
- a state machine: ``lambda:InvokeFunction`` on every function its definition invokes, and
  ``states:StartExecution`` on itself when it has a distributed map (its child executions).

A role short of one fails the run before anything is read, with :class:`ServiceRoleDeniedError`
naming the resource, its role, the action and the resource asked for. What is not checked here
(conditions, resource policies, KMS, CloudWatch Logs) is as for the functions: docs/local.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from cdc_local.assembly import PIPE_TYPE, Resource
from cdc_local.exceptions import ServiceRoleDeniedError
from cdc_local.resources import LocalResources, physical_name
from cdc_local.routes import route_of

__all__ = ["STATE_MACHINE_TYPE", "check_service_roles", "pipe_calls", "state_machine_calls"]

STATE_MACHINE_TYPE = "AWS::StepFunctions::StateMachine"
_ROLE_TYPE = "AWS::IAM::Role"
_POLICY_TYPES = ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")
_TARGET_SENDS = {
    "events": "events:PutEvents",
    "sqs": "sqs:SendMessage",
    "sns": "sns:Publish",
    "lambda": "lambda:InvokeFunction",
    "states": "states:StartExecution",
}
_FUNCTION_ARN = re.compile(r"arn:[^:\"]+:lambda:[^:\"]+:[0-9]+:function:[A-Za-z0-9_-]+")


def check_service_roles(resources: LocalResources) -> None:
    """Raise :class:`ServiceRoleDeniedError` for the first pipe or state machine of the stack
    whose role does not allow a call the service makes with it (module docstring)."""
    stack = resources.stack
    for machine in stack.of_type(STATE_MACHINE_TYPE):
        _stand_in(resources, machine)
    for resource in stack.of_type(PIPE_TYPE, STATE_MACHINE_TYPE):
        calls = (
            pipe_calls(resources, resource)
            if resource.type == PIPE_TYPE
            else state_machine_calls(resources, resource)
        )
        role = _role_of(resource)
        if role is None:
            continue  # a role of another stack: its statements are not here
        documents = list(_documents(resources, role))
        denied = [(a, r) for a, r in calls if not _allowed(documents, a, r)]
        if denied:
            raise ServiceRoleDeniedError(
                resource.type, resource.logical_id, resources.resolve({"Ref": role}), denied
            )


def pipe_calls(resources: LocalResources, pipe: Resource) -> list[tuple[str, str]]:
    """(action, resource) of each call a pipe makes with its role: its source's reads, its
    target's send, its dead-letter queue's send."""
    properties = pipe.properties
    source = str(resources.resolve(properties.get("Source", "")))
    target = str(resources.resolve(properties.get("Target", "")))
    route = route_of(source)
    calls = [(action, source) for action in route.reader_actions]
    send = _TARGET_SENDS.get(target.split(":")[2] if target.count(":") >= 2 else "")
    if send is not None:
        calls.append((send, target))
    parameters = properties.get("SourceParameters", {})
    dead_letter = parameters.get(route.pipe_parameters, {}).get("DeadLetterConfig", {}).get("Arn")
    if dead_letter is not None:
        calls.append(("sqs:SendMessage", str(resources.resolve(dead_letter))))
    return calls


def state_machine_calls(resources: LocalResources, machine: Resource) -> list[tuple[str, str]]:
    """(action, resource) of each call a state machine makes with its role: the functions its
    definition invokes, and its own child executions when it has a distributed map."""
    definition = str(resources.resolve(machine.properties.get("DefinitionString", "")))
    calls = [
        ("lambda:InvokeFunction", arn) for arn in dict.fromkeys(_FUNCTION_ARN.findall(definition))
    ]
    if '"DISTRIBUTED"' in definition:
        calls.append(("states:StartExecution", str(resources.resolve({"Ref": machine.logical_id}))))
    return calls


def _stand_in(resources: LocalResources, machine: Resource) -> None:
    """Names for a state machine the pipeline does not create, as CloudFormation gives them
    (``Ref``: its ARN; ``Name``; ``Arn``), so statements on it and its executions resolve."""
    name = resources.resolve(machine.properties.get("StateMachineName")) or physical_name(
        resources.stack.stack_name, machine.logical_id, 80
    )
    arn = resources.arn("states", f"stateMachine:{name}")
    resources.refs.setdefault(machine.logical_id, arn)
    resources.attributes.setdefault((machine.logical_id, "Arn"), arn)
    resources.attributes.setdefault((machine.logical_id, "Name"), name)


def _role_of(resource: Resource) -> str | None:
    """The logical id of the stack's role the resource's ``RoleArn`` names, else None."""
    reference = resource.properties.get("RoleArn")
    found = reference.get("Fn::GetAtt") if isinstance(reference, Mapping) else None
    return str(found[0]) if isinstance(found, list) else None


def _documents(resources: LocalResources, role: str) -> Iterator[Mapping[str, Any]]:
    """The role's policy documents in the template (inline, and the policies attached to it),
    resolved to the local ARNs."""
    body = resources.stack.resources.get(role, {})
    if body.get("Type") != _ROLE_TYPE:
        return
    for policy in body.get("Properties", {}).get("Policies", ()):
        yield resources.resolve(policy["PolicyDocument"])
    for policy in resources.stack.of_type(*_POLICY_TYPES):
        attached = [r.get("Ref") for r in policy.properties.get("Roles", ()) if isinstance(r, dict)]
        if role in attached:
            yield resources.resolve(policy.properties["PolicyDocument"])


def _allowed(documents: list[Mapping[str, Any]], action: str, resource: str) -> bool:
    """moto's evaluation of ``action`` on ``resource`` against ``documents``: allowed by one
    statement and denied by none."""
    from moto.iam.access_control import IAMPolicy, PermissionResult

    permitted = False
    for document in documents:
        result = IAMPolicy(json.dumps(document)).is_action_permitted(action, resource)
        if result == PermissionResult.DENIED:
            return False
        permitted = permitted or result == PermissionResult.PERMITTED
    return permitted
