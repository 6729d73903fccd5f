"""Routes: the sources of a table's changes a consumer reads (docs/design.md §9).

One protocol (:class:`~cdc_constructs.routes.route.Route`, and the redrive's part of it,
:class:`~cdc_constructs.redrive.RedriveRoute`) says what a consumer, its redrive and its alarms
need from a source: the mapping's source ARN and what follows the mapping, the grants to read it,
its retention (the record age and the marker lifetime follow it), its lag alarm's default and
its own alarms, what the redrive reads back and is granted. Two implementations: the table's
DynamoDB stream (:mod:`~cdc_constructs.routes.dynamodb_stream`) and a Kinesis data stream the
table streams into (:mod:`~cdc_constructs.routes.kinesis`). No module outside this package names
one (tests/cdc_constructs/test_structure.py); the checks find every route in a template through
:mod:`~cdc_constructs.routes.templates`. A third source is one more module here.
"""

from cdc_constructs.routes.route import Route, TableDestination, TemplateRoute

__all__ = ["Route", "TableDestination", "TemplateRoute"]
