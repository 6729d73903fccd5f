"""StreamRedrive: the function that replays what a stream consumer failed on.

StreamConsumer composes it (on by default; ``redrive=False`` turns it off). The function runs
``cdc_consumer.redrive_handler`` from the consumer runtime layer: invoked by hand once the
consumer's fault is fixed, it replays the on-failure destination's batches (an S3 bucket's
objects hold them whole; an SQS queue's messages point at records read back from the stream)
and the quarantine queue's records through the consumer function (synchronous invoke), deletes
each message or object only after it succeeded, and reports records the stream no longer holds
as lost. An alarm fires on ``CdcConstructs/RedriveLostRecords {Consumer=name}
>= 1``.

It is not triggered by the queues: an automatic redrive of a consumer that still fails would
loop; a person decides when the fault is fixed (docs/operations.md, "Redrive").
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from aws_cdk import Duration, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from cdc_consumer.environment_variables import (
    CONSUMER_FILTERS_ENV,
    CONSUMER_FUNCTION_NAME_ENV,
    CONSUMER_GROUP_ENV,
    CONSUMER_NAME_ENV,
    IDEMPOTENCY_TABLE_ENV,
    MAPPING_UUID_ENV,
    MARKER_TTL_ENV,
    METRICS_NAMESPACE_ENV,
    REDRIVE_RESERVE_SECONDS_ENV,
    REDRIVE_SOURCE_MODULES_ENV,
    STREAM_ARN_ENV,
)
from cdc_consumer.group_member_spec import GroupMemberSpec
from cdc_consumer.metric_names import DEFAULT_METRICS_NAMESPACE, REDRIVE_LOST_RECORDS
from cdc_consumer.redrive_shapes import FAILURE_AGE_CHECK, redrive_lease_key
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.acknowledge import acknowledge
from cdc_constructs.alarms import alarm_on_any, consumer_metric, function_errors_alarm
from cdc_constructs.exceptions import Problem, RedriveConfigurationError
from cdc_constructs.failure_kinds import (
    OnFailureTarget,
    Quarantine,
    RedriveAccess,
    RedriveSource,
    bucket_target,
    queue_target,
    redrive_source_problems,
)
from cdc_constructs.function import FunctionParts, make_function
from cdc_constructs.permissions import (
    INVOKE_ACTIONS,
    TABLE_KEY_ACTIONS,
    allow,
    allow_lease,
    grant_key,
)
from cdc_constructs.validation import check_function_timeout, raise_if_any

__all__ = [
    "REDRIVE_HANDLER",
    "RedriveRoute",
    "StreamArnRoute",
    "StreamRedrive",
    "consumer_timeout_of",
    "reserve_seconds",
]

REDRIVE_HANDLER = "cdc_consumer.redrive_handler.handler"
"""The redrive handler, a module of the runtime layer (on ``sys.path`` as /opt/python)."""


class RedriveRoute(Protocol):
    """What a redrive reads its records back from: the consumer's route
    (:mod:`cdc_constructs.routes`), as far as the redrive is concerned.

    ``stream_arn``: the stream the consumer's records come from (``CDC_STREAM_ARN``: failure
    records of another stream are kept; the redrive lease is keyed by it).

    A route defined outside this library may also have ``redrive_source``
    (:class:`~cdc_constructs.failure_kinds.kind.RedriveSource`): its module, imported by the
    redrive function, registers its ``cdc_consumer.routes.replay`` side. StreamRedrive adds its
    layer and names its module in ``CDC_REDRIVE_SOURCE_MODULES`` beside the failure kinds'
    (docs/design.md, "Adding a source").
    """

    @property
    def stream_arn(self) -> str: ...

    def redrive_access(self) -> RedriveAccess:
        """Where the failure kinds gather the redrive's grants: a kind asks to read the stream
        (a range back, its shard lineage) and the route says which actions that is."""
        ...

    def grant_redrive(self, grantee: iam.IGrantable) -> None:
        """What else the redrive needs to read the source back (a customer key's decrypt),
        granted after everything else; nothing when the access covers it."""
        ...


@dataclass(frozen=True)
class StreamArnRoute:
    """The route of a DynamoDB stream known by its ARN only (``StreamRedrive(stream_arn=...)``):
    the actions the failure kinds ask, on that stream, and nothing more."""

    stream_arn: str

    def redrive_access(self) -> RedriveAccess:
        return RedriveAccess(self.stream_arn)

    def grant_redrive(self, grantee: iam.IGrantable) -> None:
        """Nothing beyond what the kinds ask (the stream's key is the table's)."""


class StreamRedrive(Construct):
    """A redrive function for one stream consumer, its log group and its lost-records alarm.

    :param consumer_function: the consumer to replay through (invoked synchronously).
    :param consumer_name: the consumer's name (``CDC_CONSUMER_NAME``): the metric dimension;
        quarantine messages of other consumers are refused.
    :param stream_arn: the consumer's DynamoDB stream; messages of other streams are refused.
        Required unless ``route`` is given.
    :param route: the source the consumer reads (a :class:`RedriveRoute`: its stream, what the
        redrive is granted to read it back). Default: the DynamoDB stream ``stream_arn``. A
        consumer passes its own route (:mod:`cdc_constructs.routes`), so a route defined outside
        the library gets its redrive unchanged.
    :param on_failure: the event source mapping's on-failure destination as its failure kind
        knows it (``StreamConsumer.on_failure``): the kind grants what the redrive needs and
        names it in the environment (:mod:`cdc_constructs.failure_kinds`). Default none; or:
    :param on_failure_queue: the event source mapping's on-failure destination, when it is an
        SQS queue (drained: receive, change visibility, delete).
    :param on_failure_bucket: the event source mapping's on-failure destination, when it is an
        S3 bucket (listed, read, and each object deleted once replayed; never written).
    :param event_source_mapping_id: the consumer's mapping UUID: the redrive lists only
        ``aws/lambda/<UUID>/`` and keeps objects of other mappings.
    :param layer: the consumer runtime layer (``python/cdc_consumer/``), which holds the
        handler.
    :param quarantine_queue: the runtime's quarantine queue. Default none (only the
        on-failure destination is drained).
    :param quarantine_bucket: where the runtime keeps quarantined records too big for a
        message (``cdc-quarantine/``): read back and deleted once replayed. Default none (the
        on-failure bucket, when it is the same, is granted already).
    :param consumer_timeout: the consumer function's timeout. Default: read from
        ``consumer_function`` when it is a ``lambda_.Function``; required otherwise. The
        redrive starts no new message later than this plus 30 s before its own deadline.
    :param filters: the event source mapping's filter patterns. Default none. An on-failure
        range covers every record between its sequence numbers; the redrive replays only
        those the mapping would have delivered.
    :param members: the consumer group behind ``consumer_function``
        (``StreamConsumer(members=...)``), as ``CDC_CONSUMER_GROUP``: quarantine messages of
        any member are replayed through the group. Default none.
    :param idempotency_table: the consumer's idempotency table (``IDEMPOTENCY_TABLE_NAME``):
        each run takes the consumer's redrive lease there (one item,
        ``{consumer_name}#redrive-lease#{stream ARN}``; PutItem and DeleteItem on that key
        only), so the function and a command-line redrive never overlap (a redrive reading the
        quarantine hides its messages from any other). Default none: no lease, and the
        reserved concurrency of 1 only keeps the function's own runs apart (StreamConsumer
        passes its table).
    :param marker_lifetime: the consumer's marker lifetime (``CDC_MARKER_TTL_SECONDS``; a
        StreamConsumer passes its own). The redrive refuses, and keeps, an object or message
        whose failure is older than this: its markers may have expired, and a replay would
        apply its records again. Default none: no age check (give it whenever the consumer
        keeps markers).
    :param timeout: Default 15 minutes (Lambda's maximum): it replays message after message.
    :param log_retention: Default one month, as the consumer's logs.
    :param log_encryption_key: a customer-managed KMS key for its log group. Default: none
        (StreamConsumer passes its own ``log_encryption_key``).
    :param metrics_namespace: Default ``CdcConstructs``.
    :param alarm_topic: notify this topic when records were lost. Default none (StreamConsumer
        wires its monitoring topic).

    When the on-failure destination is one whose failures' age AWS does not publish (an S3
    bucket), an EventBridge schedule invokes the function every hour with ``{"check":
    "failure-age"}``: it lists the mapping's prefix and puts the oldest object's age as
    ``OldestFailedBatchAge`` (the consumer's ``FailedBatchAge`` alarm), replaying nothing
    (:attr:`age_check`; ``defaults.FAILURE_AGE_CHECK_MINUTES``).

    Runtime (Python 3.14) and architecture (arm64) are the consumer's (defaults.py); the
    runtime layer is built for them. Memory 256 MB; reserved concurrency 1 (two redrives would
    replay one shard's batches side by side).

    Escape hatches: :attr:`function`, :attr:`role`, :attr:`log_group`,
    :attr:`lost_records_metric`, :attr:`lost_records_alarm`, :attr:`errors_alarm` (the
    function's Errors >= 1), :attr:`alarms` (both, by name).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        consumer_function: lambda_.IFunction,
        consumer_name: str,
        stream_arn: str | None = None,
        route: RedriveRoute | None = None,
        on_failure: OnFailureTarget | None = None,
        on_failure_queue: sqs.IQueue | None = None,
        on_failure_bucket: s3.IBucket | None = None,
        event_source_mapping_id: str | None = None,
        layer: lambda_.ILayerVersion,
        quarantine_queue: sqs.IQueue | None = None,
        quarantine_bucket: s3.IBucket | None = None,
        consumer_timeout: Duration | None = None,
        filters: Sequence[Mapping[str, Any]] = (),
        members: Sequence[GroupMemberSpec] = (),
        marker_lifetime: Duration | None = None,
        idempotency_table: dynamodb.ITable | None = None,
        timeout: Duration | None = None,
        log_retention: logs.RetentionDays = defaults.LOG_RETENTION,
        log_encryption_key: kms.IKey | None = None,
        metrics_namespace: str = DEFAULT_METRICS_NAMESPACE,
        alarm_topic: sns.ITopic | None = None,
    ) -> None:
        timeout = timeout or Duration.seconds(defaults.REDRIVE_TIMEOUT_SECONDS)
        consumer_timeout = consumer_timeout or consumer_timeout_of(consumer_function)
        targets = _targets(on_failure, on_failure_queue, on_failure_bucket)
        problems = _check(consumer_name, consumer_timeout, timeout, metrics_namespace)
        problems += [p for target in targets for p in redrive_source_problems(target)]
        problems += _route_problems(stream_arn, route)
        raise_if_any(f"StreamRedrive {construct_id!r}", problems, RedriveConfigurationError)
        assert consumer_timeout is not None  # _check reports a missing one
        route = route or StreamArnRoute(stream_arn)  # type: ignore[arg-type]
        super().__init__(scope, construct_id)
        quarantine = _quarantine(targets, quarantine_queue, quarantine_bucket)
        sources = _sources(targets, route)
        optional = _optional_environment(
            targets, sources, event_source_mapping_id, quarantine, members, filters, marker_lifetime
        )
        variables = {
            CONSUMER_FUNCTION_NAME_ENV: consumer_function.function_name,
            CONSUMER_NAME_ENV: consumer_name,
            STREAM_ARN_ENV: route.stream_arn,
            METRICS_NAMESPACE_ENV: metrics_namespace,
            REDRIVE_RESERVE_SECONDS_ENV: str(reserve_seconds(consumer_timeout)),
            **{name: value for name, value in optional.items() if value is not None},
        }
        layers = [layer, *(s.layer for s in sources)]
        self.role, self.log_group, self.function = _make_function(
            self, consumer_name, variables, layers, timeout, log_retention, log_encryption_key
        )
        self._grant(targets, quarantine, route.redrive_access(), consumer_function)
        _use_lease(self.function, idempotency_table, consumer_name, route.stream_arn)
        self._alarm_lost_records(consumer_name, metrics_namespace, alarm_topic)
        self.age_check = _schedule_age_check(self, targets)  # None: no destination needs it
        route.grant_redrive(self.function)

    def _grant(
        self,
        targets: Sequence[OnFailureTarget],
        quarantine: Quarantine,
        access: RedriveAccess,
        consumer_function: lambda_.IFunction,
    ) -> None:
        """What each failure kind it reads asks (gathered in the route's ``access``), and
        invoking the consumer."""
        for target in targets:
            target.grant_redrive(access)
        quarantine.grant_redrive(access)
        access.apply(self.function, allow(INVOKE_ACTIONS, [consumer_function.function_arn]))

    def _alarm_lost_records(
        self, consumer_name: str, metrics_namespace: str, alarm_topic: sns.ITopic | None
    ) -> None:
        self.lost_records_metric = consumer_metric(
            metrics_namespace, consumer_name, REDRIVE_LOST_RECORDS.name, cloudwatch.Stats.SUM
        )
        """RedriveLostRecords of this consumer (Sum)."""
        self.lost_records_alarm = alarm_on_any(
            self,
            "LostRecordsAlarm",
            self.lost_records_metric,
            description=f"Redrive of {consumer_name} found records the stream no longer holds:"
            " they were not replayed and their messages are kept. See docs/operations.md,"
            " 'Redrive'.",
            topic=alarm_topic,
        )
        """Fires when a redrive reported lost records."""
        self.errors_alarm = function_errors_alarm(
            self,
            "ErrorsAlarm",
            self.function,
            description=f"The redrive of {consumer_name} crashed or timed out: what it had not "
            "replayed is still in the on-failure destination and the quarantine queue; run it "
            "again once the cause (its log) is fixed. See docs/operations.md, 'Redrive'.",
            topic=alarm_topic,
        )
        """Fires when the redrive function itself failed (Errors >= 1)."""
        self.alarms = {
            REDRIVE_LOST_RECORDS.name: self.lost_records_alarm,
            "RedriveErrors": self.errors_alarm,
        }
        """Its alarms by name: ``RedriveLostRecords``, ``RedriveErrors``."""


def _optional_environment(
    targets: Sequence[OnFailureTarget],
    sources: Sequence[RedriveSource],
    mapping_id: str | None,
    quarantine: Quarantine,
    members: Sequence[GroupMemberSpec],
    filters: Sequence[Mapping[str, Any]],
    marker_lifetime: Duration | None,
) -> dict[str, str | None]:
    """The variables set only when the consumer has them (None: not set): what names the
    destinations, the mapping, the quarantine, the group, the filters, the marker lifetime, and
    the modules of kinds and routes from outside this library (``sources``)."""
    return {
        **{k: v for target in targets for k, v in _environment(target).items()},
        MAPPING_UUID_ENV: mapping_id,
        **quarantine.redrive_environment(),
        CONSUMER_GROUP_ENV: GroupMemberSpec.encode(members) if members else None,
        CONSUMER_FILTERS_ENV: json.dumps([dict(f) for f in filters]) if filters else None,
        MARKER_TTL_ENV: _whole_seconds(marker_lifetime),
        REDRIVE_SOURCE_MODULES_ENV: ",".join(s.module for s in sources) or None,
    }


def _route_problems(stream_arn: str | None, route: RedriveRoute | None) -> list[Problem]:
    """Exactly one of ``stream_arn`` and ``route``."""
    if (stream_arn is None) == (route is None):
        given = "both" if route is not None else "neither"
        return [Problem("stream_arn/route", given, "exactly one: the stream's ARN, or a route")]
    return []


def _sources(targets: Sequence[OnFailureTarget], route: RedriveRoute) -> list[RedriveSource]:
    """The redrive sides of kinds and of a route defined outside this library (their
    ``redrive_source``), each module once."""
    found = [getattr(t.failure_kind, "redrive_source", None) for t in targets]
    found.append(getattr(route, "redrive_source", None))
    unique = {source.module: source for source in found if source is not None}
    return list(unique.values())


def _make_function(
    redrive: StreamRedrive,
    consumer_name: str,
    variables: Mapping[str, str],
    layers: Sequence[lambda_.ILayerVersion],
    timeout: Duration,
    log_retention: logs.RetentionDays,
    log_encryption_key: kms.IKey | None,
) -> FunctionParts:
    """The redrive function: the runtime layer's handler (and the layers of kinds from outside
    this library), reserved concurrency 1."""
    return make_function(
        redrive,
        description=f"cdc-constructs redrive of stream consumer {consumer_name}",
        # The handler lives in the runtime layer; the function's own code is only a pointer.
        code=lambda_.Code.from_inline(
            f"# The redrive handler is {REDRIVE_HANDLER}, in the runtime layer.\n"
        ),
        handler=REDRIVE_HANDLER,
        layers=list(layers),
        environment=dict(variables),
        memory_size=defaults.REDRIVE_MEMORY_SIZE_MB,
        timeout=timeout,
        log_retention=log_retention,
        log_encryption_key=log_encryption_key,
        invoked_by="Invoked by hand (console or aws lambda invoke) once a fault is fixed",
        reserved_concurrent_executions=defaults.REDRIVE_RESERVED_CONCURRENCY,
    )


def _schedule_age_check(
    redrive: StreamRedrive, targets: Sequence[OnFailureTarget]
) -> events.Rule | None:
    """An EventBridge schedule invoking the function with ``{"check": "failure-age"}`` when a
    destination's age is measured by it (an S3 bucket: AWS publishes none), so the consumer's
    ``FailedBatchAge`` alarm has a value every hour (cdc_consumer.redrive.age_check)."""
    if not any(getattr(t.failure_kind, "age_checked_by_redrive", False) for t in targets):
        return None
    schedule = events.Rule(
        redrive,
        "FailureAgeCheck",
        description="cdc-constructs: measure the age of the oldest failed batch, hourly",
        schedule=events.Schedule.rate(Duration.minutes(defaults.FAILURE_AGE_CHECK_MINUTES)),
        targets=[
            events_targets.LambdaFunction(
                redrive.function,
                event=events.RuleTargetInput.from_object({"check": FAILURE_AGE_CHECK}),
                retry_attempts=defaults.FAILURE_AGE_CHECK_RETRY_ATTEMPTS,
            )
        ],
    )
    acknowledge(
        schedule.node.default_child,  # type: ignore[arg-type]
        "Serverless-EventBusDLQ",
        "A timer, not data: an hourly check EventBridge could not invoke carries nothing to "
        "keep, and the next hour's check measures again; the check's own failures raise the "
        "redrive's RedriveErrors alarm.",
    )
    return schedule


def _targets(
    on_failure: OnFailureTarget | None,
    queue: sqs.IQueue | None,
    bucket: s3.IBucket | None,
) -> list[OnFailureTarget]:
    """The destination as its kind knows it: ``on_failure``, else the queue or bucket given."""
    if on_failure is not None:
        return [on_failure]
    return [
        *([queue_target(queue)] if queue is not None else []),
        *([bucket_target(bucket)] if bucket is not None else []),
    ]


def _quarantine(
    targets: Sequence[OnFailureTarget],
    queue: sqs.IQueue | None,
    bucket: s3.IBucket | None,
) -> Quarantine:
    """The quarantine to drain; its bucket needs no grant of its own when it is the on-failure
    destination's (granted already)."""
    shared = bucket is None or any(target.bucket is bucket for target in targets)
    return Quarantine(queue, bucket, shared=shared)


def _environment(target: OnFailureTarget) -> dict[str, str]:
    return target.failure_kind.redrive_environment(target)


def _use_lease(
    redrive: lambda_.Function, table: dynamodb.ITable | None, consumer_name: str, stream_arn: str
) -> None:
    """The consumer's redrive lease: its table in the environment, and the grant to take and
    give back its one item (and the table's key, when it has a customer key). Nothing without
    the table."""
    if table is None:
        return
    redrive.add_environment(IDEMPOTENCY_TABLE_ENV, table.table_name)
    redrive.add_to_role_policy(
        allow_lease(table.table_arn, redrive_lease_key(consumer_name, stream_arn))
    )
    grant_key(redrive, table.encryption_key, TABLE_KEY_ACTIONS)


def _whole_seconds(duration: Duration | None) -> str | None:
    return str(int(duration.to_seconds())) if duration is not None else None


def consumer_timeout_of(function: lambda_.IFunction) -> Duration | None:
    """The timeout ``function`` runs with: its ``timeout`` prop, or Lambda's default when it sets
    none; None when it cannot be read (an imported ``IFunction``)."""
    if isinstance(function, lambda_.Function):
        return function.timeout or Duration.seconds(defaults.LAMBDA_DEFAULT_TIMEOUT_SECONDS)
    return None


def reserve_seconds(consumer_timeout: Duration) -> int:
    """Seconds the redrive keeps before its deadline: one consumer invocation plus the margin
    (defaults.REDRIVE_DEADLINE_MARGIN_SECONDS). It starts no new message later than that."""
    return math.ceil(
        consumer_timeout.to_seconds(integral=False) + defaults.REDRIVE_DEADLINE_MARGIN_SECONDS
    )


def _check(
    consumer_name: Any,
    consumer_timeout: Duration | None,
    timeout: Duration,
    metrics_namespace: Any,
) -> list[Problem]:
    problems: list[Problem] = []
    for prop, value in (("consumer_name", consumer_name), ("metrics_namespace", metrics_namespace)):
        if not Token.is_unresolved(value) and not (isinstance(value, str) and value.strip()):
            problems.append(Problem(prop, value, "a non-empty string"))
    timeout_problems = check_function_timeout("timeout", timeout)
    problems += timeout_problems
    if consumer_timeout is None:
        problems.append(
            Problem(
                "consumer_timeout",
                None,
                "the consumer's timeout, a Duration: it cannot be read from "
                "consumer_function (not a lambda_.Function)",
            )
        )
    elif not timeout_problems and reserve_seconds(consumer_timeout) >= timeout.to_seconds():
        problems.append(
            Problem(
                "timeout",
                f"{timeout.to_seconds():g} s",
                f"longer than the consumer's timeout "
                f"({consumer_timeout.to_seconds(integral=False):g} s) "
                f"plus {defaults.REDRIVE_DEADLINE_MARGIN_SECONDS} s, so the redrive can wait "
                "for at least one consumer invocation",
            )
        )
    return problems
