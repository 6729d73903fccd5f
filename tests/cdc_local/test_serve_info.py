"""Serve mode prints, unwrapped, each consumer's stream ARN, queues and the exact command line
that redrives it against the local endpoint; that command line runs as printed."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from cdc_local.endpoint import LocalEndpoint
from cdc_local.runner import LocalPipeline
from cdc_local.serve_info import REDRIVE_COMMAND, serve_lines

VENV_BIN = Path(sys.executable).parent


def _commands(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines if line.strip().startswith("env ")]


def test_serve_lines_name_stream_queues_and_the_redrive_command(
    pipeline_for: Callable[..., LocalPipeline],
) -> None:
    pipeline = pipeline_for("Basic")
    lines = list(serve_lines(pipeline))
    text = "\n".join(lines)
    assert pipeline.endpoint is not None and pipeline.resources is not None
    assert f"AWS_ENDPOINT_URL={pipeline.endpoint.url}" in lines[0]
    # An application pointed at the endpoint gets the fake credentials and region it needs.
    exported = shlex.split(lines[1].split("export ", 1)[1])
    assert dict(word.split("=", 1) for word in exported) == pipeline.endpoint.environment()
    (mapping,) = pipeline.mappings.values()
    assert f"  stream: {mapping.stream_arn}" in lines
    on_failure = pipeline.queue_url("OnFailure")
    assert f"  on-failure queue: {on_failure}" in lines
    (command,) = _commands(lines)
    words = shlex.split(command)
    assert words[0] == "env" and REDRIVE_COMMAND in words
    options = words[words.index(REDRIVE_COMMAND) + 1 :]
    assert options[:4] == ["--queue-url", on_failure, "--stream-arn", mapping.stream_arn]
    assert f"AWS_ENDPOINT_URL={pipeline.endpoint.url}" in words
    for name, value in mapping.function.environment.items():
        assert f"{name}={value}" in words, f"{name} missing from the redrive environment"
    assert all(len(line) < 10_000 for line in lines) and "\n" not in command, text


def test_the_printed_redrive_commands_run_as_printed(
    aws: LocalEndpoint, reference_assembly: Path
) -> None:
    """A dry run of each command line printed for the reference stack, against the local
    endpoint: the handler imports from its asset directory and the runtime layer, the queues
    and the stream are found, and each exits 0 (nothing to replay yet)."""
    with LocalPipeline(reference_assembly, "CdcReferenceStack", endpoint=aws) as pipeline:
        commands = _commands(list(serve_lines(pipeline)))
        assert len(commands) == 2 * len(pipeline.mappings), commands  # on-failure, quarantine
        bucket_commands = [c for c in commands if " --bucket " in c]
        assert bucket_commands, commands  # the reference consumer's destination is a bucket
        for command in bucket_commands:
            # The function named too: the run keeps to its objects and can name the folders of
            # its other (replaced) mappings that it leaves.
            assert " --consumer-function " in command and " --mapping-uuid " in command
        environ = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
        environ.pop("PYTHONPATH", None)
        for command in commands:
            done = subprocess.run(
                ["bash", "-c", f"{command} --dry-run"],
                env=environ,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"


def test_the_kinesis_stacks_redrive_commands_run_as_printed(
    aws: LocalEndpoint, tmp_path: Path
) -> None:
    """The Kinesis route (issue 30): each consumer's on-failure command names its Kinesis stream
    and runs (a dry run, exit 0); its quarantine is not offered to cdc-redrive, which does not
    replay the route's quarantine."""
    import aws_cdk as cdk

    from reference_app.kinesis_stack import CdcKinesisReferenceStack

    app = cdk.App(outdir=str(tmp_path / "cdk.out"))
    CdcKinesisReferenceStack(app, "CdcKinesisReferenceStack")
    app.synth()
    with LocalPipeline(tmp_path / "cdk.out", "CdcKinesisReferenceStack", endpoint=aws) as pipeline:
        lines = list(serve_lines(pipeline))
        commands = _commands(lines)
        assert len(commands) == len(pipeline.mappings), commands  # on-failure only
        assert all("--quarantine" not in command for command in commands)
        assert any("quarantine's Kinesis records are not redriven" in line for line in lines)
        environ = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
        environ.pop("PYTHONPATH", None)
        for command in commands:
            assert ":kinesis:" in command
            done = subprocess.run(
                ["bash", "-c", f"{command} --dry-run"],
                env=environ,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
