"""docs/constructs.md stays accurate: its props tables name real props, its fan-out example
synthesizes without CdcChecks findings."""

from __future__ import annotations

import inspect
import re

import aws_cdk as cdk
import pytest

from cdc_constructs import (
    ChangeCaptureTable,
    IdempotencyTable,
    StreamConsumer,
    StreamFanOut,
    StreamRedrive,
    ViewBackfill,
)
from tests.cdc_constructs.nag.validation_report import synthesize_with_checks
from tests.cdc_constructs.support import REPO_ROOT

PAGE = (REPO_ROOT / "docs" / "constructs.md").read_text()


def _section(heading: str) -> str:
    start = PAGE.index(heading)
    end = PAGE.find("\n#", start + len(heading))
    return PAGE[start : end if end != -1 else None]


@pytest.mark.parametrize(
    "construct", [ChangeCaptureTable, StreamConsumer, StreamRedrive, StreamFanOut, ViewBackfill]
)
def test_every_prop_in_a_props_table_is_a_parameter(construct: type) -> None:
    section = _section(f"### `{construct.__name__}(")
    documented = {
        name
        for row in re.findall(r"^\| (`[^|]+`) \|", section, re.M)
        for name in re.findall(r"`(\w+)`", row)
    }
    parameters = set(inspect.signature(construct.__init__).parameters) - {"self", "scope"}
    assert documented, f"no props table for {construct.__name__}"
    assert documented <= parameters, documented - parameters


def test_idempotency_table_props_named_in_the_text_are_parameters() -> None:
    section = _section("### `IdempotencyTable(")
    parameters = set(inspect.signature(IdempotencyTable.__init__).parameters)
    for name in ("encryption_key", "point_in_time_recovery", "deletion_protection"):
        assert f"`{name}`" in section and name in parameters


def test_fan_out_example_synthesizes_without_cdc_findings(tmp_path) -> None:
    (example,) = re.findall(
        r"```python\n(.*?)```", _section("## Fan-out and the transactional outbox"), re.S
    )
    namespace: dict = {}
    exec(compile(example, "docs/constructs.md fan-out example", "exec"), namespace)
    app = cdk.App(outdir=str(tmp_path))
    namespace["ShopEvents"](app, "ShopEvents")
    assert synthesize_with_checks(app) == []
