"""CdcChecks on the reference app's stack: it must report nothing."""

from __future__ import annotations

import pytest
from aws_cdk import App

from reference_app.stack import CdcReferenceStack
from tests.cdc_constructs.nag.validation_report import Finding, synthesize_with_checks

# One worker synthesizes this module's app once (the suite runs with --dist loadgroup).
pytestmark = pytest.mark.xdist_group("nag-reference-stack")


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> list[Finding]:
    app = App(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    CdcReferenceStack(app, "CdcReference")
    return synthesize_with_checks(app)


def test_reference_stack_has_no_findings(findings: list[Finding]) -> None:
    assert findings == []
