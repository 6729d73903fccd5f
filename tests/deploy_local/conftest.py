"""Fixtures of the deploy-local tests: MiniStack's virtualenv (made from the repository's
requirements-ministack.txt when missing, as ``make test`` does first), stand-in emulators for
the bad-input cases, and a run of the CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from deploy_local.emulator_venv import EmulatorVenv, _digest
from deploy_local.paths import REPO_ROOT


@pytest.fixture(scope="session")
def ministack_venv(tmp_path_factory: pytest.TempPathFactory) -> EmulatorVenv:
    """The real MiniStack virtualenv (made here on a machine where make has not made it)."""
    log = tmp_path_factory.mktemp("ministack-venv") / "install-ministack.log"
    return EmulatorVenv.default().ensure(log)


def fake_emulator(directory: Path, script: str) -> Path:
    """A stand-in MiniStack virtualenv whose ``python`` runs ``script`` (bash); it counts as
    current, so nothing is installed over it."""
    python = directory / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/bash\n{script}\n")
    python.chmod(0o755)
    (directory / ".requirements-sha256").write_text(_digest())
    return directory


def run_cli(
    arguments: Sequence[str], venv: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m deploy_local <arguments>`` with MiniStack's virtualenv at ``venv``."""
    return subprocess.run(
        [sys.executable, "-m", "deploy_local", *arguments],
        cwd=REPO_ROOT,
        env={**os.environ, "MINISTACK_VENV": str(venv)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def processes_mentioning(text: str) -> list[int]:
    """PIDs of live processes whose command line mentions ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            status = (entry / "status").read_text()
        except OSError:
            continue
        if text.encode() in cmdline and "\nState:\tZ" not in status:
            found.append(int(entry.name))
    return found
