"""MiniStack, the local AWS emulator, as a process this run owns: started, probed, stopped.

It listens on 127.0.0.1 only, on a free port (or the one asked for), with its state, temporary
files (the extracted Lambda code) and log under the run's directory. Its environment is built
here, not inherited: MiniStack's Lambda workers pass their own environment on to the deployed
functions, so a developer's ``PYTHONPATH``, ``AWS_*`` or proxy settings must not leak in and
make a broken deployment look healthy.

It runs in a process group of its own and is stopped by that group's id (its PID): Lambda
workers are its children and would outlive a plain kill of the server.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

import boto3
from botocore.config import Config

from deploy_local.emulator_venv import EmulatorVenv
from deploy_local.exceptions import StepFailed

HOST = "127.0.0.1"
"""Where MiniStack listens: this machine only."""

ACCOUNT = "000000000000"
"""MiniStack's account id (its default)."""

REGION = "us-east-1"

READY_TIMEOUT_SECONDS = 60.0
"""How long MiniStack may take to answer ``/_ministack/ready`` (it takes 1-3 s here)."""

STOP_TIMEOUT_SECONDS = 10.0
"""How long the process group has after SIGTERM before it is killed."""

START_STEP = "start emulator"

_CREDENTIALS = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}


def free_port() -> int:
    """A port free on 127.0.0.1 now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            return True
    return False


class Emulator:
    """MiniStack on 127.0.0.1:``port`` (a free one when None), logging to ``workdir``.

    Use as a context manager: it is stopped on leaving, whatever happened.
    """

    def __init__(
        self,
        venv: EmulatorVenv,
        workdir: Path,
        port: int | None = None,
        ready_timeout: float = READY_TIMEOUT_SECONDS,
    ) -> None:
        self.venv = venv
        self.workdir = workdir
        self.port = port
        self.ready_timeout = ready_timeout
        self.log = workdir / "emulator.log"
        self._process: subprocess.Popen[bytes] | None = None

    # --- where it is ---------------------------------------------------------------------

    @property
    def endpoint_url(self) -> str:
        """``http://localhost:<port>``: the CDK CLI builds its S3 asset URLs from this host,
        and MiniStack serves virtual-host S3 under ``localhost``."""
        return f"http://localhost:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def client(self, service: str) -> Any:
        """A boto3 client of ``service`` on the emulator, with its test credentials."""
        return boto3.client(
            service,
            endpoint_url=self.endpoint_url,
            region_name=REGION,
            config=Config(retries={"max_attempts": 3, "mode": "standard"}),
            **_CREDENTIALS,
        )

    def cli_environment(self) -> dict[str, str]:
        """What an AWS client process (the CDK CLI) needs to reach the emulator and nothing
        else: no profile, no real credentials, no shared config."""
        environment = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("AWS_") and not key.startswith("CDK_DEFAULT_")
        }
        empty = self.workdir / "no-aws-config"
        empty.touch()
        environment.update(
            AWS_ENDPOINT_URL=self.endpoint_url,
            AWS_ACCESS_KEY_ID=_CREDENTIALS["aws_access_key_id"],
            AWS_SECRET_ACCESS_KEY=_CREDENTIALS["aws_secret_access_key"],
            AWS_REGION=REGION,
            AWS_DEFAULT_REGION=REGION,
            AWS_CONFIG_FILE=str(empty),
            AWS_SHARED_CREDENTIALS_FILE=str(empty),
            CDK_DEFAULT_ACCOUNT=ACCOUNT,
            CDK_DEFAULT_REGION=REGION,
        )
        return environment

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> Emulator:
        """Start MiniStack and wait until it is ready.

        Raises StepFailed (naming the log) when the port is taken, MiniStack exits early or is
        not ready in time; the emulator is stopped before it is raised.
        """
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.port is None:
            self.port = free_port()
        elif port_in_use(self.port):
            self.log.write_text(f"{HOST}:{self.port} is in use by another process\n")
            raise StepFailed(START_STEP, f"port {HOST}:{self.port} is already in use", self.log)
        with self.log.open("wb") as out:
            self._process = subprocess.Popen(
                [str(self.venv.python), "-m", "ministack"],
                cwd=self.workdir,
                env=self._environment(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: its Lambda workers go with it
            )
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop MiniStack and its Lambda workers (its process group), if started. Idempotent."""
        process, self._process = self._process, None
        if process is None:
            return
        group = process.pid
        _signal_group(group, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
        # Workers may outlive the server by a moment (or ignore SIGTERM): end the whole group.
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        while _group_alive(group) and time.monotonic() < deadline:
            _signal_group(group, signal.SIGKILL)
            time.sleep(0.1)
        if process.poll() is None:
            process.kill()
            process.wait()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # --- internals -----------------------------------------------------------------------

    def _environment(self) -> dict[str, str]:
        state = self.workdir / "emulator-state"
        tmp = state / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": str(state),
            "TMPDIR": str(tmp),  # MiniStack extracts each function's code and layers here
            "GATEWAY_PORT": str(self.port),
            "BIND_HOST": HOST,
            "MINISTACK_REGION": REGION,
            "LAMBDA_EXECUTOR": "local",  # Python functions in subprocesses, never Docker
            "PERSIST_STATE": "0",
            "STATE_DIR": str(state / "persist"),
            "S3_DATA_DIR": str(state / "s3"),
            # Listeners the stack does not use, with fixed ports another run could hold.
            "IOT_MTLS_ENABLED": "0",
            "SFTP_ENABLED": "0",
            "PYTHONUNBUFFERED": "1",
            # Step Functions' Retry intervals (and Wait states) at a tenth: the backfill's
            # refused execution is retried here (MiniStack reports every function error as
            # Runtime.HandlerError, not the exception's class), 2 s, 4 s, ... at a tenth.
            "SFN_WAIT_SCALE": "0.1",
        }

    def _wait_until_ready(self) -> None:
        assert self._process is not None
        url = f"http://{HOST}:{self.port}/_ministack/ready"
        deadline = time.monotonic() + self.ready_timeout
        while True:
            code = self._process.poll()
            if code is not None:
                raise StepFailed(
                    START_STEP, f"MiniStack exited with code {code} before it was ready", self.log
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise StepFailed(
                    START_STEP,
                    f"MiniStack was not ready within {self.ready_timeout:g} s",
                    self.log,
                )
            time.sleep(0.2)


def _signal_group(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
