"""KinesisConsumer: a Lambda function consuming a table's changes from a Kinesis data stream.

The Kinesis route (docs/design.md §9): retention up to 365 days, more readers, enhanced fan-out;
in exchange one item's changes may arrive out of order and more than once. The consumer gets
StreamConsumer's safety defaults and checks, with the record age bounded by the Kinesis stream's
own retention instead of DynamoDB Streams' 24 h, and its runtime orders changes by version
(``cdc_consumer.LatestImage`` and the version guard).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final

from aws_cdk import Duration
from aws_cdk import aws_kinesis as kinesis
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.change_capture_table import ChangeCaptureTable
from cdc_constructs.consumer_core import ConsumerCore
from cdc_constructs.consumer_names import check_consumer_name
from cdc_constructs.consumer_options import ConsumerOptions
from cdc_constructs.exceptions import Problem
from cdc_constructs.filter_checks import check_filters
from cdc_constructs.mapping_options import StreamMappingOptions
from cdc_constructs.replication import Replication
from cdc_constructs.routes.kinesis.record_shape import KINESIS_CHANGE_RECORD
from cdc_constructs.routes.kinesis.replication_alarms import KinesisReplicationAlarms
from cdc_constructs.routes.kinesis.route import KinesisRoute
from cdc_constructs.stream_consumer import StreamConsumer
from cdc_constructs.validation import (
    check_batch_size,
    check_duration,
    check_max_batching_window,
    check_parallelization_factor,
    check_reads_images,
    check_retry_attempts,
    check_starting_position,
    raise_if_any,
    seconds,
    shown,
)

__all__ = [
    "KINESIS_FILTER_FIELDS",
    "KinesisConsumer",
    "KinesisFilters",
    "KinesisMappingOptions",
    "kinesis_record_age",
]

KINESIS_FILTER_FIELDS: Final = tuple(KINESIS_CHANGE_RECORD.fields)
"""What a Kinesis filter pattern can match: the record's metadata and its ``data`` (the
DynamoDB change, decoded from base64 JSON by Lambda before filtering)."""


class KinesisFilters:
    """Filter patterns for a KinesisConsumer: the DynamoDB change is under ``data``."""

    @staticmethod
    def on_data(pattern: Mapping[str, Any]) -> dict[str, Any]:
        """A :class:`~cdc_constructs.StreamFilters` pattern (which matches a DynamoDB stream
        record) made to match the same change in a Kinesis record: ``{"data": pattern}``.
        ``KinesisFilters.on_data(StreamFilters.ttl_deletions_only())`` keeps TTL deletions.

        :param pattern: a pattern on a DynamoDB stream record's fields (``eventName``,
            ``dynamodb``, ``userIdentity``).
        """
        return {"data": dict(pattern)}


@dataclass(frozen=True)
class KinesisMappingOptions(StreamMappingOptions):
    """StreamConsumer's mapping settings for a Kinesis stream: the record age is bounded by the
    stream's ``retention`` (not DynamoDB Streams' 24 h) and filters match Kinesis records."""

    retention: Duration | None = None

    @property
    def record_age(self) -> Duration:
        """``max_record_age``, or the default derived from the stream's retention
        (:func:`kinesis_record_age`)."""
        if self.max_record_age is not None or self.retention is None:
            return super().record_age
        return kinesis_record_age(self.retention)

    @property
    def tumbling_window_seconds(self) -> int:
        """None: the Kinesis route keeps per-record markers, which need no shard (see
        :func:`check_kinesis_tumbling_window`)."""
        return 0

    def problems(
        self, stream_view_type: str | None, *, lambda_settings: bool = True
    ) -> list[Problem]:
        found = check_starting_position(self.starting_position, self.allow_latest_starting_position)
        found += check_batch_size(self.batch_size)
        found += check_max_batching_window(self.batching_window)
        found += check_parallelization_factor(self.parallelization_factor)
        found += check_retry_attempts(self.retry_attempts)
        found += check_kinesis_record_age(self.record_age, self.retention)
        found += check_kinesis_filters(self.filters or ())
        found += check_kinesis_tumbling_window(self.tumbling_window)
        # Kinesis records of DynamoDB changes always carry both images.
        found += check_reads_images(self.reads_images, "NEW_AND_OLD_IMAGES")
        return found


class KinesisConsumer(StreamConsumer):
    """A Lambda function fed by the Kinesis data stream a table streams its changes to, with
    StreamConsumer's safety: TRIM_HORIZON, finite retries, bisect, ReportBatchItemFailures, the
    same on-failure destination, a record age below THE KINESIS STREAM'S retention, alarms,
    least privilege. Its runtime orders changes by version (docs/design.md §9).

    Source (one of):

    :param table: a :class:`ChangeCaptureTable` made with ``kinesis=KinesisDestination(...)``:
        its stream and retention are used.
    :param stream: an existing Kinesis stream carrying a table's changes, with
    :param stream_retention: its retention period (required with ``stream``).
    :param enhanced_fan_out: Default False. True reads through a dedicated enhanced fan-out
        consumer (its own 2 MB/s per shard, pushed records, billed per consumer-shard hour): for
        many readers of one stream, or latency below the shared 200 ms poll.
    :param consumer_name: as StreamConsumer's. Default: the construct id.

    Every other prop is StreamConsumer's, with its default and check (function, mapping,
    failure handling, monitoring), except: ``max_record_age`` must stay below the Kinesis
    stream's retention and within AWS's 7 days, and defaults to the retention minus a day
    (:func:`kinesis_record_age`: 6 days on a 7-day stream), so an outage waits in the stream
    instead of going to the bucket (the lag alarm still fires at 15 minutes at the latest);
    ``filters`` match Kinesis records, the DynamoDB
    change under ``data`` (:class:`KinesisFilters`); ``redrive`` (default True) provisions
    :class:`~cdc_constructs.KinesisStreamRedrive`, which replays the on-failure
    destination's batches (an object's own records, or a message's read back from the Kinesis
    stream while it holds them) and the quarantine queue's records, as StreamConsumer's redrive
    does; markers are kept for the replay windows with the stream's
    retention in place of 24 h (``marker_lifetime``, :mod:`~cdc_constructs.marker_lifetime`),
    as a duplicate can arrive as long as the stream holds a record.

    With ``table`` and monitoring on, the table's replication to the stream is alarmed too
    (:class:`~cdc_constructs.routes.kinesis.KinesisReplicationAlarms`: changes waiting,
    throttled or skipped before they reach the stream, which no consumer metric can see); with
    ``stream`` the table is not known here: add ``KinesisReplicationAlarms`` where it is.

    Escape hatches: StreamConsumer's, plus :attr:`stream`, :attr:`stream_retention`,
    :attr:`fan_out_consumer`, :attr:`replication_alarms` (None without ``table`` or monitoring);
    :attr:`stream_arn` is what the mapping reads (the stream, or the fan-out consumer).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: ChangeCaptureTable | None = None,
        stream: kinesis.IStream | None = None,
        stream_retention: Duration | None = None,
        enhanced_fan_out: bool = False,
        consumer_name: str | None = None,
        **props: Any,
    ) -> None:
        source, retention, problems = _source(table, stream, stream_retention)
        replicated, refused = _replicated(scope, construct_id, table, props)
        options = _options(replicated, retention)
        problems += refused
        problems += check_consumer_name(
            scope, construct_id, consumer_name, options.failure.idempotency_table
        )
        raise_if_any(f"KinesisConsumer {construct_id!r}", problems + options.problems(None))
        assert source is not None and retention is not None
        route = KinesisRoute(
            source, retention, enhanced_fan_out, table.table if table is not None else None
        )
        ConsumerCore.__init__(
            self, scope, construct_id, route=route, options=options, consumer_name=consumer_name
        )
        self.stream: kinesis.IStream
        """The Kinesis stream read."""
        self.stream_retention: Duration
        """Its retention period (the record age stays below it)."""
        self.fan_out_consumer: kinesis.StreamConsumer | None
        """The enhanced fan-out consumer, or None (shared-throughput polling)."""
        self.replication_alarms: KinesisReplicationAlarms | None
        """The table's replication to the stream, alarmed (None: the table is not known, or
        ``monitoring=False``)."""


def _replicated(
    scope: Construct, construct_id: str, table: ChangeCaptureTable | None, props: dict[str, Any]
) -> tuple[dict[str, Any], list[Problem]]:
    """``props`` as a consumer of a table with replicas needs them, as StreamConsumer's (its
    Kinesis stream carries the replicated writes too: :meth:`Replication.consumer_props`), and
    the filters it refuses; ``props`` unchanged for a single-region table or a ``stream``."""
    replication = Replication.of(table) if isinstance(table, ChangeCaptureTable) else None
    if replication is None:
        return props, []
    filters = list(props.get("filters") or ())
    changed, mapping_filters, refused = replication.consumer_props(
        scope, construct_id, props, filters
    )
    return {**changed, "filters": mapping_filters}, refused


def _options(props: Mapping[str, Any], retention: Duration | None) -> ConsumerOptions:
    """StreamConsumer's option objects from ``props`` (the same names and defaults), the mapping
    bounded by ``retention``."""
    unknown = sorted(set(props) - set(ConsumerOptions.prop_names()))
    if unknown:
        raise TypeError(f"KinesisConsumer got unexpected props {unknown}")
    defaults_of = {
        name: parameter.default
        for name, parameter in inspect.signature(StreamConsumer.__init__).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    }
    merged = {**defaults_of, **props}
    options = ConsumerOptions.from_props(merged)
    mapping = KinesisMappingOptions(
        **{
            field.name: getattr(options.mapping, field.name)
            for field in fields(StreamMappingOptions)
        },
        retention=retention,
    )
    return ConsumerOptions(options.function, mapping, options.failure, options.monitoring)


def _source(
    table: ChangeCaptureTable | None,
    stream: kinesis.IStream | None,
    retention: Duration | None,
) -> tuple[kinesis.IStream | None, Duration | None, list[Problem]]:
    """The stream, its retention, and what is wrong with the source props."""
    if (table is None) == (stream is None):
        return (
            None,
            None,
            [
                Problem(
                    "table/stream",
                    "both" if table is not None else "neither",
                    "exactly one: a ChangeCaptureTable with a Kinesis destination, or a Kinesis "
                    "stream with its stream_retention",
                )
            ],
        )
    if table is not None:
        if not isinstance(table, ChangeCaptureTable) or table.kinesis_stream is None:
            return (
                None,
                None,
                [
                    Problem(
                        "table",
                        type(table).__name__,
                        "a ChangeCaptureTable made with kinesis=KinesisDestination(...)",
                    )
                ],
            )
        if retention is not None:
            return (
                None,
                None,
                [Problem("stream_retention", retention, "omitted with table (read from it)")],
            )
        return table.kinesis_stream, table.kinesis_retention, []
    if retention is None:
        return (
            None,
            None,
            [
                Problem(
                    "stream_retention", None, "the stream's retention period (given with stream)"
                )
            ],
        )
    low, high = 24 * 3600, 8760 * 3600
    problems = check_duration("stream_retention", retention, low, high, "24 h to 365 days")
    return stream, retention, problems


def kinesis_record_age(retention: Duration) -> Duration:
    """The default maximum record age on a stream kept ``retention``: the retention minus
    ``defaults.RETAINED_RECORD_AGE_MARGIN_SECONDS`` (a day), at most AWS's 7 days and at least
    ``defaults.MAX_RECORD_AGE_SECONDS`` (an hour, below a 24-hour stream's retention)."""
    low, high = defaults.MAX_RECORD_AGE_SECONDS, defaults.MAX_RECORD_AGE_RANGE_SECONDS[1]
    retention_seconds = int(seconds(retention) or 0)
    derived = retention_seconds - defaults.RETAINED_RECORD_AGE_MARGIN_SECONDS
    return Duration.seconds(max(low, min(high, derived)))


def check_kinesis_record_age(value: Duration | None, retention: Duration | None) -> list[Problem]:
    """60 s up to, not including, the stream's retention, and within AWS's 7 days."""
    low, high = defaults.MAX_RECORD_AGE_RANGE_SECONDS
    retention_seconds = int(seconds(retention) or 0)
    if not retention_seconds:
        return []  # the source's problem is reported already
    limit = min(high, retention_seconds - 1)
    return check_duration(
        "max_record_age",
        value,
        low,
        limit,
        f"1 minute up to, not including, the Kinesis stream's retention "
        f"({retention_seconds} s) and at most AWS's {high} s: an age the stream never reaches "
        "means records are never given up on",
    )


def check_kinesis_tumbling_window(value: Duration | None) -> list[Problem]:
    """No tumbling window on the Kinesis route: its runtime keeps per-record markers keyed by
    the DynamoDB change's ``eventID`` (one change can be in a Kinesis stream twice, under two
    Kinesis sequence numbers, and only the eventID tells a copy from a new change), so it needs
    no shard; a window would only add a final invocation per shard and window."""
    if value is None or (isinstance(value, Duration) and not seconds(value)):
        return []
    return [
        Problem(
            "tumbling_window",
            shown(value),
            "omitted: a KinesisConsumer keeps per-record markers keyed by the DynamoDB change, "
            "which need no shard (docs/design.md §12); a window would only add an empty final "
            "invocation per shard and window",
        )
    ]


def check_kinesis_filters(filters: Sequence[Mapping[str, Any]]) -> list[Problem]:
    """StreamConsumer's checks (count, grammar, size, JSON) on a Kinesis record of a table's
    changes: its metadata fields, and under ``data`` the change as DynamoDB writes it to
    Kinesis, at every level (``KINESIS_CHANGE_RECORD``,
    :mod:`~cdc_constructs.routes.kinesis.record_shape`; both images are in the data)."""
    return check_filters(filters, None, KINESIS_CHANGE_RECORD)
