"""Bad input to ``python -m deploy_local`` (``make deploy-local``): a port in use, an emulator
that exits or never becomes ready, Ctrl-C, a deploy that fails. Each ends with one line naming
the step and its log file, a non-zero exit, and nothing left running."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deploy_local.emulator_venv import EmulatorVenv
from deploy_local.paths import REPO_ROOT
from tests.deploy_local.conftest import fake_emulator, processes_mentioning, run_cli
from tests.signals import default_sigint

NEVER_RUN = 'echo "the emulator must not be started" >&2; exit 99'


def failure_line(stderr: str, step: str) -> Path:
    """The one failure line of ``step``; returns the log file it names (which must exist)."""
    lines = [line for line in stderr.splitlines() if "failed:" in line]
    assert len(lines) == 1, stderr
    match = re.fullmatch(rf"deploy-local: step '{step}' failed: .+; log: (\S+)", lines[0])
    assert match, lines[0]
    log = Path(match.group(1))
    assert log.is_file()
    return log


def assert_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_port_in_use_is_refused_before_anything_starts(tmp_path: Path) -> None:
    venv = fake_emulator(tmp_path / "venv", NEVER_RUN)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_cli(["--port", str(port), "--workdir", str(tmp_path / "run")], venv)
    assert done.returncode == 1
    log = failure_line(done.stderr, "start emulator")
    assert f"port 127.0.0.1:{port} is already in use" in done.stderr
    assert "in use" in log.read_text()


def test_an_emulator_that_exits_is_reported_with_its_exit_code(tmp_path: Path) -> None:
    venv = fake_emulator(tmp_path / "venv", 'echo "ministack: cannot start" >&2; exit 3')
    done = run_cli(["--workdir", str(tmp_path / "run")], venv)
    assert done.returncode == 1
    log = failure_line(done.stderr, "start emulator")
    assert "MiniStack exited with code 3 before it was ready" in done.stderr
    assert "ministack: cannot start" in log.read_text()


def test_an_emulator_that_never_gets_ready_is_stopped(tmp_path: Path) -> None:
    pid_file = tmp_path / "emulator.pid"
    venv = fake_emulator(tmp_path / "venv", f"echo $$ > {pid_file}; exec sleep 300")
    done = run_cli(["--workdir", str(tmp_path / "run"), "--ready-timeout", "3"], venv)
    assert done.returncode == 1
    failure_line(done.stderr, "start emulator")
    assert "MiniStack was not ready within 3 s" in done.stderr
    assert_gone(int(pid_file.read_text()))


def test_ctrl_c_stops_the_emulator(tmp_path: Path) -> None:
    pid_file = tmp_path / "emulator.pid"
    venv = fake_emulator(tmp_path / "venv", f"echo $$ > {pid_file}; exec sleep 300")
    run = subprocess.Popen(
        [sys.executable, "-m", "deploy_local", "--workdir", str(tmp_path / "run")],
        cwd=REPO_ROOT,
        env={**os.environ, "MINISTACK_VENV": str(venv)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert time.monotonic() < deadline and run.poll() is None, "the emulator never started"
        time.sleep(0.1)
    run.send_signal(signal.SIGINT)
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == 130
    assert "interrupted; emulator stopped" in stderr
    assert_gone(int(pid_file.read_text()))


@pytest.mark.slow
def test_a_failed_deploy_names_the_step_and_stops_the_emulator(
    tmp_path: Path, ministack_venv: EmulatorVenv
) -> None:
    # A cloud assembly whose stack cannot be created: a GetAtt to a resource that is not there.
    assembly = tmp_path / "assembly"
    assembly.mkdir()
    (assembly / "manifest.json").write_text(
        json.dumps(
            {
                "version": "54.0.0",
                "artifacts": {
                    "BrokenStack": {
                        "type": "aws:cloudformation:stack",
                        "environment": "aws://unknown-account/unknown-region",
                        "properties": {"templateFile": "BrokenStack.template.json"},
                    }
                },
            }
        )
    )
    dead_letter_arn = {"Fn::GetAtt": ["NoSuchQueue", "Arn"]}
    (assembly / "BrokenStack.template.json").write_text(
        json.dumps(
            {
                "Resources": {
                    "Queue": {
                        "Type": "AWS::SQS::Queue",
                        "Properties": {
                            "RedrivePolicy": {
                                "deadLetterTargetArn": dead_letter_arn,
                                "maxReceiveCount": 3,
                            }
                        },
                    }
                }
            }
        )
    )
    workdir = tmp_path / "run"
    done = run_cli(
        ["--stack", "BrokenStack", "--assembly", str(assembly), "--workdir", str(workdir)],
        ministack_venv.path,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    log = failure_line(done.stderr, "cdk deploy")
    assert "CREATE_FAILED" in log.read_text()
    pid = int(re.search(r"MiniStack PID (\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    assert_gone(pid)
    assert processes_mentioning(str(workdir)) == []
