"""Under `cdk synth` (the CLI sets CDK_OUTDIR for the app process), a CdcConfigurationError
prints its message first, without a traceback wall, with no code in the user's app (issue 13)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.cdc_constructs.support import REPO_ROOT

APP = textwrap.dedent(
    """
    import aws_cdk as cdk
    from aws_cdk import aws_dynamodb as dynamodb
    from aws_cdk import aws_lambda as lambda_

    from cdc_constructs import ChangeCaptureTable, StreamConsumer

    app = cdk.App()
    stack = cdk.Stack(app, "Mine")
    table = ChangeCaptureTable(
        stack,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
    )
    StreamConsumer(
        stack,
        "Consumer",
        table=table,
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
        handler="index.handler",
        retry_attempts=2.5,
    )
    app.synth()
    """
)


def _run_app(tmp_path: Path, **environ: str) -> subprocess.CompletedProcess[str]:
    app = tmp_path / "app.py"
    app.write_text(APP)
    env = {k: v for k, v in os.environ.items() if k not in ("CDK_OUTDIR", "CDC_TRACEBACK")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "lambda_src")])
    env.update(environ)
    return subprocess.run(
        [sys.executable, str(app)], cwd=tmp_path, env=env, capture_output=True, text=True
    )


def _without_node_banner(stderr: str) -> str:
    """stderr without jsii's Node end-of-life banner (printed by the runtime, not by us)."""
    return "\n".join(line for line in stderr.splitlines() if "!!" not in line).strip()


def test_under_cdk_synth_the_message_comes_first_without_a_traceback(tmp_path):
    result = _run_app(tmp_path, CDK_OUTDIR=str(tmp_path / "cdk.out"))
    assert result.returncode == 1
    stderr = _without_node_banner(result.stderr)
    assert stderr.startswith(
        "StreamConsumer 'Consumer': 1 invalid prop:\n"
        "  - retry_attempts=2.5: a whole number in 0..10000"
    ), stderr
    assert "Traceback" not in stderr
    assert f"(raised at {tmp_path / 'app.py'}:" in stderr
    assert "set CDC_TRACEBACK=1 for the full traceback)" in stderr


def test_cdc_traceback_restores_the_full_traceback(tmp_path):
    result = _run_app(tmp_path, CDK_OUTDIR=str(tmp_path / "cdk.out"), CDC_TRACEBACK="1")
    assert result.returncode == 1
    assert "Traceback (most recent call last)" in result.stderr


def test_outside_the_cli_python_reports_as_usual(tmp_path):
    result = _run_app(tmp_path)
    assert result.returncode == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert "CdcConfigurationError: StreamConsumer 'Consumer'" in result.stderr
