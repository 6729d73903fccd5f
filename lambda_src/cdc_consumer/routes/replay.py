"""What the redrive needs of a route (:class:`ReplayRoute`), and which route a stream, a record
or a failure record is (:func:`route_of_stream`, :func:`route_of_record`,
:func:`failure_batch_info`).

A route says how its stream is named (its ARN), how a range of a shard is read back (the
client's GetShardIterator and GetRecords calls, and the record Lambda would have delivered), how
long its stream keeps a record, which shards descend from which, how a delivered record is named
(its sequence number), checked, filtered, and which item and change it holds, and where a failure
record describes its batch (``batchInfo``). The redrive (:mod:`cdc_consumer.redrive`) asks these
functions and never names a route; each route's answers are its ``replay`` module. A route
defined outside this package plugs in with :func:`register`, from a module the redrive imports
before it reads (the module that registers its runtime side too).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from cdc_consumer.exceptions import RedriveSetupError
from cdc_consumer.routes.dynamodb_stream.replay import ROUTE as _STREAM
from cdc_consumer.routes.kinesis.replay import ROUTE as _KINESIS

__all__ = [
    "ROUTES",
    "Change",
    "ReplayRoute",
    "change_of",
    "failure_batch_info",
    "filter_view",
    "item_key",
    "register",
    "route_of_raw",
    "route_of_record",
    "route_of_stream",
    "sequence_number",
    "unregister",
    "written_at",
]

#: Where a change is in its item's history: (creation time, sequence number), compared within
#: one route (each route says its time's unit).
Change = tuple[int, int]


class ReplayRoute(Protocol):
    """One change source, as the redrive reads it back and replays it."""

    #: What the route's stream is called, for people ("DynamoDB stream").
    name: str
    #: The key under which Lambda's on-failure record describes a failed batch of this route.
    batch_info: str
    #: The shape of its stream ARN, for people.
    arn_shape: str

    def owns_stream(self, stream_arn: str) -> bool:
        """Whether ``stream_arn`` names a stream of this route."""
        ...

    def owns_record(self, record: Any) -> bool:
        """Whether ``record`` is one Lambda delivers from this route's stream."""
        ...

    def owns_raw(self, raw: Any) -> bool:
        """Whether ``raw`` is a record this route's GetRecords returns (as boto3 returns it)."""
        ...

    def client(self, session: Any) -> Any:
        """The client reading the stream, made by ``session`` (a boto3 session, or boto3)."""
        ...

    def shard_iterator(self, client: Any, stream_arn: str, shard_id: str, start: str) -> str:
        """An iterator at ``start`` (AT_SEQUENCE_NUMBER) of the shard."""
        ...

    def records_page(self, client: Any, stream_arn: str, iterator: str, limit: int) -> Any:
        """One GetRecords page (``Records``, ``NextShardIterator``)."""
        ...

    def raw_sequence(self, raw: Mapping[str, Any]) -> int:
        """The sequence number of a GetRecords record."""
        ...

    def lambda_record(
        self, raw: Mapping[str, Any], shard_id: str, stream_arn: str
    ) -> dict[str, Any]:
        """A GetRecords record in the shape Lambda delivers it."""
        ...

    def retention_seconds(self, client: Any, stream_arn: str) -> int | None:
        """How long the stream keeps a record, when it must be asked before a read (None: the
        stream says itself what it no longer holds)."""
        ...

    def shard_parents(
        self, client: Any, stream_arn: str, shards: Iterable[str]
    ) -> dict[str, str | None]:
        """Each known shard's parent (None: a root); botocore errors pass through."""
        ...

    def sequence_number(self, record: Any) -> str | None:
        """What the consumer names a delivered record by (``batchItemFailures``), or None."""
        ...

    def check_record(self, record: Mapping[str, Any], what: str) -> None:
        """Raise :class:`~cdc_consumer.exceptions.MalformedMessageError` unless ``record`` is a
        delivered record of this route with its identity (``what`` names it)."""
        ...

    def filter_view(self, record: Mapping[str, Any]) -> Any:
        """What Lambda's filter patterns match for ``record``."""
        ...

    def item_key(self, record: Mapping[str, Any]) -> str:
        """The item whose change ``record`` carries, as canonical JSON of its keys."""
        ...

    def change_of(self, record: Mapping[str, Any]) -> Change:
        """Where the change is in its item's history."""
        ...

    def written_at(self, record: Mapping[str, Any]) -> float | None:
        """When the record was written, epoch seconds (None: not said)."""
        ...


ROUTES: list[ReplayRoute] = [_STREAM, _KINESIS]
"""The routes, asked in this order (the first that owns a stream or record has it; a registered
one first)."""


def register(route: ReplayRoute) -> None:
    """Add ``route`` (a route defined outside this package), asked before the others;
    :class:`RedriveSetupError` when a route of its name is already registered."""
    if any(known.name == route.name for known in ROUTES):
        raise RedriveSetupError(
            f"a replay route named {route.name!r} is already registered: give a new route a"
            " name of its own, or unregister the other first"
        )
    ROUTES.insert(0, route)


def unregister(route: ReplayRoute) -> None:
    """Remove a route :func:`register` added (a test's)."""
    if route in ROUTES:
        ROUTES.remove(route)


def route_of_stream(stream_arn: str) -> ReplayRoute:
    """The route whose stream ``stream_arn`` names; :class:`RedriveSetupError` naming the value
    and every route's ARN shape when none does."""
    for route in ROUTES:
        if route.owns_stream(stream_arn or ""):
            return route
    shapes = " or ".join(f"a {route.name} ARN ({route.arn_shape})" for route in ROUTES)
    raise RedriveSetupError(
        f"stream ARN {stream_arn!r} is not {shapes}: pass the stream the consumer reads (e.g."
        " the table's LatestStreamArn; not an enhanced fan-out consumer's)"
    )


def route_of_record(record: Any) -> ReplayRoute | None:
    """The route that delivers records like ``record`` (None: no route's)."""
    return next((route for route in ROUTES if route.owns_record(record)), None)


def route_of_raw(raw: Any) -> ReplayRoute | None:
    """The route whose GetRecords returns records like ``raw`` (None: no route's)."""
    return next((route for route in ROUTES if route.owns_raw(raw)), None)


def failure_batch_info(document: Mapping[str, Any]) -> tuple[ReplayRoute, Any] | None:
    """The route of a failure record (Lambda's on-failure record) and its raw batch info; None
    when it describes no route's batch."""
    for route in ROUTES:
        if route.batch_info in document:
            return route, document[route.batch_info]
    return None


def sequence_number(record: Any) -> str | None:
    """What the consumer names ``record`` by, whatever its route (None: not a route's)."""
    route = route_of_record(record)
    return route.sequence_number(record) if route is not None else None


def filter_view(record: Mapping[str, Any]) -> Any:
    """What Lambda's filter patterns match for ``record`` (a record of no route: itself)."""
    route = route_of_record(record)
    return route.filter_view(record) if route is not None else record


def item_key(record: Mapping[str, Any]) -> str:
    """The item whose change ``record`` carries (a record of no route: an item of its own)."""
    route = route_of_record(record)
    if route is None:
        return json.dumps({"record": str(record.get("eventID"))}, sort_keys=True)
    return route.item_key(record)


def change_of(record: Mapping[str, Any]) -> Change:
    """Where ``record``'s change is in its item's history (a record of no route: nowhere)."""
    route = route_of_record(record)
    return route.change_of(record) if route is not None else (0, 0)


def written_at(record: Mapping[str, Any]) -> float | None:
    """When ``record`` was written, epoch seconds; None when it does not say."""
    route = route_of_record(record)
    return route.written_at(record) if route is not None else None
