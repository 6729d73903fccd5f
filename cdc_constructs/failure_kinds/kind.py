"""What every failure kind provides (:class:`FailureKind`), the destination it describes
(:class:`OnFailureTarget`) and what a redrive is granted on it (:class:`RedriveAccess`).

A failure kind is one place failed records are kept: an on-failure destination of the mapping
(an S3 bucket, an SQS queue, an SNS topic) or the runtime's quarantine. Its module holds the
construct side whole - what it provisions, what the consumer and the redrive are granted on it,
how long it keeps a record (its replay window, which the marker lifetime must outlive) and its
alarms - and is chosen by a lookup (:mod:`cdc_constructs.failure_kinds`), never by an ``if`` on
the kind. The runtime's redrive (``cdc_consumer.redrive.sources``) and the local pipeline
(``cdc_local.destinations``) have a module of the same name for their side (docs/design.md,
"Adding a failure destination").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cdc_constructs.exceptions import Problem
from cdc_constructs.permissions import (
    QUEUE_DRAIN_ACTIONS,
    QUEUE_DRAIN_KEY_ACTIONS,
    allow,
    grant_key,
)

__all__ = ["FailureKind", "OnFailureTarget", "RedriveAccess", "RedriveSource", "key_arns_of"]


@dataclass(frozen=True)
class RedriveSource:
    """Where the deployed redrive function finds the redrive side of a failure kind defined
    outside this library: ``module``, importable from ``layer`` (its ``python/`` directory, as
    any Lambda layer), registers the kind's ``cdc_consumer.redrive.sources`` side when imported.
    StreamRedrive adds the layer and names the module in ``CDC_REDRIVE_SOURCE_MODULES``; the
    command line takes the module as ``cdc-redrive --source-module`` (docs/design.md, "Adding a
    failure destination")."""

    module: str
    layer: lambda_.ILayerVersion


class FailureKind(Protocol):
    """One kind of on-failure destination: its module's construct side.

    ``name`` is the service in the destination's ARN (``s3``, ``sqs``, ``sns``: what
    :attr:`OnFailureTarget.kind` says); ``destination_type`` the aws-cdk-lib destination class
    ``StreamConsumer(on_failure=...)`` takes for it; ``keeps_records`` whether it holds the
    batch itself (else a pointer into the stream); ``cfn_type`` its CloudFormation resource
    type (CdcChecks reads any app's template by it); ``age_checked_by_redrive`` whether the
    redrive function's scheduled check measures the age of its oldest batch (AWS publishes none:
    an S3 bucket), so the redrive construct schedules that check; ``redrive_source`` where the
    deployed redrive finds the kind's redrive side (None: in the runtime layer, this library's
    kinds; a kind from outside that the redrive reads, its ``redrive_environment`` naming it, and
    gives none is refused).
    """

    name: str
    destination_type: type
    keeps_records: bool
    cfn_type: str
    age_checked_by_redrive: bool
    redrive_source: RedriveSource | None

    def reference(self, scope: Construct, arn: str, key_arns: tuple[str, ...]) -> OnFailureTarget:
        """The target of a destination given as ``arn`` (under the keys ``key_arns``)."""
        ...

    def grant_put(self, target: OnFailureTarget, grantee: iam.IGrantable) -> None:
        """What the mapping (on the function's role) needs to deliver, and nothing more."""
        ...

    def grant_redrive(self, target: OnFailureTarget, access: RedriveAccess) -> None:
        """What the redrive needs to plan, read and delete, and nothing more (nothing: the
        redrive cannot read this kind)."""
        ...

    def redrive_environment(self, target: OnFailureTarget) -> dict[str, str]:
        """The redrive function's variables that name the destination (none: not read)."""
        ...

    def retention(
        self, consumer: Construct, target: OnFailureTarget
    ) -> tuple[int | None, list[Problem]]:
        """How long it keeps a failed batch's records, seconds (0: a pointer only, the stream
        bounds the replay): a window the marker lifetime must outlive. None, with the problem,
        when it cannot be known."""
        ...

    def template_retention(self, properties: Mapping[str, Any]) -> int | None:
        """:meth:`retention` read from its resource's ``Properties`` in a template (CdcChecks);
        None: kept forever, or not known at synthesis."""
        ...

    def arn_retention(self, arn: str) -> int | None:
        """:meth:`retention` of a destination a template names only by ``arn`` (not in it:
        CdcChecks' CDC-ESM9); None: not known from the ARN alone."""
        ...

    def alarm_metrics(
        self, target: OnFailureTarget, period: Duration, consumer_name: str
    ) -> dict[str, tuple[cloudwatch.IMetric, str]]:
        """Its own alarms' metrics by name, each with what the alarm says (the consumer's
        alarms on every destination, ``DroppedRecords`` and ``DestinationDeliveryFailures``,
        are the monitoring's)."""
        ...

    def age_metric(
        self, target: OnFailureTarget, consumer_name: str, namespace: str
    ) -> tuple[str, cloudwatch.IMetric, str] | None:
        """Its age alarm (:mod:`cdc_constructs.failure_age`): the alarm's name, the age in
        seconds of the oldest failed batch it keeps, and what ends one (say "the bucket's
        lifecycle deletes it"). None: nothing waits in it (a topic keeps nothing)."""
        ...


@dataclass(frozen=True)
class OnFailureTarget:
    """What the consumer, its redrive and its alarms need to know of the destination: its kind
    (the module that knows it), ARN, keys, and the bucket or queue when it is one."""

    failure_kind: FailureKind
    arn: str
    key_arns: tuple[str, ...] = ()
    bucket: s3.IBucket | None = None
    queue: sqs.IQueue | None = None
    made_retention: Duration | None = None
    """How long it keeps a batch, when the consumer made it (its own lifecycle)."""

    @property
    def kind(self) -> str:
        """The kind's name: ``s3``, ``sqs`` or ``sns``."""
        return self.failure_kind.name

    @property
    def keeps_records(self) -> bool:
        """Whether the destination holds the batch itself (S3), not only a pointer."""
        return self.failure_kind.keeps_records

    def grant_put(self, grantee: iam.IGrantable) -> None:
        """What the mapping needs to deliver (the kind's :meth:`FailureKind.grant_put`)."""
        self.failure_kind.grant_put(self, grantee)

    def grant_redrive(self, access: RedriveAccess) -> None:
        """What the redrive needs of it (the kind's :meth:`FailureKind.grant_redrive`)."""
        self.failure_kind.grant_redrive(self, access)


def key_arns_of(key: kms.IKey | None) -> tuple[str, ...]:
    """The ARN of ``key`` as a target's ``key_arns`` (none without a customer key)."""
    return (key.key_arn,) if key is not None else ()


@dataclass
class RedriveAccess:
    """The redrive's grants, gathered from each failure kind it reads and applied in one
    order: invoking the consumer, draining its queues (one statement), reading its stream (one
    statement, the widest actions asked), then each kind's own statements in the order asked.

    ``stream_arn``: the consumer's stream, for :meth:`read_stream`.
    """

    stream_arn: str
    _queues: list[sqs.IQueue] = field(default_factory=list)
    _stream_actions: set[str] = field(default_factory=set)
    _then: list[Callable[[iam.IGrantable], None]] = field(default_factory=list)

    def drain(self, queue: sqs.IQueue) -> None:
        """Receive, change visibility and delete on ``queue``, decrypt under its key."""
        self._queues.append(queue)
        key = queue.encryption_master_key
        self._then.append(lambda grantee: grant_key(grantee, key, QUEUE_DRAIN_KEY_ACTIONS))

    def read_stream(self, actions: tuple[str, ...]) -> None:
        """``actions`` on the consumer's stream (records read back, or its shard lineage)."""
        self._stream_actions.update(actions)

    def add(self, grant: Callable[[iam.IGrantable], None]) -> None:
        """Call ``grant(grantee)`` after the shared statements, in the order asked."""
        self._then.append(grant)

    def apply(self, grantee: iam.IGrantable, invoke: iam.PolicyStatement) -> None:
        """Grant ``invoke`` and everything gathered to ``grantee``: the kinds' own statements and
        the drained queues' keys in the order asked."""
        statements = [invoke]
        if self._queues:
            statements.append(allow(QUEUE_DRAIN_ACTIONS, [q.queue_arn for q in self._queues]))
        if self._stream_actions:
            statements.append(allow(sorted(self._stream_actions), [self.stream_arn]))
        for statement in statements:
            grantee.grant_principal.add_to_principal_policy(statement)
        for grant in self._then:
            grant(grantee)
