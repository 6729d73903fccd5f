"""Every route as the checks (:class:`~cdc_constructs.nag.CdcChecks`) find it in a template:
the one list the checks read, so they name no route."""

from __future__ import annotations

from typing import Final

from cdc_constructs.routes.dynamodb_stream import DYNAMODB_STREAM_TEMPLATE
from cdc_constructs.routes.kinesis.template import KINESIS_TEMPLATE
from cdc_constructs.routes.route import TemplateRoute

__all__ = ["TEMPLATE_ROUTES"]

TEMPLATE_ROUTES: Final[tuple[TemplateRoute, ...]] = (DYNAMODB_STREAM_TEMPLATE, KINESIS_TEMPLATE)
"""In the order they are tried."""
