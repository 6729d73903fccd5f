"""Acknowledging a cdk-nag finding on one construct, with its reason (CDK Validations API)."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct


def acknowledge(construct: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge ``rule_id`` (e.g. ``AwsSolutions-SQS3``) on ``construct`` and its children.

    The constructs acknowledge only findings that follow from their design (for example a
    dead-letter queue has no dead-letter queue of its own); each reason says why.
    """
    Validations.of(construct).acknowledge(Acknowledgment(id=rule_id, reason=reason))
