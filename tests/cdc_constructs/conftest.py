"""Fixtures for the construct tests: the reference stack synthesized once, an empty stack.

(Node 24 on PATH for jsii is set up by the root tests/conftest.py, for every test package.)
"""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest

from tests.cdc_constructs.support import REPO_ROOT, Synthesized, synth_reference_app


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
