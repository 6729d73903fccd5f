"""Fixtures of the orders example's tests: the app synthesized once per test process."""

from __future__ import annotations

import pytest

from tests.cdc_constructs.support import Synthesized, synth_reference_app


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory, cdk_context: dict) -> Synthesized:
    """The reference app (app.py's build_app), synthesized once per test process."""
    return synth_reference_app(tmp_path_factory.mktemp("reference"), cdk_context)
