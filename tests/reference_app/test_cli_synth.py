"""The real CDK CLI (`npx cdk synth`) through cdk.json, as `make synth` runs it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cdc_constructs.support import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cli_synth")]


def test_npx_cdk_synth_writes_the_template_and_reports_cdk_nag(tmp_path: Path):
    venv_bin = str(Path(sys.executable).parent)
    # As a user runs it: CloudFormation's built-in template validation on (tests/conftest.py
    # turns it off for in-process synths).
    environ = {k: v for k, v in os.environ.items() if k != "CDK_VALIDATION"}
    env = {
        **environ,
        "PATH": os.pathsep.join(
            [venv_bin, str(REPO_ROOT / "node_modules" / ".bin"), os.environ["PATH"]]
        ),
        "JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION": "1",
        "CDK_DISABLE_VERSION_CHECK": "1",
    }
    result = subprocess.run(
        [
            "npx",
            "--no-install",
            "cdk",
            "synth",
            "--quiet",
            "--output",
            str(tmp_path),
            "--context",
            "alarmEmail=ops@example.com",
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # One line for a passing synth, CdcChecks' (the app prints no second one): the count of
    # acknowledgements, not each one in full.
    (summary,) = [line for line in output.splitlines() if "unacknowledged finding" in line]
    assert re.fullmatch(
        r"CdcChecks: [1-9]\d* stream readers? and [1-9]\d* backfill state machines? checked, "
        r"0 unacknowledged findings; the app acknowledges \d+ cdk-nag findings "
        r"\(each with its reason: -c cdcNagVerbose=true\)",
        summary,
    ), summary
    assert not [line for line in output.splitlines() if line.startswith("  - ")], output
    assert "end-of-life" not in output and "Node 20" not in output
    # make synth synthesizes the Kinesis route's reference stack beside the first.
    assert (tmp_path / "CdcKinesisReferenceStack.template.json").exists()
    template = json.loads((tmp_path / "CdcReferenceStack.template.json").read_text())
    (subscription,) = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::SNS::Subscription"
    ]
    assert subscription == {
        "Endpoint": "ops@example.com",
        "Protocol": "email",
        "TopicArn": subscription["TopicArn"],
    }

    # DynamoDB Streams serves two readers per shard: no template make synth writes has more.
    assert readers_per_dynamodb_stream(tmp_path) == {
        ("CdcReferenceStack", logical_id_of(template, "OrdersTable")): 2,  # consumers + pipe
        ("CdcKinesisReferenceStack", kinesis_orders(tmp_path)): 0,  # it streams to Kinesis
    }


def logical_id_of(template: dict, prefix: str) -> str:
    (found,) = [lid for lid in template["Resources"] if lid.startswith(prefix)]
    return found


def kinesis_orders(assembly: Path) -> str:
    template = json.loads((assembly / "CdcKinesisReferenceStack.template.json").read_text())
    return logical_id_of(template, "OrdersTable")


def readers_per_dynamodb_stream(assembly: Path) -> dict[tuple[str, str], int]:
    """(stack, table) -> event source mappings and pipes reading the table's DynamoDB stream,
    for every table with a stream in every template of the assembly."""
    counts: dict[tuple[str, str], int] = {}
    for path in sorted(assembly.glob("*.template.json")):
        stack = path.name.removesuffix(".template.json")
        found = json.loads(path.read_text())["Resources"]
        for lid, resource in found.items():
            is_table = resource["Type"] in ("AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable")
            if is_table and resource["Properties"].get("StreamSpecification"):
                counts[(stack, lid)] = 0
        for resource in found.values():
            source = resource.get("Properties", {})
            arn = {
                "AWS::Lambda::EventSourceMapping": source.get("EventSourceArn"),
                "AWS::Pipes::Pipe": source.get("Source"),
            }.get(resource["Type"])
            attribute = arn.get("Fn::GetAtt") if isinstance(arn, dict) else None
            if attribute and attribute[1] == "StreamArn":
                counts[(stack, attribute[0])] += 1
    return counts
