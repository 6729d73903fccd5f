"""Every route as the checks (:class:`~cdc_constructs.nag.CdcChecks`) find it in a template:
the one list the checks read, so they name no route. A route defined outside the library
registers its template side with :func:`register` (before the app synthesizes), or the checks
pass its mappings and pipes by."""

from __future__ import annotations

from cdc_constructs.exceptions import CdcConfigurationError, Problem
from cdc_constructs.routes.dynamodb_stream import DYNAMODB_STREAM_TEMPLATE
from cdc_constructs.routes.kinesis.template import KINESIS_TEMPLATE
from cdc_constructs.routes.route import TemplateRoute

__all__ = ["TEMPLATE_ROUTES", "register", "unregister"]

TEMPLATE_ROUTES: list[TemplateRoute] = [DYNAMODB_STREAM_TEMPLATE, KINESIS_TEMPLATE]
"""In the order they are tried (a registered one first)."""


def register(route: TemplateRoute) -> None:
    """Add ``route`` (a route defined outside the library), tried before the others;
    :class:`~cdc_constructs.exceptions.CdcConfigurationError` when a route of its name is
    already registered."""
    if any(known.name == route.name for known in TEMPLATE_ROUTES):
        allowed = "a name no registered route has (or unregister the other first)"
        raise CdcConfigurationError("TemplateRoute", [Problem("name", route.name, allowed)])
    TEMPLATE_ROUTES.insert(0, route)


def unregister(route: TemplateRoute) -> None:
    """Remove a route :func:`register` added (a test's)."""
    if route in TEMPLATE_ROUTES:
        TEMPLATE_ROUTES.remove(route)
