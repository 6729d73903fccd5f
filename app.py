#!/usr/bin/env python3
"""The reference app: ``cdk synth`` / ``cdk deploy`` of CdcReferenceStack (the orders example
in reference_app/) and CdcKinesisReferenceStack (the same orders on the Kinesis route), checked
by cdk-nag.

Context: ``-c alarmEmail=you@example.com`` subscribes an address to the alarm topic;
``-c cdcNagVerbose=true`` lists every cdk-nag acknowledgement with its reason.

cdk-nag v3 packs are CDK policy-validation plugins: at synth CDK runs them and, on any
unacknowledged finding, prints the report and fails. When synth succeeds this app prints one
line: the findings and how many were acknowledged (each one with its reason on request).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from cdc_constructs.nag import CdcChecks
from reference_app.kinesis_stack import CdcKinesisReferenceStack
from reference_app.stack import CdcReferenceStack

STACK_NAME = "CdcReferenceStack"
KINESIS_STACK_NAME = "CdcKinesisReferenceStack"
NAG_PACKS = ("AwsSolutions", "Serverless", "CdcChecks")
#: The context key that lists every acknowledgement (``-c cdcNagVerbose=true``).
VERBOSE_CONTEXT = "cdcNagVerbose"


def build_app(app: cdk.App | None = None) -> cdk.App:
    """The app with the reference stack and the cdk-nag packs: AwsSolutions, Serverless and
    this library's CdcChecks (app.py and the tests use it)."""
    app = app or cdk.App()
    email = app.node.try_get_context("alarmEmail")
    CdcReferenceStack(
        app,
        STACK_NAME,
        alarm_emails=[email] if email else [],
        description="cdc-constructs reference: orders table -> order-stats view, TTL archive "
        "and order-paid fan-out, with redrive and alarms",
    )
    CdcKinesisReferenceStack(
        app,
        KINESIS_STACK_NAME,
        alarm_emails=[email] if email else [],
        description="cdc-constructs reference, Kinesis route: orders table -> Kinesis stream -> "
        "latest-image replica and order-stats view, with alarms",
    )
    cdk.Validations.of(app).add_plugins(
        AwsSolutionsChecks(app), ServerlessChecks(app), CdcChecks(app)
    )
    return app


def acknowledgements(app: cdk.App) -> list[tuple[str, str, str]]:
    """Every cdk-nag acknowledgement in the app: (construct path, rule, reason)."""
    found = []
    for construct in app.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                for rule, reason in entry.data.items():
                    found.append((construct.node.path, _rule_id(rule), reason))
    return found


def _rule_id(key: str) -> str:
    """``AwsSolutions-IAM5[Resource::...]`` from ``Annotation::AwsSolutions-IAM5[Resource::...]``:
    the namespace CDK prefixes, not the ``::`` inside a finding id."""
    namespace, separator, rest = key.partition("::")
    return rest if separator and "[" not in namespace else key


def unacknowledged_findings(assembly_dir: str) -> int:
    """Findings in the cloud assembly's validation report (0 when synth succeeded)."""
    report = json.loads((Path(assembly_dir) / "validation-report.json").read_text())
    return sum(
        len(violation.get("violatingResources", [])) or 1
        for plugin in report.get("pluginReports", [])
        for violation in plugin.get("violations", [])
    )


def nag_summary(app: cdk.App, assembly_dir: str) -> str:
    """What a passing synth prints (see :func:`format_nag_summary`); verbose with the context
    ``cdcNagVerbose=true``."""
    verbose = str(app.node.try_get_context(VERBOSE_CONTEXT)).lower() == "true"
    return format_nag_summary(
        unacknowledged_findings(assembly_dir), acknowledgements(app), verbose=verbose
    )


def format_nag_summary(
    findings: int, acks: list[tuple[str, str, str]], *, verbose: bool = False
) -> str:
    """One line: the unacknowledged findings and the number acknowledged; ``verbose`` adds
    each acknowledgement after it (rule, construct, reason)."""
    head = (
        f"cdk-nag ({' + '.join(NAG_PACKS)}): {findings} unacknowledged findings, "
        f"{len(acks)} acknowledged"
    )
    if not verbose:
        return f"{head} (each with its reason: -c {VERBOSE_CONTEXT}=true)"
    lines = [f"{head}:"] + [f"  - {rule} on {path}: {reason}" for path, rule, reason in acks]
    return "\n".join(lines)


if __name__ == "__main__":
    reference_app = build_app()
    assembly = reference_app.synth()
    print(nag_summary(reference_app, assembly.directory), file=sys.stderr)
    for name in (STACK_NAME, KINESIS_STACK_NAME):
        print(f"Template: {Path(assembly.directory) / f'{name}.template.json'}", file=sys.stderr)
