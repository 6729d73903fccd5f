"""Acknowledging a scanner's finding on one construct, with its reason: cdk-nag's (CDK
Validations API) and checkov's (template metadata)."""

from __future__ import annotations

from aws_cdk import Acknowledgment, CfnResource, Stack, Validations
from aws_cdk import aws_iam as iam
from constructs import IConstruct


def acknowledge(construct: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge ``rule_id`` (e.g. ``AwsSolutions-SQS3``) on ``construct`` and its children.

    The constructs acknowledge only findings that follow from their design (for example a
    dead-letter queue has no dead-letter queue of its own); each reason says why.
    """
    Validations.of(construct).acknowledge(Acknowledgment(id=rule_id, reason=reason))


def acknowledge_objects(
    grantee: iam.IGrantable, bucket_arn: str, reason: str, key_prefix: str = ""
) -> None:
    """Acknowledge AwsSolutions-IAM5 for ``<bucket>/<key_prefix>*`` on the grantee's role,
    naming the finding exactly (cdk-nag's id carries the bucket's logical id or ARN)."""
    role = getattr(grantee, "role", None) or grantee
    resolved = Stack.of(role).resolve(bucket_arn)  # type: ignore[arg-type]
    if isinstance(resolved, dict) and "Fn::GetAtt" in resolved:
        resource = f"<{resolved['Fn::GetAtt'][0]}.Arn>/{key_prefix}*"
    elif isinstance(resolved, str):
        resource = f"{resolved}/{key_prefix}*"
    else:
        return  # an ARN built at deployment: the app acknowledges it with its own reason
    acknowledge(role, f"AwsSolutions-IAM5[Resource::{resource}]", reason)  # type: ignore[arg-type]


def skip_check(resource: CfnResource, check_id: str, comment: str) -> None:
    """Acknowledge checkov's ``check_id`` (e.g. ``CKV_AWS_116``) on ``resource`` with its reason:
    checkov reads ``Metadata: {checkov: {skip: [{id, comment}]}}`` on the synthesized resource.

    For the checkov findings that follow from the design, as :func:`acknowledge` is for cdk-nag's
    (often the same finding, with the same reason); docs/checks.md says how to run checkov.
    """
    metadata = resource.get_metadata(CHECKOV_METADATA) or {}
    skips = [s for s in metadata.get("skip", []) if s.get("id") != check_id]
    skips.append({"id": check_id, "comment": comment})
    resource.add_metadata(CHECKOV_METADATA, {**metadata, "skip": skips})


CHECKOV_METADATA = "checkov"
"""The template metadata key checkov reads its skips from."""
