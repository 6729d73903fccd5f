"""The routes of the local pipeline: the change sources an event source mapping reads, one
module each (docs/design.md §9), behind one protocol (:mod:`cdc_local.routes.protocol`).

:data:`ROUTES` keeps the routes by the service of the event source ARNs they read; the pipeline
finds a mapping's route by its ``EventSourceArn`` (:func:`route_of`). A route defined elsewhere
(a test's) plugs in with :func:`register` and leaves with :func:`unregister`. No module of
``cdc_local`` outside this package names a route.
"""

from __future__ import annotations

from cdc_local.exceptions import LocalPipelineError
from cdc_local.routes.dynamodb_stream import DynamoDBStreamRoute
from cdc_local.routes.kinesis import KinesisRoute
from cdc_local.routes.protocol import Feed, Route, RouteContext, Source, SourceContext

__all__ = [
    "ROUTES",
    "Feed",
    "Route",
    "RouteContext",
    "Source",
    "SourceContext",
    "register",
    "route_of",
    "unregister",
]

#: The routes, by the service of the event source ARNs they read (``arn:aws:<service>:...``).
ROUTES: dict[str, Route] = {
    route.service: route for route in (DynamoDBStreamRoute(), KinesisRoute())
}


def register(route: Route) -> None:
    """Add ``route`` (a route defined outside this package); :class:`LocalPipelineError` when
    a route of its service is already registered (it would silently take that route's place)."""
    known = ROUTES.get(route.service)
    if known is not None:
        raise LocalPipelineError(
            f"a local route of service {route.service!r} is already registered"
            f" ({type(known).__name__}): give a new route a service of its own, or unregister"
            " the other first"
        )
    ROUTES[route.service] = route


def unregister(route: Route) -> None:
    """Remove a route :func:`register` added (a test's)."""
    if ROUTES.get(route.service) is route:
        del ROUTES[route.service]


def route_of(arn: str) -> Route:
    """The route of an event source ARN, by its service."""
    parts = str(arn).split(":")
    service = parts[2] if len(parts) > 2 else ""
    if service not in ROUTES:
        raise LocalPipelineError(
            f"event source {arn!r}: the local pipeline has no route for service {service!r}; "
            f"it reads {sorted(ROUTES)} (register a route: cdc_local.routes.register)"
        )
    return ROUTES[service]
