"""Shared by the benchmark smoke tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_quick(module: str, out: Path, endpoint_url: str) -> subprocess.CompletedProcess[str]:
    """``python -m <module> --quick --out OUT --endpoint-url URL`` from the repository; fails the
    test with the end of its stderr when it does not exit 0."""
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            module,
            "--quick",
            "--out",
            str(out),
            "--endpoint-url",
            endpoint_url,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed
