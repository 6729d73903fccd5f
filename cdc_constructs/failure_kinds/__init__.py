"""Failure kinds: one module per place failed records are kept, each holding its construct side
(what is provisioned and granted, how long a record is kept, its alarms), chosen by a lookup.

- :mod:`~cdc_constructs.failure_kinds.bucket`: an S3 bucket, the default on-failure
  destination (the batch itself);
- :mod:`~cdc_constructs.failure_kinds.queue`: an SQS queue (a pointer into the stream);
- :mod:`~cdc_constructs.failure_kinds.topic`: an SNS topic (a pointer, published);
- :mod:`~cdc_constructs.failure_kinds.quarantine`: the runtime's quarantine (the record
  itself).

The on-failure kinds follow :class:`~cdc_constructs.failure_kinds.kind.FailureKind` and are
found by the destination's aws-cdk-lib type (:func:`kind_of`). Adding one is a module here, one
of the same name in ``cdc_consumer.redrive.sources`` and in ``cdc_local.destinations``, and
their tests (docs/design.md, "Adding a failure destination"); :func:`register` adds a kind
defined elsewhere.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cdc_constructs.exceptions import Problem
from cdc_constructs.failure_kinds.bucket import (
    BUCKET,
    BUCKET_REDRIVE_ACTIONS,
    BUCKET_WRITE_ACTIONS,
    FailedBatchBucket,
    check_failed_batch_retention,
    failed_batch_retention_of,
)
from cdc_constructs.failure_kinds.kind import (
    FailureKind,
    OnFailureTarget,
    RedriveAccess,
    RedriveSource,
)
from cdc_constructs.failure_kinds.quarantine import Quarantine, queue_retention_of
from cdc_constructs.failure_kinds.queue import QUEUE
from cdc_constructs.failure_kinds.topic import TOPIC

__all__ = [
    "BUCKET_REDRIVE_ACTIONS",
    "BUCKET_WRITE_ACTIONS",
    "FAILURE_KINDS",
    "FailedBatchBucket",
    "FailureKind",
    "OnFailureTarget",
    "Quarantine",
    "RedriveAccess",
    "RedriveSource",
    "bucket_target",
    "check_failed_batch_retention",
    "default_target",
    "failed_batch_retention_of",
    "kind_of",
    "kind_of_arn",
    "kind_of_template",
    "queue_retention_of",
    "queue_target",
    "redrive_source_problems",
    "register",
    "supported",
    "unregister",
]

FAILURE_KINDS: list[FailureKind] = [QUEUE, TOPIC, BUCKET]
"""The on-failure kinds, looked up by their ``destination_type``."""

_IN_THE_RUNTIME_LAYER = (QUEUE, TOPIC, BUCKET)
"""The kinds whose redrive side the runtime layer holds."""


def kind_of(destination: Any) -> FailureKind | None:
    """The kind of one of aws-cdk-lib's destinations (None: not one of a known kind)."""
    for kind in FAILURE_KINDS:
        if isinstance(destination, kind.destination_type):
            return kind
    return None


def kind_of_template(resource_type: Any) -> FailureKind | None:
    """The kind whose resource is of CloudFormation type ``resource_type`` (None: none)."""
    return next((kind for kind in FAILURE_KINDS if kind.cfn_type == resource_type), None)


def kind_of_arn(arn: Any) -> FailureKind | None:
    """The kind of the destination ``arn`` names by its service (None: none, or not an ARN)."""
    parts = arn.split(":") if isinstance(arn, str) else []
    service = parts[2] if len(parts) > 2 else None
    return next((kind for kind in FAILURE_KINDS if kind.name == service), None)


def supported() -> str:
    """The destinations ``on_failure`` takes, for an error message."""
    names = [kind.destination_type.__name__ for kind in FAILURE_KINDS]
    return "aws-cdk-lib's " + ", ".join(names[:-1]) + " or " + names[-1]


def register(kind: FailureKind) -> None:
    """Add ``kind`` to the lookup (a kind defined outside this package)."""
    if kind not in FAILURE_KINDS:
        FAILURE_KINDS.append(kind)


def redrive_source_problems(target: OnFailureTarget) -> list[Problem]:
    """A kind from outside this library that the redrive reads (its ``redrive_environment``
    names the destination) and that does not say where the deployed redrive finds its redrive
    side (``redrive_source``): the function would run without it and fail on every run."""
    kind = target.failure_kind
    if kind in _IN_THE_RUNTIME_LAYER or getattr(kind, "redrive_source", None) is not None:
        return []
    if not kind.redrive_environment(target):
        return []  # the redrive does not read it
    return [
        Problem(
            "on_failure",
            f"a destination of the kind {kind.name!r} ({type(kind).__name__}), defined outside "
            "this library, without redrive_source",
            "a kind whose redrive side the deployed redrive function can find: give the kind "
            "redrive_source=RedriveSource(module=..., layer=...) (the module registering its "
            "cdc_consumer.redrive.sources kind, in a layer the function gets), or "
            "redrive=False and redrive it with cdc-redrive --source-module MODULE --location "
            "WHERE (docs/design.md, 'Adding a failure destination')",
        )
    ]


def unregister(kind: FailureKind) -> None:
    """Remove a kind :func:`register` added."""
    if kind in FAILURE_KINDS:
        FAILURE_KINDS.remove(kind)


def default_target(
    consumer: Construct,
    *,
    retention: Duration | None,
    encryption_key: kms.IKey | None,
    removal_policy: RemovalPolicy,
) -> OnFailureTarget:
    """The destination made when none is given: a bucket that keeps each failed batch whole."""
    return BUCKET.provision(
        consumer, retention=retention, encryption_key=encryption_key, removal_policy=removal_policy
    )


def queue_target(queue: sqs.IQueue) -> OnFailureTarget:
    """``queue`` as the destination (the older ``on_failure_queue`` prop)."""
    return QUEUE.target(queue)


def bucket_target(bucket: s3.IBucket) -> OnFailureTarget:
    """``bucket`` as the destination (``StreamRedrive(on_failure_bucket=...)``)."""
    return BUCKET.target(bucket)
