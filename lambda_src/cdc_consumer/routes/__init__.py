"""The change sources (routes) the consumer reads, one package each: ``dynamodb_stream`` (a
table's DynamoDB stream) and ``kinesis`` (a table's Kinesis data stream destination). A route
says how its records are identified, ordered, decoded and read back; nothing outside this
package names a route (docs/design.md, "Adding a source").

The engine asks :func:`route_of` for a record's :class:`~cdc_consumer.routes.route.Route`. A
route defined outside this package (a third source's) plugs in with :func:`register`, from the
module that defines it, imported before the first record is read (the consumer's handler module).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc_consumer.exceptions import ConfigurationError
from cdc_consumer.routes.dynamodb_stream.records import ROUTE as _DYNAMODB_STREAM
from cdc_consumer.routes.kinesis.records import ROUTE as _KINESIS
from cdc_consumer.routes.route import Route

__all__ = [
    "DEFAULT_ROUTE",
    "ROUTES",
    "Route",
    "filter_view",
    "item_identifier",
    "register",
    "route_of",
    "unregister",
]

#: Every route, asked in this order which one a record is of (a registered one first).
ROUTES: list[Route] = [_KINESIS, _DYNAMODB_STREAM]
#: The route of a record no route claims (a backfill's snapshot row, a record built by hand):
#: the DynamoDB stream's, whose record shape those have.
DEFAULT_ROUTE: Route = _DYNAMODB_STREAM


#: The routes by the ``eventSource`` Lambda gives their records.
_BY_EVENT_SOURCE = {route.event_source: route for route in ROUTES}


def register(route: Route) -> None:
    """Add ``route`` (a route defined outside this package), asked before the others and the
    default; :class:`~cdc_consumer.exceptions.ConfigurationError` when a route of its name or
    its ``eventSource`` is already registered."""
    for known in ROUTES:
        if known.name == route.name or known.event_source == route.event_source:
            raise ConfigurationError(
                f"route {route.name!r} (eventSource {route.event_source!r}) is already "
                f"registered as {known.name!r} (eventSource {known.event_source!r}): give a "
                "new route a name and an eventSource of its own, or unregister the other first"
            )
    ROUTES.insert(0, route)
    _BY_EVENT_SOURCE[route.event_source] = route


def unregister(route: Route) -> None:
    """Remove a route :func:`register` added (a test's)."""
    if route in ROUTES:
        ROUTES.remove(route)
        del _BY_EVENT_SOURCE[route.event_source]


def route_of(record: Any) -> Route:
    """The route ``record`` (any value, as an event delivers it) is of: the one its
    ``eventSource`` names, else the first that recognises it, else :data:`DEFAULT_ROUTE`. Asked
    of every record of a batch, so a record as JSON (a dict) is looked up by its source first."""
    if type(record) is dict:
        source = record.get("eventSource")
        found = _BY_EVENT_SOURCE.get(source) if type(source) is str else None
        if found is not None:
            return found
    for route in ROUTES:
        if route.recognises(record):
            return route
    return DEFAULT_ROUTE


def item_identifier(record: Any) -> str | None:
    """What Lambda's ``batchItemFailures`` names ``record`` by (its sequence number in its
    route); None if missing."""
    return route_of(record).item_identifier(record)


def filter_view(record: Mapping[str, Any]) -> Any:
    """What Lambda's filters match for ``record`` (:meth:`Route.filter_view`)."""
    return route_of(record).filter_view(record)
