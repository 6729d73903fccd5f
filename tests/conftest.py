"""Fixtures shared by every test package.

``aws_endpoint`` is moto's server on 127.0.0.1, started once per test process; each test that
uses ``aws`` gets it reset, so tests never see each other's tables or queues.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cdc_local.endpoint import LocalEndpoint, patched_environ


@pytest.fixture(scope="session")
def aws_endpoint() -> Iterator[LocalEndpoint]:
    with LocalEndpoint() as endpoint, patched_environ(endpoint.environment()):
        yield endpoint


@pytest.fixture
def aws(aws_endpoint: LocalEndpoint) -> LocalEndpoint:
    """The local endpoint, emptied before the test."""
    aws_endpoint.reset()
    return aws_endpoint
