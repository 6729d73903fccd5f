"""Importing this module registers the toy change log's runtime and redrive routes
(:mod:`toy_changes`): the consumer's handler imports it, and the redrive imports it by name
(``CDC_REDRIVE_SOURCE_MODULES``)."""

from __future__ import annotations

from cdc_consumer import routes
from cdc_consumer.routes import replay
from toy_changes import RECORDS, REPLAY

routes.register(RECORDS)
replay.register(REPLAY)
