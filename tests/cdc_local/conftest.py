"""Fixtures of the local pipeline's tests: the test apps, synthesized once per test process."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cdc_local.endpoint import LocalEndpoint
from cdc_local.runner import LocalPipeline
from tests.cdc_local import recorder


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # One worker runs all of them, so the test apps are synthesized once.
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.xdist_group("cdc_local"))


@pytest.fixture(scope="session")
def assembly_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.cdc_local.stacks import build

    return build(tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(autouse=True)
def _clean_recorder() -> Iterator[None]:
    recorder.clear()
    yield
    recorder.clear()


@pytest.fixture
def pipeline_for(aws: LocalEndpoint, assembly_dir: Path) -> Iterator[Callable[..., LocalPipeline]]:
    """Start a LocalPipeline on the (reset) test endpoint for one of the test stacks."""
    started: list[LocalPipeline] = []

    def start(stack: str, **options: Any) -> LocalPipeline:
        pipeline = LocalPipeline(assembly_dir, stack, endpoint=aws, **options).start()
        started.append(pipeline)
        return pipeline

    yield start
    for pipeline in started:
        pipeline.close()
