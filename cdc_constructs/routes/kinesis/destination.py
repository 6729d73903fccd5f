"""A table's changes streamed to a Kinesis data stream (docs/design.md §9).

:class:`KinesisDestination` is the option object ``ChangeCaptureTable(kinesis=...)`` takes: a
new stream (encrypted, on-demand or provisioned, with a retention) or an existing one, and the
precision of ``ApproximateCreationDateTime`` in its records (MICROSECOND by default: consumers
order one item's changes by it). :func:`make_kinesis_destination` makes the stream and wires
the table's ``KinesisStreamSpecification``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_kms as kms
from constructs import Construct

from cdc_constructs.exceptions import Problem
from cdc_constructs.validation import check_duration, check_whole_number, seconds

__all__ = [
    "KINESIS_PRECISIONS",
    "KinesisDestination",
    "make_kinesis_destination",
]

KINESIS_PRECISION: Final = "MICROSECOND"
"""Microseconds: a consumer orders one item's changes by ``ApproximateCreationDateTime``
(Kinesis may deliver them out of order and repeated); in milliseconds two changes of an item
within the same millisecond tie and fall back to arrival order."""

KINESIS_PRECISIONS: Final = ("MICROSECOND", "MILLISECOND")
"""DynamoDB's values for ApproximateCreationDateTimePrecision."""

KINESIS_RETENTION_HOURS: Final = 7 * 24
"""Seven days: the reason to take the Kinesis route is replay beyond DynamoDB Streams' 24 h; a
week outlasts a long weekend's incident, and it is as far back as a Lambda mapping's maximum
record age (7 days) can use. Extended retention is billed per shard-hour: lower it if a day is
enough, raise it (up to 365 days) for replays from further back."""

KINESIS_RETENTION_RANGE_HOURS: Final = (24, 8760)
"""Kinesis' range for a stream's retention period."""

KINESIS_SHARD_RANGE: Final = (1, 10_000)
"""Shards of a provisioned stream (the default account quota is lower)."""


@dataclass(frozen=True)
class KinesisDestination:
    """Where a :class:`ChangeCaptureTable` streams its changes besides its DynamoDB stream.

    :param stream: an existing Kinesis stream. Default: a new one, made with the props below.
    :param retention: the stream's retention period. Default 7 days for a new stream (see
        ``KINESIS_RETENTION_HOURS``); REQUIRED with an existing ``stream`` (state its
        retention: consumers are refused a maximum record age at or above it).
    :param shard_count: provisioned mode with this many shards. Default: on-demand (no capacity
        to plan; a table's write bursts cannot be throttled by a shard count).
    :param encryption_key: a customer KMS key for a new stream. Default: Kinesis' AWS-managed
        key (``alias/aws/kinesis``): encrypted at rest, no key to manage.
    :param precision: ``ApproximateCreationDateTime`` precision, MICROSECOND (default) or
        MILLISECOND.
    :param removal_policy: of a new stream. Default RETAIN: its records may be the only copy of
        changes not yet consumed.
    """

    stream: kinesis.IStream | None = None
    retention: Duration | None = None
    shard_count: Any = None
    encryption_key: kms.IKey | None = None
    precision: str = KINESIS_PRECISION
    removal_policy: RemovalPolicy = RemovalPolicy.RETAIN

    @property
    def retention_period(self) -> Duration:
        """``retention``, or the default (7 days)."""
        return self.retention or Duration.hours(KINESIS_RETENTION_HOURS)

    def attach(self, owner: Construct, table: dynamodb.TableV2) -> None:
        """The stream (:func:`make_kinesis_destination`), and the table's escape hatches
        ``kinesis_stream``, ``kinesis_retention`` and ``kinesis_precision``.

        :param owner: the ChangeCaptureTable: the stream is made inside it.
        :param table: its TableV2, whose Kinesis streaming destination is set.
        """
        owner.kinesis_stream = make_kinesis_destination(owner, table, self)  # type: ignore[attr-defined]
        owner.kinesis_retention = self.retention_period  # type: ignore[attr-defined]
        owner.kinesis_precision = self.precision  # type: ignore[attr-defined]

    def problems(self) -> list[Problem]:
        """Every invalid prop (prefixed ``kinesis.``)."""
        found: list[Problem] = []
        if self.precision not in KINESIS_PRECISIONS:
            found.append(
                Problem("kinesis.precision", self.precision, " or ".join(KINESIS_PRECISIONS))
            )
        low, high = KINESIS_RETENTION_RANGE_HOURS
        if self.stream is not None and self.retention is None:
            found.append(
                Problem(
                    "kinesis.retention",
                    None,
                    "the existing stream's retention period (consumers keep their maximum record "
                    "age below it)",
                )
            )
        if self.retention is not None:
            found += check_duration(
                "kinesis.retention", self.retention, low * 3600, high * 3600, "24 h to 365 days"
            )
            in_seconds = seconds(self.retention)
            if not found and in_seconds is not None and in_seconds % 3600:
                found.append(
                    Problem("kinesis.retention", self.retention, "whole hours (Kinesis' unit)")
                )
        if self.stream is not None:
            given = [
                name
                for name, value in (
                    ("shard_count", self.shard_count),
                    ("encryption_key", self.encryption_key),
                )
                if value is not None
            ]
            if given:
                found.append(
                    Problem(
                        "kinesis." + "/".join(given),
                        "given with an existing stream",
                        "omitted: they configure a stream made here",
                    )
                )
        elif self.shard_count is not None:
            found += check_whole_number(
                "kinesis.shard_count", self.shard_count, *KINESIS_SHARD_RANGE
            )
        return found


def make_kinesis_destination(
    scope: Construct, table: dynamodb.TableV2, destination: KinesisDestination
) -> kinesis.IStream:
    """The destination's stream (made here unless given), set as ``table``'s Kinesis streaming
    destination with the destination's precision. Call after ``destination.problems()`` found
    none."""
    stream = destination.stream or kinesis.Stream(
        scope,
        "ChangeStream",
        retention_period=destination.retention_period,
        stream_mode=(
            kinesis.StreamMode.ON_DEMAND
            if destination.shard_count is None
            else kinesis.StreamMode.PROVISIONED
        ),
        shard_count=None if destination.shard_count is None else int(destination.shard_count),
        encryption=(
            kinesis.StreamEncryption.KMS
            if destination.encryption_key is not None
            else kinesis.StreamEncryption.MANAGED
        ),
        encryption_key=destination.encryption_key,
        removal_policy=destination.removal_policy,
    )
    # TableV2 renders an AWS::DynamoDB::GlobalTable: the destination is per replica. aws-cdk-lib's
    # TableV2 has no precision prop, so it is set on the replica's specification directly.
    cfn = table.node.default_child
    assert isinstance(cfn, dynamodb.CfnGlobalTable)
    cfn.add_property_override(
        "Replicas.0.KinesisStreamSpecification",
        {
            "StreamArn": stream.stream_arn,
            "ApproximateCreationDateTimePrecision": destination.precision,
        },
    )
    return stream
