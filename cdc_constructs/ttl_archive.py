"""TtlArchive: every item DynamoDB's TTL expires from a table, kept once in S3.

A stream consumer whose code ships in the runtime (``cdc_consumer.ttl_archive``): its mapping
admits TTL deletions only (:meth:`StreamFilters.ttl_deletions_only`; on a table with replicas
the runtime also tells the expiries replicated from other regions, docs/global-tables.md), and
each expired item's old image is written to the archive bucket under a key its table, its key
and its TTL value determine, with a conditional PutObject: a redelivery, a redrive, or the same
expiry seen in another region never makes a second copy (docs/design.md, "The TTL archive").

Two ways to run it: a consumer of its own (``table=``: a :class:`StreamConsumer` made here,
with its alarms, on-failure bucket and redrive), or a member of a consumer group that already
reads the table (``consumer=`` and ``member=``: the stream serves two readers per shard, one on
a global table), whose handler then hands ``cdc_consumer.ttl_archive.archive_processor(name)``
to its ``ConsumerGroup``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from cdc_consumer.environment_variables import (
    ARCHIVE_BUCKET_ENV,
    ARCHIVE_PREFIX_ENV,
    ARCHIVE_TABLE_ENV,
    ARCHIVE_TTL_ATTRIBUTE_ENV,
)
from cdc_consumer.handler_paths import TTL_ARCHIVE_HANDLER
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.acknowledge import acknowledge, acknowledge_objects, skip_check
from cdc_constructs.consumer_group import ConsumerGroupMember
from cdc_constructs.exceptions import Problem
from cdc_constructs.filters import StreamFilters
from cdc_constructs.permissions import ARCHIVE_KEY_ACTIONS, ARCHIVE_OBJECT_ACTIONS, allow, grant_key
from cdc_constructs.source_table import SourceTable, as_table, check_source_table
from cdc_constructs.stream_consumer import StreamConsumer
from cdc_constructs.validation import raise_if_any

__all__ = ["TtlArchive"]

_OLD_IMAGE = "OldImage"
_NOT_FOR_A_CONSUMER_OF_ITS_OWN = ("code", "handler", "function", "filters", "members")


class TtlArchive(Construct):
    """Archives every item TTL expires from ``table`` to an S3 bucket, each exactly once.

    :param table: the table whose expiries are archived: a :class:`ChangeCaptureTable`, a
        :class:`ReplicaTable`, or any ``dynamodb.ITable``/``ITableV2`` whose stream carries old
        images (``NEW_AND_OLD_IMAGES`` or ``OLD_IMAGE``). Its name is the first partition of
        every object's key.
    :param consumer: a :class:`StreamConsumer` with ``members`` (a consumer group) that already
        reads ``table``, to run the archive as one of its members instead of a consumer of its
        own (the stream serves two readers per shard, one on a global table). Default: none,
        a consumer of its own.
    :param member: with ``consumer``: the member's ``consumer_name``, declared with
        :meth:`group_member`. Required with ``consumer``, refused without it.
    :param bucket: the archive bucket. Default: one made here: S3-managed encryption (or
        ``encryption_key``), TLS only, public access blocked, objects owned by the bucket
        owner, versioned, retained when the stack is deleted. A bucket given is used as it is.
    :param archive_prefix: the key prefix of the archive's objects. Default ``"expired/"``:
        the function may put objects there and nowhere else.
    :param time_to_live_attribute: the table's TTL attribute, read from each expired item (its
        value is part of the object's key). Default: the table's (a ChangeCaptureTable's or
        ReplicaTable's, or a table of this app with TTL); required for an imported table.
    :param lifecycle_rules: the made bucket's lifecycle rules besides the one expiring
        noncurrent versions after 90 days, e.g. ``s3.LifecycleRule(transitions=[s3.Transition(
        storage_class=s3.StorageClass.DEEP_ARCHIVE, transition_after=Duration.days(180))])``.
        Default: none (each object is one item, mostly under the 128 KB below which a
        transition saves nothing: ``defaults.TTL_ARCHIVE_LIFECYCLE_RULES``).
    :param encryption_key: a customer managed key for the made bucket. Default: S3-managed keys.
    :param server_access_logs_bucket: where the made bucket's access logs go (who read or wrote
        expired items). Default: none (acknowledged: the function writes, people read).
    :param removal_policy: the made bucket's. Default ``RETAIN``: it holds the only copy of
        the items TTL deleted.
    :param consumer_name: the archive's consumer name (a consumer of its own). Default: the
        construct id.
    :param consumer_props: any other :class:`StreamConsumer` prop for a consumer of its own
        (``alarm_topic``, ``dashboard``, ``idempotency_table``, ``memory_size``, ...), with the
        same defaults; ``code``, ``handler``, ``function``, ``filters`` and ``members`` are the
        archive's own.

    Escape hatches: :attr:`bucket`, :attr:`consumer` (the StreamConsumer, made here or given),
    :attr:`function`, :attr:`consumer_name`, :attr:`archive_prefix`,
    :attr:`time_to_live_attribute`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: SourceTable,
        consumer: StreamConsumer | None = None,
        member: str | None = None,
        bucket: s3.IBucket | None = None,
        archive_prefix: str = defaults.TTL_ARCHIVE_PREFIX,
        time_to_live_attribute: str | None = None,
        lifecycle_rules: Sequence[s3.LifecycleRule] = defaults.TTL_ARCHIVE_LIFECYCLE_RULES,
        encryption_key: kms.IKey | None = None,
        server_access_logs_bucket: s3.IBucket | None = None,
        removal_policy: RemovalPolicy = defaults.RECORD_REMOVAL_POLICY,
        consumer_name: str | None = None,
        **consumer_props: Any,
    ) -> None:
        ttl_attribute = time_to_live_attribute or _ttl_attribute_of(table)
        raise_if_any(
            f"TtlArchive {construct_id!r}",
            _problems(table, consumer, member, archive_prefix, ttl_attribute, consumer_props)
            + (
                [Problem("consumer_name", consumer_name, "not given with consumer: use member")]
                if consumer is not None and consumer_name is not None
                else []
            ),
        )
        super().__init__(scope, construct_id)
        assert ttl_attribute is not None  # refused above otherwise
        self.archive_prefix, self.time_to_live_attribute = archive_prefix, ttl_attribute
        self.bucket: s3.IBucket = bucket or _archive_bucket(
            self, lifecycle_rules, encryption_key, server_access_logs_bucket, removal_policy
        )
        environment = {
            ARCHIVE_BUCKET_ENV: self.bucket.bucket_name,
            ARCHIVE_PREFIX_ENV: archive_prefix,
            ARCHIVE_TABLE_ENV: as_table(table).table_name,
            ARCHIVE_TTL_ATTRIBUTE_ENV: ttl_attribute,
        }
        if consumer is None:
            self.consumer = _own_consumer(
                self, table, consumer_name or construct_id, environment, consumer_props
            )
            self.consumer_name = self.consumer.consumer_name
        else:
            self.consumer, self.consumer_name = consumer, str(member)
            for name, value in environment.items():
                consumer.function.add_environment(name, value)
        self.function: lambda_.Function = self.consumer.function
        self._grant_put()

    @staticmethod
    def group_member(consumer_name: str) -> ConsumerGroupMember:
        """The archive as a member of a consumer group (``StreamConsumer(members=[...])``):
        TTL deletions only, reading the old image. Then ``TtlArchive(..., consumer=...,
        member=consumer_name)`` gives it its bucket and grants.

        :param consumer_name: the member's name (its markers' namespace and metrics
            dimension); the group's handler gives ``archive_processor(consumer_name)`` to its
            ``ConsumerGroup``.
        """
        return ConsumerGroupMember(
            consumer_name, [StreamFilters.ttl_deletions_only()], reads_images=[_OLD_IMAGE]
        )

    def _grant_put(self) -> None:
        """PutObject under the prefix (conditional writes need no other action), and the
        bucket key's data keys when it has one."""
        objects = self.bucket.arn_for_objects(f"{self.archive_prefix}*")
        self.function.add_to_role_policy(allow(ARCHIVE_OBJECT_ACTIONS, [objects]))
        grant_key(self.function, self.bucket.encryption_key, ARCHIVE_KEY_ACTIONS)
        role: iam.IRole | None = self.function.role
        if role is not None:
            acknowledge_objects(
                role,
                self.bucket.bucket_arn,
                "s3:PutObject under the archive's prefix only: an object key is made per "
                "expired item (table, expiry date, key, TTL value), so keys cannot be listed",
                self.archive_prefix,
            )


def _own_consumer(
    archive: TtlArchive,
    table: SourceTable,
    name: str,
    environment: dict[str, str],
    props: dict[str, Any],
) -> StreamConsumer:
    """The archive's StreamConsumer: the runtime's handler, TTL deletions only."""
    return StreamConsumer(
        archive,
        "ArchiveConsumer",
        table=table,
        consumer_name=name,
        code=lambda_.Code.from_inline(f"# The TTL archive's handler is {TTL_ARCHIVE_HANDLER}.\n"),
        handler=TTL_ARCHIVE_HANDLER,
        filters=[StreamFilters.ttl_deletions_only()],
        reads_images=props.pop("reads_images", None) or [_OLD_IMAGE],
        environment={**environment, **(props.pop("environment", None) or {})},
        **props,
    )


def _archive_bucket(
    archive: TtlArchive,
    lifecycle_rules: Sequence[s3.LifecycleRule],
    encryption_key: kms.IKey | None,
    access_logs: s3.IBucket | None,
    removal_policy: RemovalPolicy,
) -> s3.Bucket:
    """The archive bucket (see the class docstring for why each setting)."""
    bucket = s3.Bucket(
        archive,
        "Bucket",
        encryption=s3.BucketEncryption.KMS if encryption_key else s3.BucketEncryption.S3_MANAGED,
        encryption_key=encryption_key,
        bucket_key_enabled=True if encryption_key is not None else None,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        versioned=True,
        server_access_logs_bucket=access_logs,
        lifecycle_rules=[
            s3.LifecycleRule(
                id="NoncurrentVersions",
                noncurrent_version_expiration=Duration.days(
                    defaults.TTL_ARCHIVE_NONCURRENT_VERSION_DAYS
                ),
                abort_incomplete_multipart_upload_after=Duration.days(1),
            ),
            *lifecycle_rules,
        ],
        removal_policy=removal_policy,
    )
    if access_logs is None:
        reason = (
            "Only the archive's function writes here (one object per expired item, never "
            "overwritten); people read it. Give server_access_logs_bucket where an access log "
            "per request is required."
        )
        resource = bucket.node.default_child
        acknowledge(resource, "AwsSolutions-S1", reason)  # type: ignore[arg-type]
        skip_check(resource, "CKV_AWS_18", reason)  # type: ignore[arg-type]
    return bucket


def _ttl_attribute_of(table: Any) -> str | None:
    """The TTL attribute of a table of this library, or of a table of this app with TTL."""
    attribute = getattr(table, "time_to_live_attribute", None)
    if isinstance(attribute, str):
        return attribute
    child = table.node.default_child if hasattr(table, "node") else None
    if not isinstance(child, dynamodb.CfnTable | dynamodb.CfnGlobalTable):
        return None
    specification = Stack.of(table).resolve(child._cfn_properties).get("timeToLiveSpecification")
    enabled = isinstance(specification, dict) and specification.get("enabled")
    return specification.get("attributeName") if enabled else None  # type: ignore[union-attr]


def _problems(
    table: Any,
    consumer: StreamConsumer | None,
    member: str | None,
    prefix: Any,
    ttl_attribute: str | None,
    props: dict[str, Any],
) -> list[Problem]:
    found = check_source_table(table)
    if not found and ttl_attribute is None:
        found.append(
            Problem(
                "time_to_live_attribute",
                None,
                "the table's TTL attribute (this table has no TTL that the app shows): "
                "give time_to_live_attribute",
            )
        )
    if not isinstance(prefix, str) or (prefix and not prefix.endswith("/")):
        found.append(Problem("archive_prefix", prefix, "'' or a string ending with '/'"))
    found += [
        Problem(name, props[name], "not given: the TtlArchive runs its own code and filter")
        for name in _NOT_FOR_A_CONSUMER_OF_ITS_OWN
        if name in props
    ]
    return found + _member_problems(table, consumer, member, props)


def _member_problems(
    table: Any, consumer: StreamConsumer | None, member: str | None, props: dict[str, Any]
) -> list[Problem]:
    """With ``consumer``: ``member`` is one of its members, on ``table``, and no prop of a
    consumer of its own is given."""
    if consumer is None:
        given = "not given without consumer (it names a member of a consumer group)"
        return [Problem("member", member, given)] if member is not None else []
    found = [
        Problem(name, value, "not given with consumer (the group's consumer has its own)")
        for name, value in props.items()
    ]
    members = consumer.group.names
    if member not in members:
        declare = "declare it with TtlArchive.group_member(name)"
        found.append(
            Problem("member", member, f"one of the consumer's members {members} ({declare})")
        )
    if not check_source_table(table) and as_table(table) is not consumer.source_table:
        found.append(Problem("table", table.node.path, f"the table {consumer.node.path} reads"))
    return found
