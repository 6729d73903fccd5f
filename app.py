#!/usr/bin/env python3
"""The reference app: ``cdk synth`` / ``cdk deploy`` of CdcReferenceStack (the orders example
in reference_app/) and CdcKinesisReferenceStack (the same orders on the Kinesis route), checked
by cdk-nag.

Context: ``-c alarmEmail=you@example.com`` subscribes an address to the alarm topic;
``-c cdcNagVerbose=true`` lists every cdk-nag acknowledgement with its reason.

cdk-nag v3 packs are CDK policy-validation plugins: at synth CDK runs them and, on any
unacknowledged finding, prints the report and fails. CdcChecks prints one line at every synth
(what it checked, its findings, how many findings the app acknowledges; each one with its reason
on request): this app adds nothing to it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from cdc_constructs.nag import CdcChecks
from reference_app.kinesis_stack import CdcKinesisReferenceStack
from reference_app.stack import CdcReferenceStack

STACK_NAME = "CdcReferenceStack"
KINESIS_STACK_NAME = "CdcKinesisReferenceStack"


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


if __name__ == "__main__":
    reference_app = build_app()
    assembly = reference_app.synth()
    for name in (STACK_NAME, KINESIS_STACK_NAME):
        print(f"Template: {Path(assembly.directory) / f'{name}.template.json'}", file=sys.stderr)
