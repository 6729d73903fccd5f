"""Synthesize an app with CdcChecks and read its findings from CDK's validation report.

cdk-nag 3 packs are policy validation plugins: CDK runs them after writing the templates and
records their violations in ``validation-report.json`` in the cloud assembly. When a plugin
reports an error, ``app.synth()`` raises ``ValidationFailed`` after writing the report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import App, Validations

from cdc_constructs.nag import PLUGIN_NAME, CdcChecks


@dataclass(frozen=True)
class Finding:
    rule_id: str
    severity: str
    description: str
    construct_path: str


def synthesize_with_checks(app: App) -> list[Finding]:
    """Register CdcChecks on ``app``, synthesize it, and return CdcChecks' findings."""
    Validations.of(app).add_plugins(CdcChecks())
    try:
        app.synth()
    except RuntimeError as error:  # jsii's wrapper of CDK's ValidationFailed
        if "ValidationFailed" not in str(error):
            raise
    report = json.loads((Path(app.outdir) / "validation-report.json").read_text())
    plugins = [r for r in report["pluginReports"] if r["pluginName"] == PLUGIN_NAME]
    for plugin in plugins:  # a plugin that raised is reported with the error, not findings
        assert "error" not in plugin.get("metadata", {}), plugin["metadata"]
    return [
        Finding(v["ruleName"], v["severity"], v["description"], c["constructPath"])
        for plugin in plugins
        for v in plugin["violations"]
        for c in v["violatingConstructs"]
    ]


def rule_ids(findings: list[Finding], path_prefix: str) -> set[str]:
    """The rule ids reported for constructs at or under ``path_prefix``."""
    return {
        f.rule_id
        for f in findings
        if f.construct_path == path_prefix or f.construct_path.startswith(path_prefix + "/")
    }
