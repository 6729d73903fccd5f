"""How a stream is read: the settings a Lambda event source mapping and an EventBridge Pipe share.

:class:`StreamMappingOptions` groups them and checks them in one place, so StreamConsumer,
StreamFanOut and OutboxPublisher (and any other reader of a stream) refuse the same values with
the same words. The defaults and AWS's ranges are in :mod:`cdc_constructs.defaults`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_

from cdc_constructs import defaults
from cdc_constructs.exceptions import Problem
from cdc_constructs.filter_checks import as_pattern, check_filters
from cdc_constructs.validation import (
    check_batch_size,
    check_flag,
    check_max_batching_window,
    check_max_record_age,
    check_parallelization_factor,
    check_reads_images,
    check_retry_attempts,
    check_starting_position,
    check_tumbling_window,
    seconds,
)

__all__ = ["StreamMappingOptions"]


@dataclass(frozen=True)
class StreamMappingOptions:
    """The settings of one stream reader (event source mapping or pipe), with their checks.

    Every field is a construct prop of the same name; see :mod:`cdc_constructs.defaults` for
    why each default is what it is.

    :param starting_position: Default TRIM_HORIZON; LATEST also needs
        ``allow_latest_starting_position=True`` (it skips records written while the mapping is
        created or updated).
    :param allow_latest_starting_position: the opt-in LATEST needs. Default False: a mapping
        starting at LATEST misses every record written while it is created or updated.
    :param batch_size: records per batch, 1..10000. Default 100.
    :param max_batching_window: wait up to this long to fill a batch, 0..300 s. Default 0.
    :param parallelization_factor: concurrent batches per shard, 1..10. Default 1.
    :param tumbling_window: the mapping's tumbling window (``TumblingWindowInSeconds``), 0 s to
        15 minutes; event source mappings only. Default: 15 minutes with a parallelization
        factor of 1, none above it (AWS refuses a window beside a factor above 1, and so does
        this prop). With a window Lambda names each event's shard, and the runtime keeps one
        ledger lane per shard; ``Duration.seconds(0)`` turns it off (per-record markers then,
        2 write units a record). See ``defaults.TUMBLING_WINDOW_SECONDS``.
    :param retry_attempts: 0..10000, never infinite (-1). Default 5.
    :param max_record_age: 60 s to under the 24 h retention. Default 1 h.
    :param bisect_batch_on_error: Default True.
    :param filters: up to 5 filter patterns (dicts, as :class:`StreamFilters` builds them, or
        ``lambda_.FilterCriteria.filter({...})`` output); a record is delivered when any
        matches. Default none (every record). Checked in the runtime matcher's grammar
        (``$or`` included), so the redrive replays exactly what the mapping delivers.
    :param reads_images: the images the handler reads, ``"NewImage"`` and/or ``"OldImage"``
        (the runtime's ``reads=`` declarations). Default: not declared (not checked). A stream
        whose view type lacks a declared image is refused: the handler would see no image and,
        with an older runtime, count the record as processed without its effect.
    :param extra_reader_reason: why this reader may be the stream's third (a table with
        replicas: second). Default None: such a reader is refused, since DynamoDB Streams
        throttles a third reader of a shard (see :mod:`cdc_constructs.stream_readers`); the
        reason also acknowledges CdcChecks' CDC-ESM11 on this reader.
    """

    starting_position: lambda_.StartingPosition = defaults.STARTING_POSITION
    allow_latest_starting_position: bool = False
    batch_size: Any = defaults.BATCH_SIZE
    max_batching_window: Duration | None = None
    parallelization_factor: Any = defaults.PARALLELIZATION_FACTOR
    tumbling_window: Duration | None = None
    retry_attempts: Any = defaults.RETRY_ATTEMPTS
    max_record_age: Duration | None = None
    bisect_batch_on_error: bool = defaults.BISECT_BATCH_ON_ERROR
    filters: Sequence[Mapping[str, Any]] | None = ()
    reads_images: Sequence[str] | None = None
    extra_reader_reason: str | None = None

    @property
    def record_age(self) -> Duration:
        """``max_record_age``, or the default (1 h)."""
        return self.max_record_age or Duration.seconds(defaults.MAX_RECORD_AGE_SECONDS)

    @property
    def batching_window(self) -> Duration:
        """``max_batching_window``, or the default (0 s)."""
        return self.max_batching_window or Duration.seconds(defaults.MAX_BATCHING_WINDOW_SECONDS)

    @property
    def batching_window_seconds(self) -> int:
        return int(seconds(self.batching_window) or 0)

    @property
    def tumbling_window_seconds(self) -> int:
        """The mapping's window in seconds: ``tumbling_window`` as given, else the default (15
        minutes) with a parallelization factor of 1 and none (0) above it."""
        if self.tumbling_window is None:
            factor = self.parallelization_factor
            return defaults.TUMBLING_WINDOW_SECONDS if factor == 1 else 0
        return int(seconds(self.tumbling_window) or 0)

    @property
    def record_age_seconds(self) -> int:
        return int(seconds(self.record_age) or 0)

    @property
    def filter_patterns(self) -> list[dict[str, Any]]:
        """The filters as plain dicts, ``FilterCriteria.filter(...)`` output unwrapped (call
        after :meth:`problems` found none)."""
        return [dict(as_pattern(pattern)) for pattern in self.filters or ()]

    def problems(
        self, stream_view_type: str | None, *, lambda_settings: bool = True
    ) -> list[Problem]:
        """Every invalid setting.

        :param stream_view_type: what filters on images are checked against (None: unknown,
            image filters not checked).
        :param lambda_settings: False skips the settings only a Lambda event source mapping
            takes (starting position, bisect, tumbling window), for pipes, which fix them.
        """
        found: list[Problem] = []
        if lambda_settings:
            found += check_starting_position(
                self.starting_position, self.allow_latest_starting_position
            )
            found += check_flag(
                "allow_latest_starting_position", self.allow_latest_starting_position
            )
            found += check_flag("bisect_batch_on_error", self.bisect_batch_on_error)
            found += check_tumbling_window(self.tumbling_window, self.parallelization_factor)
        found += check_batch_size(self.batch_size)
        found += check_max_batching_window(self.batching_window)
        found += check_parallelization_factor(self.parallelization_factor)
        found += check_retry_attempts(self.retry_attempts)
        found += check_max_record_age(self.record_age)
        found += check_filters(self.filters or (), stream_view_type)
        found += check_reads_images(self.reads_images, stream_view_type)
        return found
