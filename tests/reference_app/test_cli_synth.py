"""The real CDK CLI (`npx cdk synth`) through cdk.json, as `make synth` runs it."""

from __future__ import annotations

import json
import os
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
    assert "cdk-nag (AwsSolutions + Serverless + CdcChecks): 0 unacknowledged findings" in output
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
