"""Checks of a deployed stack that synthesis cannot make.

- :func:`check_created`: every resource of the synthesized template is in the deployed stack,
  in a COMPLETE state (an emulator that skips a resource type must not pass for a deploy).
- :func:`check_environment`: every stream consumer's environment holds what the runtime reads
  (docs/interfaces.md §2), and each table, queue and bucket it names exists.
- :func:`check_layer_imports`: every stream consumer, invoked with an empty batch, answers the
  handler contract (docs/interfaces.md §9) - so its handler and the runtime layer it imports
  (``/opt/python`` on AWS) load in the deployed function.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from deploy_local.deployed_stack import CONSUMER_ENV, ClientFactory, DeployedStack
from deploy_local.exceptions import StepFailed

_COMPLETE = ("CREATE_COMPLETE", "UPDATE_COMPLETE")

NOT_DEPLOYED_TYPES = frozenset({"AWS::CDK::Metadata"})
"""Template resources MiniStack does not list among a stack's resources (CloudFormation does);
they have no effect on the application."""


def template_resources(assembly: Path, stack: str) -> dict[str, str]:
    """The synthesized template's resources of ``stack``: logical id -> type."""
    manifest = json.loads((assembly / "manifest.json").read_text())
    template_file = manifest["artifacts"][stack]["properties"]["templateFile"]
    template = json.loads((assembly / template_file).read_text())
    return {name: r["Type"] for name, r in template.get("Resources", {}).items()}


def check_created(stack: DeployedStack, expected: Mapping[str, str]) -> int:
    """The number of resources created; StepFailed naming what is missing or not complete when
    the stack or any of the ``expected`` resources (logical id -> type) is not created."""
    deployed = {r.logical_id for r in stack.resources}
    missing = sorted(
        f"{name} ({kind})"
        for name, kind in expected.items()
        if name not in deployed and kind not in NOT_DEPLOYED_TYPES
    )
    problems = [f"{r.logical_id} {r.status}" for r in stack.not_created]
    if missing:
        problems.append(f"missing: {', '.join(missing)}")
    if stack.status not in _COMPLETE or problems:
        raise StepFailed(
            "check deployment", f"stack {stack.name} is {stack.status}; {'; '.join(problems)}"
        )
    return stack.created


def check_environment(client: ClientFactory, stack: DeployedStack) -> int:
    """The number of resources the consumers' environments name, all found; StepFailed naming
    every missing variable and resource otherwise."""
    ddb, sqs, s3 = client("dynamodb"), client("sqs"), client("s3")
    exists: dict[str, Callable[[str], Any]] = {
        "_TABLE_NAME": lambda name: ddb.describe_table(TableName=name),
        "_QUEUE_URL": lambda url: sqs.get_queue_attributes(QueueUrl=url),
        "_BUCKET_NAME": lambda name: s3.head_bucket(Bucket=name),
    }
    problems: list[str] = []
    checked = 0
    consumers = stack.stream_consumers()
    if not consumers:
        raise StepFailed("check environment", f"stack {stack.name} has no stream consumer")
    for function in consumers:
        env = function.environment
        problems += [f"{function.name} lacks {name}" for name in CONSUMER_ENV if name not in env]
        for name, value in sorted(env.items()):
            suffix = next((s for s in exists if name.endswith(s)), None)
            if suffix is None:
                continue
            checked += 1
            try:
                exists[suffix](value)
            except ClientError as error:
                code = error.response.get("Error", {}).get("Code", "error")
                problems.append(f"{function.name} {name}={value}: {code}")
    if problems:
        raise StepFailed("check environment", "; ".join(problems))
    return checked


def check_layer_imports(client: ClientFactory, stack: DeployedStack) -> int:
    """The number of stream consumers that loaded and answered an empty batch; StepFailed with
    the function's error (an ImportError when the layer is not importable) otherwise."""
    lam = client("lambda")
    consumers = stack.stream_consumers()
    for function in consumers:
        if not function.layers:
            raise StepFailed("layer import", f"{function.name} has no layer")
        response = lam.invoke(FunctionName=function.name, Payload=json.dumps({"Records": []}))
        payload = response["Payload"].read().decode("utf-8", "replace")
        if response.get("FunctionError") or _answer(payload) != {"batchItemFailures": []}:
            raise StepFailed(
                "layer import",
                f"{function.name} (layers {', '.join(function.layers)}) answered an empty "
                f"batch with {response.get('FunctionError') or 'an unexpected result'}: "
                f"{payload[:300]}",
            )
    return len(consumers)


def _answer(payload: str) -> Any:
    try:
        return json.loads(payload)
    except json.JSONDecodeError:
        return payload
