"""CDC-ESM9: a consumer running this library's runtime keeps its markers longer than every window
in which its records can come back, read from the template alone (docs/design.md, "Markers
outlive every replay window"; the rule is
:func:`cdc_consumer.replay_windows.minimum_marker_lifetime`).

The windows come from what is synthesized, so the check holds for apps that do not use the
constructs: the stream's retention (24 h, or the Kinesis stream's ``RetentionPeriodHours``), the
mapping's ``MaximumRecordAgeInSeconds``, the on-failure bucket's lifecycle (an SQS or SNS
destination keeps a pointer into the stream only), and the retention of the quarantine queue the
function's ``QUARANTINE_QUEUE_URL`` names (SQS's 14-day maximum when the queue is not in the
template). The function's marker lifetime is its ``CDC_MARKER_TTL_SECONDS``; a function without
it is reported, since the runtime then cannot know its windows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnResource
from cdc_consumer.environment_variables import (
    CONSUMER_NAME_ENV,
    MARKER_TTL_ENV,
    QUARANTINE_QUEUE_ENV,
)
from cdc_consumer.replay_windows import ReplayWindows, minimum_marker_lifetime
from cdc_consumer.service_limits import UNLIMITED_RECORD_AGE
from cdk_nag import NagRuleCompliance, NagRules

from cdc_constructs import defaults
from cdc_constructs.failure_kinds import kind_of_arn, kind_of_template, queue_retention_of
from cdc_constructs.nag.stream_source import StreamSource, UnresolvableValueError, dig

__all__ = ["MarkerLifetime", "markers_outlive_replay_windows"]

_QUEUE = "AWS::SQS::Queue"


@dataclass(frozen=True)
class MarkerLifetime:
    """A consumer function's marker lifetime (None: not set) and its windows (None: some window
    never ends, a bucket that keeps failed batches forever)."""

    seconds: int | None
    windows: ReplayWindows | None

    @property
    def minimum(self) -> int | None:
        return minimum_marker_lifetime(self.windows) if self.windows is not None else None

    @property
    def compliant(self) -> bool:
        return (
            self.seconds is not None and self.minimum is not None and self.seconds >= self.minimum
        )

    @classmethod
    def of(cls, node: CfnResource, source: StreamSource) -> MarkerLifetime | None:
        """None when the mapping's function is not this library's runtime in this template."""
        variables = runtime_variables(source, node)
        if variables is None:
            return None
        ttl = variables.get(MARKER_TTL_ENV)
        seconds = None if ttl is None else int(NagRules.resolve_if_primitive(node, ttl))
        bucket = _failed_batch_retention(node, source)
        if bucket is None:
            return cls(seconds, None)
        windows = ReplayWindows(
            stream_retention=source.retention_seconds(node),
            max_record_age=_record_age(node, source),
            failed_batch_retention=bucket,
            quarantine_retention=_quarantine_retention(node, source, variables),
        )
        return cls(seconds, windows)


def markers_outlive_replay_windows(node: CfnResource, source: StreamSource) -> NagRuleCompliance:
    """The consumer function (this library's runtime: it sets CDC_CONSUMER_NAME) sets
    CDC_MARKER_TTL_SECONDS to at least the rule's minimum for its windows. Not applicable to
    pipes and to functions outside the template or without the runtime's variables."""
    lifetime = MarkerLifetime.of(node, source)
    if lifetime is None:
        return NagRuleCompliance.NOT_APPLICABLE
    return NagRuleCompliance.COMPLIANT if lifetime.compliant else NagRuleCompliance.NON_COMPLIANT


def runtime_variables(source: StreamSource, node: CfnResource) -> Mapping[str, Any] | None:
    if source.is_pipe:
        return None
    for name in source.function_names(node):
        resource = source.resources.get(name) or {}
        if resource.get("Type") == "AWS::Lambda::Function":
            variables = dig(resource, "Properties", "Environment", "Variables")
            if isinstance(variables, Mapping) and CONSUMER_NAME_ENV in variables:
                return variables
    return None


def _record_age(node: CfnResource, source: StreamSource) -> int:
    age = dig(source.settings, "MaximumRecordAgeInSeconds")
    return UNLIMITED_RECORD_AGE if age is None else int(NagRules.resolve_if_primitive(node, age))


def _failed_batch_retention(node: CfnResource, source: StreamSource) -> int | None:
    """Seconds the on-failure destination keeps a batch, as its failure kind reads it from the
    template: 0 for none, SQS or SNS (a pointer); the bucket's lifecycle; None when the bucket
    keeps it forever. Raises when a destination that keeps records (a bucket) is not in the
    template (how long it keeps them is unknown)."""
    destination = dig(source.settings, "DestinationConfig", "OnFailure", "Destination")
    if destination in (None, ""):
        return 0
    target = NagRules.resolve_resource_from_intrinsic(node, destination)
    resource = source.resources.get(target) if isinstance(target, str) else None
    if resource is not None:
        kind = kind_of_template(resource.get("Type"))
        properties = dig(resource, "Properties")
        if kind is None:
            return 0
        return kind.template_retention(properties if isinstance(properties, Mapping) else {})
    text = destination if isinstance(destination, str) else ""
    kind = kind_of_arn(text)
    if text and (kind is None or not kind.keeps_records):
        return 0  # a pointer into the stream
    read = getattr(kind, "arn_retention", None)  # the kind reads its own window, if it can
    found = read(text) if read is not None else None
    if found is not None:
        return int(found)
    raise UnresolvableValueError(
        f"the on-failure destination {destination!r} is not in this template and its kind "
        f"({kind.name if kind else 'unknown'}) cannot tell from its ARN how long it keeps failed "
        "batches (an S3 bucket's lifecycle is its own configuration)"
    )


def _quarantine_retention(
    node: CfnResource, source: StreamSource, variables: Mapping[str, Any]
) -> int:
    url = variables.get(QUARANTINE_QUEUE_ENV)
    target = NagRules.resolve_resource_from_intrinsic(node, url) if url is not None else None
    resource = source.resources.get(target) if isinstance(target, str) else None
    if resource is None or resource.get("Type") != _QUEUE:
        return defaults.SQS_MAX_RETENTION_SECONDS
    retention = dig(resource, "Properties", "MessageRetentionPeriod")
    found = queue_retention_of(retention)
    if found is None:
        found = queue_retention_of(NagRules.resolve_if_primitive(node, retention))
    return defaults.SQS_MAX_RETENTION_SECONDS if found is None else found
