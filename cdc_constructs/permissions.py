"""The IAM actions each role of the constructs needs, and nothing else (interfaces §8).

Grants are written out as statements on named resources instead of aws-cdk-lib's ``grant_*``
helpers, which add actions these roles never use (e.g. ``SqsDlq`` grants GetQueueAttributes
and GetQueueUrl, ``grant_invoke`` every version of a function, and customer-key grants use
wildcard KMS actions).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from cdc_constructs.acknowledge import acknowledge

STREAM_READ_ACTIONS = (
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
)
"""Reading a stream (Lambda's event source mapping and Pipes poll with these). Granted on the
stream's ARN."""

STREAM_LIST_ACTIONS = ("dynamodb:ListStreams",)
"""Listing a table's streams: AWS's Lambda and EventBridge Pipes guides list it among the
permissions of a DynamoDB stream source. It has no resource-level permission (the Service
Authorization Reference lists no resource for it; scoped to a stream ARN it allows nothing), so
it is granted on ``*``, with :data:`LIST_STREAMS_REASON` acknowledging AwsSolutions-IAM5."""

LIST_STREAMS_REASON = (
    "dynamodb:ListStreams only: AWS's Lambda and EventBridge Pipes guides list it for a "
    "DynamoDB stream source, and it has no resource-level permission, so its resource is *."
)
"""The acknowledgement of AwsSolutions-IAM5 on the ``*`` of :data:`STREAM_LIST_ACTIONS`."""

STREAM_REPLAY_ACTIONS = (
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
)
"""Reading a known range of one shard back (the redrive; it never lists streams)."""

STREAM_LINEAGE_ACTIONS = ("dynamodb:DescribeStream",)
"""Reading a stream's shard lineage (``ParentShardId``): the redrive of an S3 destination replays
a child shard's batches only after its parent's."""

STREAM_KEY_ACTIONS = ("kms:Decrypt",)
"""Reading a stream of a table under a customer key."""

IDEMPOTENCY_TABLE_ACTIONS = (
    "dynamodb:BatchGetItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DeleteItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
)
"""The runtime's markers (in transactions) and side-effect claims; ``BatchGetItem``: a
Contributions projection reads its batch's stored contributions (items of this table) in one
request per batch (without it every batch falls back to one GetItem per record, silently)."""

LEDGER_TABLE_ACTIONS = (
    "dynamodb:BatchGetItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
)
"""The runtime's ledger (one entry per transaction): ``BatchGetItem`` reads a batch's lane
heads (with the old markers of an upgrade, one request), ``Query`` finds the batch's entries in
one request, ``GetItem`` reads a head again after a conflict and when the ledger took over,
``PutItem`` and ``UpdateItem`` write the entry and the head (in TransactWriteItems) and the
start."""

REDRIVE_LEASE_ACTIONS = ("dynamodb:DeleteItem", "dynamodb:PutItem")
"""The redrive's lease of its consumer (``cdc_consumer.redrive.lease``), in the idempotency
table: taken and renewed with a conditional ``PutItem``, given back with a conditional
``DeleteItem``; on the lease's own item only (:func:`allow_lease`)."""

VIEW_TABLE_WRITE_ACTIONS = (
    "dynamodb:ConditionCheckItem",
    "dynamodb:DeleteItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
)
"""A projection's writes, in TransactWriteItems."""

VIEW_TABLE_READ_ACTIONS = ("dynamodb:GetItem",)
"""Only for a projection that reads its view."""

TABLE_KEY_ACTIONS = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey")
"""Reading and writing a table under a customer key."""

QUEUE_SEND_ACTIONS = ("sqs:SendMessage",)
"""Sending to an on-failure, quarantine or dead-letter queue."""

QUEUE_SEND_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")
"""Sending to a queue under a customer key."""

QUEUE_DRAIN_ACTIONS = (
    "sqs:ChangeMessageVisibility",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    "sqs:ReceiveMessage",
)
"""Reading a queue and deleting what was handled (the redrive). ``GetQueueAttributes``:
``Redrive.check()`` reads the queue's ARN before it touches a message, so a wrong queue URL or
missing access stops the run at once."""

QUEUE_DRAIN_KEY_ACTIONS = ("kms:Decrypt",)
"""Receiving from a queue under a customer key."""

INVOKE_ACTIONS = ("lambda:InvokeFunction",)
"""Invoking the consumer (the redrive), on the function's unqualified ARN only."""

BACKFILL_SCAN_ACTIONS = ("dynamodb:DescribeTable", "dynamodb:Scan")
"""The segment function on the source table: its stream and size (DescribeTable), its items."""

BACKFILL_PROGRESS_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")
"""The segment function on the idempotency table: its segments' progress records and the
consumer's recorded progress."""

BACKFILL_MAPPING_ACTIONS = ("lambda:ListEventSourceMappings",)
"""The start step checks the consumer has an enabled mapping on the stream. Lambda has no
resource-level permission for listing mappings: the resource is ``*``."""

ARCHIVE_OBJECT_ACTIONS = ("s3:PutObject",)
"""The TTL archive's one S3 call, on its prefix's objects: a conditional PutObject
(``If-None-Match: *``) needs no other action."""

ARCHIVE_KEY_ACTIONS = ("kms:GenerateDataKey",)
"""What a PutObject into a bucket encrypted with a customer managed key needs of the key."""

LOG_WRITE_ACTIONS = ("logs:CreateLogStream", "logs:PutLogEvents")
"""Writing to one log group (a pipe; functions get ``LogGroup.grant_write``)."""


def allow(
    actions: Sequence[str], resources: Sequence[str], sid: str | None = None
) -> iam.PolicyStatement:
    """One Allow statement of ``actions`` on ``resources``."""
    return iam.PolicyStatement(sid=sid, actions=list(actions), resources=list(resources))


def allow_lease(table_arn: str, lease_key: str) -> iam.PolicyStatement:
    """:data:`REDRIVE_LEASE_ACTIONS` on ``table_arn``, on the item ``lease_key`` only
    (``dynamodb:LeadingKeys``): the redrive cannot touch the consumer's markers and claims in
    the same table."""
    return iam.PolicyStatement(
        actions=list(REDRIVE_LEASE_ACTIONS),
        resources=[table_arn],
        conditions={"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [lease_key]}},
    )


def grant_key(grantee: iam.IGrantable, key: kms.IKey | None, actions: Sequence[str]) -> None:
    """Let ``grantee`` use ``key`` for ``actions``; nothing when there is no customer key."""
    if key is not None:
        key.grant(grantee, *actions)


def grant_send(grantee: iam.IGrantable, queue: sqs.IQueue) -> None:
    """``sqs:SendMessage`` on ``queue`` (and its key's data-key actions), nothing more."""
    grantee.grant_principal.add_to_principal_policy(allow(QUEUE_SEND_ACTIONS, [queue.queue_arn]))
    grant_key(grantee, queue.encryption_master_key, QUEUE_SEND_KEY_ACTIONS)


def grant_stream_read(function: lambda_.IFunction, stream_arn: str, key: kms.IKey | None) -> None:
    """Let ``function`` (its mapping) read the DynamoDB stream ``stream_arn``: the read actions
    on it, ``dynamodb:ListStreams`` on ``*`` (see :data:`STREAM_LIST_ACTIONS`, acknowledged on
    the function's role) and ``key``'s decrypt, if the table has a customer key."""
    function.add_to_role_policy(allow(STREAM_READ_ACTIONS, [stream_arn]))
    function.add_to_role_policy(allow(STREAM_LIST_ACTIONS, ["*"]))
    if function.role is not None:
        acknowledge(function.role, "AwsSolutions-IAM5[Resource::*]", LIST_STREAMS_REASON)
    grant_key(function, key, STREAM_KEY_ACTIONS)
