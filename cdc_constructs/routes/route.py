"""What a consumer, its redrive and its alarms need from the source of its changes: a route.

A route is one source of a table's changes (docs/design.md §9): the table's DynamoDB stream
(:mod:`cdc_constructs.routes.dynamodb_stream`) or the Kinesis data stream the table streams its
changes into (:mod:`cdc_constructs.routes.kinesis`). The consumer core
(:mod:`cdc_constructs.consumer_core`) and the redrive (:mod:`cdc_constructs.redrive`) ask the route
and never name one, as they never name a failure kind: a third source is one more module here,
and a route defined outside the library (any object with these members) works unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from cdc_constructs.consumer_options import ConsumerOptions
from cdc_constructs.exceptions import Problem
from cdc_constructs.monitoring_options import MonitoringOptions
from cdc_constructs.record_shape import Fields
from cdc_constructs.redrive import RedriveRoute, StreamRedrive

__all__ = ["Route", "TableDestination", "TemplateRoute"]


class Route(RedriveRoute, Protocol):
    """What a consumer needs from its source, beside its redrive's
    (:class:`~cdc_constructs.redrive.RedriveRoute`: the stream read back, the redrive's grants).

    ``source_arn``: what the event source mapping reads (the stream, or a consumer of it);
    ``retention``: how long the source keeps a record (None: DynamoDB Streams' 24 h), which
    bounds the record age and is a replay window of the marker lifetime;
    ``reads_table_stream``: whether the records are the table's own DynamoDB stream's (a
    backfill's time horizon is checked against it).
    """

    @property
    def source_arn(self) -> str: ...

    @property
    def retention(self) -> Duration | None: ...

    @property
    def reads_table_stream(self) -> bool: ...

    def attach(self, consumer: Construct) -> None:
        """Make what the route needs inside ``consumer`` (an enhanced fan-out consumer) and set
        the consumer's escape hatches on its source (``source_table``, ``stream``, ...)."""
        ...

    def grant_read(self, function: lambda_.IFunction) -> None:
        """Let the consumer's mapping read the source, and nothing more."""
        ...

    def mapping_added(
        self, consumer: Construct, mapping: lambda_.EventSourceMapping, options: ConsumerOptions
    ) -> None:
        """What follows the mapping: register it as a reader of the source, or make it wait for
        what it reads through."""
        ...

    def monitoring_options(self, options: ConsumerOptions) -> MonitoringOptions:
        """The consumer's monitoring props with the route's defaults (the lag alarm's threshold
        on a source that keeps records for days)."""
        ...

    def add_alarms(
        self, consumer: Construct, options: ConsumerOptions, topic: sns.ITopic | None
    ) -> Mapping[str, cloudwatch.Alarm]:
        """Alarms on the source itself (what no consumer metric sees), with the consumer's
        alarm topic; none when the source needs none or monitoring is off."""
        ...

    def make_redrive(self, scope: Construct, construct_id: str, **props: Any) -> StreamRedrive:
        """The consumer's redrive function over this route: a
        :class:`~cdc_constructs.StreamRedrive` given ``route=self`` and ``props`` (what every
        consumer passes, written once in :mod:`cdc_constructs.consumer_core`)."""
        ...


class TableDestination(Protocol):
    """Where a :class:`~cdc_constructs.ChangeCaptureTable` streams its changes besides its
    DynamoDB stream: the source of another route, made with the table (``kinesis=``)."""

    def problems(self) -> list[Problem]:
        """Every invalid prop, prefixed with the table's prop (``kinesis.``)."""
        ...

    def attach(self, owner: Construct, table: dynamodb.TableV2) -> None:
        """Make the destination (inside ``owner``, the ChangeCaptureTable), wire ``table`` to it,
        and set the owner's escape hatches on it."""
        ...


@dataclass(frozen=True)
class TemplateRoute:
    """A route as the checks (:class:`~cdc_constructs.nag.CdcChecks`) find it in any app's
    synthesized template, whoever made the consumer: what its source looks like and what the
    rules may assume of its records.

    :param name: the route's name in findings.
    :param resource_types: the template resource types a mapping or pipe reads it from.
    :param arn_parts: what a literal ARN of its source contains (each of them).
    :param pipe_parameters: the key of a pipe's ``SourceParameters`` for it.
    :param reads_table_stream: its records are a table's own DynamoDB stream's (the rules on the
        table's stream view, its readers, pointer destinations and tumbling windows apply).
    :param record_shape: the shape of its records, as Lambda and Pipes filter them.
    :param foreign_record_shape: the shape when no table of the template streams into the
        source (its records may carry anything). Default: ``record_shape``.
    :param stream_properties: a resource type that names its stream (an enhanced fan-out
        consumer) mapped to the property that does.
    :param retention_hours_property: the stream resource's retention property (hours); None:
        DynamoDB Streams' fixed 24 h.
    :param table_destination_property: a table's property naming the stream it streams its
        changes into (the records then carry that table's changes). Default: none.
    """

    name: str
    resource_types: frozenset[str]
    arn_parts: tuple[str, ...]
    pipe_parameters: str
    reads_table_stream: bool
    record_shape: Fields
    foreign_record_shape: Fields | None = None
    stream_properties: Mapping[str, str] = field(default_factory=dict)
    retention_hours_property: str | None = None
    table_destination_property: str | None = None

    def shape(self, carries_table_changes: bool) -> Fields:
        """The shape of the records a consumer filters."""
        if carries_table_changes or self.foreign_record_shape is None:
            return self.record_shape
        return self.foreign_record_shape
