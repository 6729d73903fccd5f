"""Issue 7 item 4: import time of the handler modules, each the median of fresh interpreters.

Each measurement is a new Python process that times ``import <module>`` with
``time.perf_counter`` (what Lambda's init phase pays for the handler module, interpreter start-up
excluded). One unmeasured warm-up process per module first compiles the ``.pyc`` files, as a
deployed package would ship them. Modules are measured round-robin so that drift of the machine
spreads evenly over them. The environment is the function's (table names, queue URL, region,
dummy credentials) so import-time code runs without network.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.consumers import BASELINE_DIR, BASELINE_MODULE, HANDLERS, LAMBDA_SRC, REFERENCE_MODULE

#: Fresh interpreters per module (issue 7: the median of 9).
RUNS = 9

_PROBE = """
import sys, time
started = time.perf_counter()
{body}
print(time.perf_counter() - started)
"""


@dataclass(frozen=True)
class Subject:
    label: str
    body: str  # Python statements to time
    paths: tuple[Path, ...]


def subjects() -> list[Subject]:
    return [
        Subject("import boto3", "import boto3", ()),
        Subject(
            "import boto3 + dynamodb and sqs clients",
            "import boto3\nboto3.client('dynamodb')\nboto3.client('sqs')",
            (),
        ),
        Subject(
            "reference handler (order_stats)",
            f"import {REFERENCE_MODULE}",
            (HANDLERS, LAMBDA_SRC),
        ),
        Subject(
            "Powertools equivalent",
            f"import {BASELINE_MODULE}",
            (BASELINE_DIR,),
        ),
    ]


def function_environment(paths: tuple[Path, ...]) -> dict[str, str]:
    """What the Lambda function would see, minus everything of this machine's shell."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.pathsep.join(str(p) for p in paths),
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_LAMBDA_FUNCTION_NAME": "order-stats",
        "CDC_CONSUMER_NAME": "order-stats",
        "IDEMPOTENCY_TABLE_NAME": "idempotency",
        "VIEW_TABLE_NAME": "order-stats",
        "QUARANTINE_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/quarantine",
        "CDC_METRICS_NAMESPACE": "CdcConstructs",
    }


def _once(subject: Subject) -> float:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE.format(body=subject.body)],
        env=function_environment(subject.paths),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{subject.label!r} failed to import:\n{result.stderr.strip()}")
    return float(result.stdout.strip().splitlines()[-1])


def measure(runs: int = RUNS) -> dict[str, Any]:
    """Median import time (ms) per subject, and the reference handler's cost over bare boto3."""
    chosen = subjects()
    for subject in chosen:
        _once(subject)  # warm-up: compiles .pyc files
    samples: dict[str, list[float]] = {s.label: [] for s in chosen}
    for _ in range(runs):
        for subject in chosen:
            samples[subject.label].append(_once(subject) * 1000)
    rows = {
        label: {
            "median_ms": round(statistics.median(values), 2),
            "min_ms": round(min(values), 2),
            "max_ms": round(max(values), 2),
            "runs": len(values),
        }
        for label, values in samples.items()
    }
    boto3_ms = rows["import boto3"]["median_ms"]
    for row in rows.values():
        row["over_boto3_ms"] = round(row["median_ms"] - boto3_ms, 2)
    return {"runs": runs, "modules": rows}
