"""Helpers shared by the construct tests (not fixtures)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template
from cfnlint.api import ManualArgs, lint

from cdc_constructs import CdcConfigurationError, ChangeCaptureTable, StreamConsumer

REPO_ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT_DIR = REPO_ROOT / "tests" / "snapshots"

_ASSET_HASH = re.compile(r"\b[0-9a-f]{64}\b")


@dataclass
class Synthesized:
    app: cdk.App
    stack: cdk.Stack
    template: dict[str, Any]
    assembly_dir: Path

    @property
    def assertions(self) -> Template:
        return Template.from_json(self.template)


def synth_reference_app(outdir: Path, context: dict[str, Any]) -> Synthesized:
    from app import STACK_NAME, build_app

    app = build_app(cdk.App(outdir=str(outdir), context=context))
    assembly = app.synth()  # runs the cdk-nag plugins: raises on any unacknowledged finding
    stack = app.node.find_child(STACK_NAME)
    template = assembly.get_stack_by_name(STACK_NAME).template
    return Synthesized(app, stack, template, Path(assembly.directory))


def consumer_code() -> dict[str, Any]:
    """``code`` + ``handler`` for a StreamConsumer in a test (the library ships no handler)."""
    return {
        "code": lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        "handler": "index.handler",
    }


def with_code(props: dict[str, Any]) -> dict[str, Any]:
    """``props`` with :func:`consumer_code` unless they bring code or a function."""
    if {"code", "function", "handler"} & set(props):
        return props
    return {**consumer_code(), **props}


def orders_table(
    stack: cdk.Stack,
    view: dynamodb.StreamViewType = dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
    name: str = "Orders",
) -> ChangeCaptureTable:
    """A ChangeCaptureTable keyed on ``pk`` whose stream carries ``view``."""
    pk = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
    return ChangeCaptureTable(stack, name, partition_key=pk, stream=view)


def consumer_error(stack: cdk.Stack, **props: Any) -> CdcConfigurationError:
    """The error of a StreamConsumer ``Consumer`` with ``props`` (code and, unless given, an
    :func:`orders_table` added), checking that nothing was built."""
    if "table" not in props:
        props["table"] = orders_table(stack)
    with pytest.raises(CdcConfigurationError) as caught:
        StreamConsumer(stack, "Consumer", **with_code(props))
    assert stack.node.try_find_child("Consumer") is None, "nothing may be built on error"
    return caught.value


def normalize(template: dict[str, Any]) -> dict[str, Any]:
    """The template with asset hashes replaced, so a code change does not churn a snapshot."""
    import json

    text = _ASSET_HASH.sub("<asset-hash>", json.dumps(template, sort_keys=True))
    normalized = json.loads(text)
    normalized.get("Resources", {}).pop("CDKMetadata", None)
    normalized.get("Conditions", {}).pop("CDKMetadataAvailable", None)
    if normalized.get("Conditions") == {}:
        normalized.pop("Conditions")
    return normalized


def resources(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == resource_type
    }


def logical_id(template: dict[str, Any], prefix: str) -> str:
    """The one logical id ``prefix`` + the 8-character hash CDK appends."""
    ids = [
        lid
        for lid in template["Resources"]
        if lid.startswith(prefix) and len(lid) == len(prefix) + 8
    ]
    assert len(ids) == 1, f"{prefix}: {ids} in {sorted(template['Resources'])}"
    return ids[0]


def only(template: dict[str, Any], resource_type: str) -> dict[str, Any]:
    found = resources(template, resource_type)
    assert len(found) == 1, f"expected one {resource_type}, found {sorted(found)}"
    return next(iter(found.values()))["Properties"]


def statements(template: dict[str, Any], role: str | None = None) -> list[dict[str, Any]]:
    """Every statement of every IAM policy (inline policies of roles included); with ``role``
    (a logical id), only the policies attached to that role."""
    found = []
    for logical_id, resource in template["Resources"].items():
        props = resource.get("Properties", {})
        is_policy = resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")
        if is_policy and (role is None or {"Ref": role} in props.get("Roles", [])):
            found += _as_list(props["PolicyDocument"]["Statement"])
        if resource["Type"] == "AWS::IAM::Role" and role in (None, logical_id):
            for policy in props.get("Policies", []):
                found += _as_list(policy["PolicyDocument"]["Statement"])
    return found


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def actions(statement: dict[str, Any]) -> list[str]:
    return _as_list(statement.get("Action", []))


def grants(template: dict[str, Any], role: str | None = None) -> set[tuple[str, str]]:
    """Every (action, resource) pair allowed by the template's IAM policies (or ``role``'s).

    Statements are flattened because CDK merges statements with equal actions
    (@aws-cdk/aws-iam:minimizePolicies). Resources are rendered as compact JSON.
    """
    import json

    pairs = set()
    for statement in statements(template, role):
        assert statement["Effect"] == "Allow", statement
        for action in actions(statement):
            for resource in _as_list(statement["Resource"]):
                pairs.add((action, resource if isinstance(resource, str) else json.dumps(resource)))
    return pairs


def arn_of(logical_id: str, attribute: str = "Arn") -> str:
    import json

    return json.dumps({"Fn::GetAtt": [logical_id, attribute]})


# W3005 ("obsolete DependsOn"): aws-cdk-lib always makes a function depend on its role
# explicitly, besides the GetAtt; harmless, and not ours to change.
CFN_LINT_IGNORED = ["W3005"]


def cfn_lint(template: dict[str, Any]) -> list[str]:
    """cfn-lint's findings on a synthesized template (empty when clean)."""
    import json

    config = ManualArgs(regions=["us-east-1", "eu-west-1"], ignore_checks=CFN_LINT_IGNORED)
    return [str(match) for match in lint(json.dumps(template), config=config)]
