"""How long a consumer keeps its processed-markers and side-effect claims: derived from its own
replay windows by the contract's rule (:func:`cdc_consumer.contract.minimum_marker_lifetime`,
docs/design.md "Markers outlive every replay window"), never a constant of the runtime.

A record can come back as long as any copy of it can be delivered or replayed: the stream keeps
it (24 h, or a Kinesis stream's retention), the mapping gives up on it after its maximum record
age and sends its batch to the on-failure destination (an S3 bucket keeps it for its lifecycle),
and a member that finds it poison quarantines it (the queue keeps it for its retention). A
marker kept less long turns the late replay into a second application: a consumer group's failed
batch always holds records its earlier members applied.

The constructs read each window from the consumer's own settings (:func:`replay_windows`), put
the lifetime in the function's ``CDC_MARKER_TTL_SECONDS`` and refuse a ``marker_lifetime`` below
it (:func:`check_marker_lifetime`). CdcChecks reads the same windows from any template
(:func:`failed_batch_retention_of` is shared with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from cdc_consumer.contract import (
    MARKER_TTL_ENV,
    ON_FAILURE_S3_PREFIX,
    ReplayWindows,
    minimum_marker_lifetime,
)
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.exceptions import Problem
from cdc_constructs.on_failure import OnFailureKind, OnFailureTarget
from cdc_constructs.validation import seconds

__all__ = [
    "check_marker_lifetime",
    "failed_batch_retention_of",
    "marker_lifetime_seconds",
    "queue_retention_of",
    "replay_windows",
]

DAY_SECONDS = 24 * 3600


def failed_batch_retention_of(lifecycle: Any) -> int | None:
    """How long a bucket whose ``LifecycleConfiguration`` (CloudFormation's shape) is
    ``lifecycle`` keeps an on-failure object (``aws/lambda/...``), whole seconds: the earliest
    expiration of the enabled rules that apply to every such object. None: kept forever (no
    such rule), or not known at synthesis (an intrinsic)."""
    rules = lifecycle.get("Rules") if isinstance(lifecycle, Mapping) else None
    days = [
        rule["ExpirationInDays"]
        for rule in (rules if isinstance(rules, list) else [])
        if isinstance(rule, Mapping)
        and rule.get("Status") == "Enabled"
        and isinstance(rule.get("ExpirationInDays"), int)
        and _applies_to_failed_batches(rule)
    ]
    return min(days) * DAY_SECONDS if days else None


def _applies_to_failed_batches(rule: Mapping[str, Any]) -> bool:
    """A rule without tag or size filters whose prefix (if any) every on-failure key has."""
    if any(key in rule for key in ("TagFilters", "ObjectSizeGreaterThan", "ObjectSizeLessThan")):
        return False
    prefix = rule.get("Prefix", "")
    return isinstance(prefix, str) and ON_FAILURE_S3_PREFIX.startswith(prefix)


def queue_retention_of(retention: Any) -> int | None:
    """A queue's ``MessageRetentionPeriod`` as synthesized: SQS's default 4 days when unset;
    None when not known at synthesis."""
    if retention is None:
        return defaults.SQS_DEFAULT_RETENTION_SECONDS
    if isinstance(retention, int):
        return retention
    if isinstance(retention, str) and retention.isdigit():
        return int(retention)
    return None


def replay_windows(
    consumer: Construct,
    *,
    stream_retention: Duration,
    record_age: Duration,
    target: OnFailureTarget,
    failed_batch_retention: Duration | None,
    quarantine_queue: sqs.IQueue,
    made_bucket: bool,
) -> tuple[ReplayWindows | None, list[Problem]]:
    """The consumer's windows, read from its settings as they stand: the stream's retention, the
    mapping's record age, the on-failure bucket's lifecycle (the bucket made here keeps
    ``failed_batch_retention``; a bucket given is read from this app; SQS and SNS keep a pointer
    only) and the quarantine queue's retention (a queue not made in this app: SQS's 14-day
    maximum). None, with the problem, when a window cannot be known."""
    bucket_retention, problems = _failed_batch_retention(
        consumer, target, failed_batch_retention, made_bucket
    )
    if bucket_retention is None:
        return None, problems
    windows = ReplayWindows(
        stream_retention=int(seconds(stream_retention) or 0),
        max_record_age=int(seconds(record_age) or 0),
        failed_batch_retention=bucket_retention,
        quarantine_retention=_quarantine_retention(quarantine_queue),
    )
    return windows, []


def _failed_batch_retention(
    consumer: Construct,
    target: OnFailureTarget,
    retention: Duration | None,
    made_bucket: bool,
) -> tuple[int | None, list[Problem]]:
    if target.kind is not OnFailureKind.S3:
        return 0, []  # a pointer into the stream: the stream's retention bounds its replay
    if made_bucket:
        days = retention.to_days() if retention else defaults.FAILED_BATCH_RETENTION_DAYS
        return int(days) * DAY_SECONDS, []
    bucket = _bucket_in_app(consumer, target.arn)
    found = None if bucket is None else failed_batch_retention_of(_lifecycle(bucket))
    if found is not None:
        return found, []
    where = "keeps them forever" if bucket is not None else "is not defined in this app"
    return None, [
        Problem(
            "on_failure",
            "S3OnFailureDestination of a bucket whose lifecycle " + where,
            "a bucket of this app with a lifecycle rule expiring its objects (say "
            "s3.LifecycleRule(expiration=Duration.days(14))), or marker_lifetime set to at least "
            "the time the bucket keeps a failed batch plus the consumer's other windows: markers "
            "must outlive every copy of their records (docs/design.md)",
        )
    ]


def _bucket_in_app(consumer: Construct, arn: str) -> s3.Bucket | None:
    for construct in consumer.node.root.node.find_all():
        if isinstance(construct, s3.Bucket) and construct.bucket_arn == arn:
            return construct
    return None


def _lifecycle(bucket: s3.Bucket) -> Any:
    """The bucket's ``LifecycleConfiguration`` as it stands, in CloudFormation's shape (the L1's
    properties resolved: its own getter cannot return the L2's lazy value through jsii)."""
    properties = Stack.of(bucket).resolve(bucket.node.default_child._cfn_properties)  # type: ignore[union-attr]
    return _pascal_case(properties.get("lifecycleConfiguration"))


def _pascal_case(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key[:1].upper() + key[1:]: _pascal_case(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_pascal_case(item) for item in value]
    return value


def _quarantine_retention(queue: sqs.IQueue) -> int:
    cfn = queue.node.default_child if isinstance(queue, sqs.Queue) else None
    if cfn is None:
        return defaults.SQS_MAX_RETENTION_SECONDS
    found = queue_retention_of(Stack.of(queue).resolve(cfn.message_retention_period))  # type: ignore[attr-defined]
    return defaults.SQS_MAX_RETENTION_SECONDS if found is None else found


def marker_lifetime_seconds(given: Duration | None, windows: ReplayWindows | None) -> int | None:
    """The lifetime the runtime gets: ``marker_lifetime`` when given, else the rule's minimum
    for ``windows`` (None: neither is known; the consumer is refused)."""
    if given is not None:
        return int(seconds(given) or 0)
    return minimum_marker_lifetime(windows) if windows is not None else None


def check_marker_lifetime(
    given: Any, windows: ReplayWindows | None, environment: Any
) -> list[Problem]:
    """``marker_lifetime`` is a Duration at least the rule's minimum for ``windows``, and the
    variable it sets is not given through ``environment`` (which would bypass the check)."""
    found = []
    if isinstance(environment, Mapping) and MARKER_TTL_ENV in environment:
        found.append(
            Problem(
                f"environment[{MARKER_TTL_ENV!r}]",
                environment[MARKER_TTL_ENV],
                "not set here: the construct derives it from the consumer's replay windows; "
                "set marker_lifetime=Duration... to keep markers longer",
            )
        )
    if given is None:
        return found
    if not isinstance(given, Duration):
        return [*found, Problem("marker_lifetime", given, "a Duration (e.g. Duration.days(30))")]
    if windows is None:
        return found
    minimum = minimum_marker_lifetime(windows)
    value = int(seconds(given) or 0)
    if value >= minimum:
        return found
    return [
        *found,
        Problem(
            "marker_lifetime",
            f"{value} s",
            f"at least {minimum} s ({minimum / DAY_SECONDS:g} days): markers and claims must "
            f"outlive every window in which their record can come back ({windows.describe()}, "
            "plus a day's margin), or a late replay applies the record again",
        ),
    ]
