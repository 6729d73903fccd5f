"""cdk-nag is the `nag` extra: the constructs import without it, CdcChecks says how to get it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cdc_constructs.nag.requirement import INSTALL_HINT, require_cdk_nag_3

REPO_ROOT = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter (from the checkout): importlib.metadata answers as if cdk-nag
# were absent ("none") or at the given version, before anything of the library is imported.
PROBE = textwrap.dedent(
    """
    import sys
    from importlib import metadata

    version = sys.argv[1]
    real = metadata.version

    def fake(name):
        if name == "cdk-nag":
            if version == "none":
                raise metadata.PackageNotFoundError(name)
            return version
        return real(name)

    metadata.version = fake
    import cdc_constructs
    from cdc_constructs import ChangeCaptureTable, StreamConsumer
    try:
        from cdc_constructs.nag import CdcChecks
    except ImportError as error:
        print("ImportError:", error)
    else:
        print("imported")
    """
)


def _probe(version: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, version],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("version", "found"), [("none", "is not installed"), ("2.37.9", "cdk-nag 2.37.9 is")]
)
def test_constructs_import_without_cdk_nag_3_and_cdc_checks_names_the_extra(version, found):
    line = _probe(version)
    assert line.startswith("ImportError:") and INSTALL_HINT in line and found in line, line


def test_cdk_nag_3_is_accepted():
    require_cdk_nag_3()  # the repository's environment pins cdk-nag 3
