"""What the library's tables share: the TableV2 settings (encryption, recovery, protection,
billing) and the accessors of their table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from constructs import Construct


class TableConstruct(Construct):
    """A construct around one ``TableV2`` (ChangeCaptureTable, IdempotencyTable).

    Subclasses set :attr:`table` and :attr:`encryption_key` in their constructor.
    """

    table: dynamodb.TableV2
    """The TableV2 (escape hatch)."""
    encryption_key: kms.IKey | None
    """The customer managed key, or None for the AWS-managed key."""

    @property
    def table_name(self) -> str:
        return self.table.table_name

    @property
    def table_arn(self) -> str:
        return self.table.table_arn


def table_props(
    *,
    encryption_key: kms.IKey | None,
    point_in_time_recovery: bool,
    deletion_protection: bool,
    removal_policy: RemovalPolicy,
    table_name: str | None,
    billing: dynamodb.Billing | None = None,
    replica_key_arns: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Keyword arguments for ``dynamodb.TableV2``: encrypted with ``encryption_key`` (and each
    replica with its region's key of ``replica_key_arns``) or the AWS-managed key, PITR and
    deletion protection as given, on-demand unless ``billing``."""
    return {
        "table_name": table_name,
        "billing": billing or dynamodb.Billing.on_demand(),
        "encryption": (
            dynamodb.TableEncryptionV2.customer_managed_key(
                encryption_key, dict(replica_key_arns) if replica_key_arns else None
            )
            if encryption_key is not None
            else dynamodb.TableEncryptionV2.aws_managed_key()
        ),
        "point_in_time_recovery_specification": dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=point_in_time_recovery
        ),
        "deletion_protection": deletion_protection,
        "removal_policy": removal_policy,
    }
