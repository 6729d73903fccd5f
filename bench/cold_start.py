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

# ``import boto3`` is timed first, then the subject's own statements: the second figure is what
# the subject adds over bare boto3 *in the same interpreter*, a paired measurement that the
# machine's noise (other processes, disk cache) affects far less than a difference of medians.
_PROBE = """
import time
started = time.perf_counter()
import boto3
boto3_done = time.perf_counter()
{body}
done = time.perf_counter()
print(boto3_done - started, done - boto3_done)
"""


@dataclass(frozen=True)
class Subject:
    label: str
    body: str  # Python statements to time after ``import boto3``
    paths: tuple[Path, ...]


BOTO3 = "import boto3"
REFERENCE = "reference handler (order_stats)"
REFERENCE_WITH_CLIENT = (
    "reference handler + its DynamoDB client and batch modules (loaded by the first batch)"
)
POWERTOOLS = "Powertools equivalent"


def subjects() -> list[Subject]:
    return [
        Subject(BOTO3, "pass", ()),
        Subject(
            "import boto3 + dynamodb and sqs clients",
            "boto3.client('dynamodb')\nboto3.client('sqs')",
            (),
        ),
        Subject(REFERENCE, f"import {REFERENCE_MODULE}", (HANDLERS, LAMBDA_SRC)),
        # The runtime creates its clients on first use (StreamProcessor.dynamodb) and imports
        # its batch machinery in the first handle() (cdc_consumer.batch and what it imports), so
        # the first invocation pays for them; the Powertools module does both at import.
        Subject(
            REFERENCE_WITH_CLIENT,
            f"import {REFERENCE_MODULE}\n{REFERENCE_MODULE}.processor.dynamodb\n"
            "import cdc_consumer.batch",
            (HANDLERS, LAMBDA_SRC),
        ),
        Subject(POWERTOOLS, f"import {BASELINE_MODULE}", (BASELINE_DIR,)),
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


def _once(subject: Subject) -> tuple[float, float]:
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
    boto3_s, rest_s = result.stdout.strip().splitlines()[-1].split()
    return float(boto3_s), float(rest_s)


def measure(runs: int = RUNS) -> dict[str, Any]:
    """Per subject: the median total import time (ms) and the median it adds over ``import
    boto3`` in the same interpreter (paired), plus the difference of medians (unpaired)."""
    chosen = subjects()
    for subject in chosen:
        _once(subject)  # warm-up: compiles .pyc files
    totals: dict[str, list[float]] = {s.label: [] for s in chosen}
    extras: dict[str, list[float]] = {s.label: [] for s in chosen}
    for _ in range(runs):
        for subject in chosen:
            boto3_s, rest_s = _once(subject)
            totals[subject.label].append((boto3_s + rest_s) * 1000)
            extras[subject.label].append(rest_s * 1000)
    boto3_median = statistics.median(totals[BOTO3])
    rows = {
        label: {
            "median_ms": round(statistics.median(values), 2),
            "min_ms": round(min(values), 2),
            "max_ms": round(max(values), 2),
            "over_boto3_paired_ms": round(statistics.median(extras[label]), 2),
            "over_boto3_unpaired_ms": round(statistics.median(values) - boto3_median, 2),
            "runs": len(values),
        }
        for label, values in totals.items()
    }
    return {"runs": runs, "modules": rows}
