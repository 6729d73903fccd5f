"""The machine and the versions a benchmark ran with, so a reader can compare runs."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

PACKAGES = (
    "boto3",
    "botocore",
    "moto",
    "aws-lambda-powertools",
    "aws-cdk-lib",
    "constructs",
    "aws-solutions-constructs.aws-dynamodbstreams-lambda",
    "cdk-nag",
)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _command(*args: str) -> str | None:
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=30, cwd=REPO)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _load() -> list[float] | None:
    """The 1, 5 and 15 minute load averages: above the CPU count, other work shared them."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def describe() -> dict[str, Any]:
    node = str(Path(sys.executable).parent / "node")
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gib": _memory_gib(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "node": _command(node, "--version") or _command("node", "--version"),
        "git_commit": _command("git", "rev-parse", "--short", "HEAD"),
        # The last commit that changed the consumer runtime: what the figures measure.
        "runtime_commit": _command(
            "git", "log", "-1", "--format=%h", "--", "lambda_src/cdc_consumer"
        ),
        "load_average": _load(),
        "versions": {package: _version(package) for package in PACKAGES},
    }
