"""Stream retention: DynamoDB Streams keeps a record 24 hours, then trims it.

moto's streams keep every record forever, so a local redrive of an on-failure *pointer* would
always find its records, and the reason S3 is the default destination (its objects hold the batch
itself) could not be shown. :class:`StreamRetention` trims the local streams as DynamoDB does, on
a clock the caller controls: records whose ``ApproximateCreationDateTime`` is older than the
retention are gone. Reading them then fails as it does on AWS ("Amazon DynamoDB Streams API
Reference", GetShardIterator and GetRecords):

- ``GetShardIterator`` ``AT_SEQUENCE_NUMBER`` / ``AFTER_SEQUENCE_NUMBER`` of a trimmed record:
  ``TrimmedDataAccessException``;
- ``GetRecords`` with an iterator that points at trimmed records: ``TrimmedDataAccessException``;
- ``TRIM_HORIZON`` starts at the oldest record not trimmed.

The records are stamped on that clock too: moto stamps ``ApproximateCreationDateTime`` with the
wall clock, so once a caller's clock moved ahead (a test's "eight days later") every new record
would look days old, and a mapping with a maximum record age would discard it unread. DynamoDB
stamps a record when the change happens, which on the pipeline's clock is ``clock()``.

Sequence numbers keep their values (moto numbers records by their position in the shard, so the
records stay in moto's list and only a per-shard *horizon* moves). Assumption where AWS says
less: a record is trimmed as soon as it is older than the retention (AWS trims "after 24 hours",
at some point after), and a mapping reading behind the horizon is not emulated (the local mapping
is caught up whenever a test trims).

:func:`apply` patches moto's DynamoDB Streams backend once per process (the server runs in this
process); without a horizon, moto behaves exactly as before.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from cdc_consumer.service_limits import STREAM_RETENTION_SECONDS

#: The clock new stream records are stamped with (the last StreamRetention's; see above).
_stamp_clock: list[Callable[[], float]] = [time.time]
#: The attribute set on moto's StreamShard: the first sequence number not trimmed.
_HORIZON = "_cdc_local_trim_horizon"
_MARKER = "_cdc_local_retention"


def _trimmed(sequence_number: int) -> Exception:
    from moto.core.exceptions import JsonRESTError

    return JsonRESTError(
        "TrimmedDataAccessException",
        f"the record {sequence_number} is beyond the stream's trim horizon (older than its"
        " retention period)",
    )


def horizon_of(shard: Any) -> int:
    """The first sequence number of ``shard`` (moto's StreamShard) not trimmed."""
    return int(getattr(shard, _HORIZON, shard.starting_sequence_number))


def apply() -> None:
    """Patch moto's DynamoDB Streams backend to honour each shard's trim horizon (idempotent)."""
    from moto.dynamodbstreams import models

    if getattr(models.DynamoDBStreamsBackend.get_shard_iterator, _MARKER, False):
        return
    original_iterator = models.DynamoDBStreamsBackend.get_shard_iterator
    original_get = models.ShardIterator.get

    @functools.wraps(original_iterator)
    def get_shard_iterator(
        self: Any, arn: str, shard_id: str, shard_iterator_type: str, sequence_number: Any = None
    ) -> Any:
        # moto's parameter names: the patch has the signature of the method it replaces.
        iterator = original_iterator(self, arn, shard_id, shard_iterator_type, sequence_number)
        horizon = horizon_of(iterator.stream_shard)
        if shard_iterator_type == "TRIM_HORIZON":
            iterator.sequence_number = max(iterator.sequence_number, horizon)
        elif shard_iterator_type != "LATEST" and int(sequence_number) < horizon:
            raise _trimmed(int(sequence_number))  # AT_ or AFTER_SEQUENCE_NUMBER
        return iterator

    @functools.wraps(original_get)
    def get(self: Any, limit: int = 1000) -> Any:
        if int(self.sequence_number) < horizon_of(self.stream_shard):
            raise _trimmed(int(self.sequence_number))
        return original_get(self, limit)

    _stamp_records_on_the_clock()
    setattr(get_shard_iterator, _MARKER, True)
    # Patching moto's classes in place: mypy refuses any assignment to a method.
    models.DynamoDBStreamsBackend.get_shard_iterator = get_shard_iterator  # type: ignore[method-assign]
    models.ShardIterator.get = get  # type: ignore[method-assign]


def stamp_records_with(clock: Callable[[], float]) -> None:
    """Stamp the stream records written from now on with ``clock``. A StreamRetention sets its
    clock; :meth:`cdc_local.endpoint.LocalEndpoint.reset` sets the wall clock back, so one
    test's (or pipeline's) "eight days later" does not stamp the next one's records."""
    _stamp_clock[0] = clock


def _stamp_records_on_the_clock() -> None:
    """Patch moto's StreamRecord to take its ``ApproximateCreationDateTime`` from the clock
    (a naive UTC datetime, as moto's own ``utcnow()``)."""
    from moto.dynamodb.models import table

    original_init = table.StreamRecord.__init__

    @functools.wraps(original_init)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        now = datetime.fromtimestamp(_stamp_clock[0](), UTC).replace(tzinfo=None)
        self.record["dynamodb"]["ApproximateCreationDateTime"] = now

    table.StreamRecord.__init__ = init  # type: ignore[method-assign]


def _shards() -> Iterator[Any]:
    from moto.dynamodb.models import dynamodb_backends

    for regions in dynamodb_backends.values():
        for backend in regions.values():
            for table in backend.tables.values():
                if getattr(table, "stream_shard", None) is not None:
                    yield table.stream_shard


def _created(record: Any) -> float:
    moment = record.record["dynamodb"]["ApproximateCreationDateTime"]
    return moment.timestamp() if isinstance(moment, datetime) else float(moment)


class StreamRetention:
    """Trims every local stream to ``retention_seconds`` on ``clock`` (epoch seconds).

    Call :meth:`trim` whenever the clock has moved; it returns how many records it trimmed.
    """

    def __init__(
        self,
        retention_seconds: float = STREAM_RETENTION_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        apply()
        self.retention_seconds = retention_seconds
        self.clock = clock
        stamp_records_with(clock)
        self.trimmed = 0

    def trim(self) -> int:
        cutoff = self.clock() - self.retention_seconds
        trimmed = 0
        for shard in _shards():
            horizon = horizon_of(shard)
            index = horizon - shard.starting_sequence_number
            while index < len(shard.items) and _created(shard.items[index]) < cutoff:
                index += 1
            new_horizon = shard.starting_sequence_number + index
            if new_horizon > horizon:
                setattr(shard, _HORIZON, new_horizon)
                trimmed += new_horizon - horizon
        self.trimmed += trimmed
        return trimmed
