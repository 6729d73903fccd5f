"""Fixtures for the construct tests: an empty stack (``cdk_context`` is the root conftest's).

(Node 24 on PATH for jsii is set up by the root tests/conftest.py, for every test package.)
"""

from __future__ import annotations

import aws_cdk as cdk
import pytest


@pytest.fixture
def stack(cdk_context: dict) -> cdk.Stack:
    """An empty stack in a fresh app with cdk.json's feature flags."""
    app = cdk.App(context=cdk_context)
    return cdk.Stack(app, "Test", env=cdk.Environment(account="111111111111", region="eu-west-1"))
