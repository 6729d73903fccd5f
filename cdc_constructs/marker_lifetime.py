"""How long a consumer keeps its processed-markers and side-effect claims: derived from its own
replay windows by the contract's rule (:func:`cdc_consumer.replay_windows.minimum_marker_lifetime`,
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
(:func:`failed_batch_retention_of` and :func:`queue_retention_of`, the bucket's and the
quarantine's own, are shared with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration
from cdc_consumer.environment_variables import MARKER_TTL_ENV
from cdc_consumer.replay_windows import ReplayWindows, minimum_marker_lifetime
from constructs import Construct

from cdc_constructs.exceptions import Problem
from cdc_constructs.failure_kinds import (
    OnFailureTarget,
    Quarantine,
    failed_batch_retention_of,
    queue_retention_of,
)
from cdc_constructs.validation import seconds

__all__ = [
    "check_marker_lifetime",
    "failed_batch_retention_of",
    "marker_lifetime_seconds",
    "queue_retention_of",
    "replay_windows",
]

DAY_SECONDS = 24 * 3600


def replay_windows(
    consumer: Construct,
    *,
    stream_retention: Duration,
    record_age: Duration,
    target: OnFailureTarget,
    quarantine: Quarantine,
) -> tuple[ReplayWindows | None, list[Problem]]:
    """The consumer's windows, read from its settings as they stand: the stream's retention, the
    mapping's record age, how long the on-failure destination keeps a batch (its kind's
    :meth:`~cdc_constructs.failure_kinds.kind.FailureKind.retention`: a bucket's lifecycle; SQS
    and SNS keep a pointer only) and the quarantine queue's retention (a queue not made in this
    app: SQS's 14-day maximum). None, with the problem, when a window cannot be known."""
    kept, problems = target.failure_kind.retention(consumer, target)
    if kept is None:
        return None, problems
    windows = ReplayWindows(
        stream_retention=int(seconds(stream_retention) or 0),
        max_record_age=int(seconds(record_age) or 0),
        failed_batch_retention=kept,
        quarantine_retention=quarantine.retention(),
    )
    return windows, []


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
