"""MiniStack's own virtualenv, made from the repository's pinned ``requirements-ministack.txt``.

MiniStack pins a botocore the project's boto3 cannot share, and its Lambda workers run Python
functions on MiniStack's own interpreter: what a deployed function imports from the Lambda
runtime (boto3) must be installed beside it. So it gets a virtualenv of its own, made on first
use and remade when the requirements file changes (a stamp holds the file's SHA-256). A lock
file keeps two runs (``make deploy-local`` beside ``make test``) from installing at once.

``python -m deploy_local --install-emulator`` makes it (the Makefile's ``.venv-ministack``
target).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from deploy_local.exceptions import StepFailed
from deploy_local.paths import REPO_ROOT

REQUIREMENTS = REPO_ROOT / "requirements-ministack.txt"
"""The pinned requirements of MiniStack's virtualenv."""

DEFAULT_VENV = REPO_ROOT / ".venv-ministack"
"""Where the virtualenv is made unless ``MINISTACK_VENV`` names another directory."""

_STAMP = ".requirements-sha256"


@dataclass(frozen=True)
class EmulatorVenv:
    """A virtualenv holding MiniStack; ``python`` runs it (``python -m ministack``)."""

    path: Path

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    @classmethod
    def default(cls) -> EmulatorVenv:
        """``MINISTACK_VENV`` (relative to the checkout) or ``.venv-ministack``."""
        return cls(REPO_ROOT / os.environ.get("MINISTACK_VENV", DEFAULT_VENV))

    def is_current(self) -> bool:
        """Whether the virtualenv exists and was made from the current requirements file."""
        stamp = self.path / _STAMP
        return self.python.exists() and stamp.exists() and stamp.read_text() == _digest()

    def ensure(self, log: Path) -> EmulatorVenv:
        """Make (or remake) the virtualenv unless it is current; pip's output goes to ``log``.

        Raises StepFailed naming ``log`` when venv or pip fails.
        """
        if self.is_current():
            return self
        log.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.parent / f"{self.path.name}.lock"
        with lock_path.open("w") as lock, log.open("w") as out:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another run may be installing it right now
            if self.is_current():
                return self
            commands = [
                [sys.executable, "-m", "venv", "--clear", str(self.path)],
                [str(self.python), "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS)],
            ]
            for command in commands:
                out.write(f"$ {' '.join(command)}\n")
                out.flush()
                done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
                if done.returncode != 0:
                    raise StepFailed(
                        "install MiniStack",
                        f"{command[2]} exited with code {done.returncode}",
                        log,
                    )
            (self.path / _STAMP).write_text(_digest())
        return self


def _digest() -> str:
    return hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
