"""The runtime's Lambda handlers the constructs name in their templates.

A function the constructs make around a handler of the runtime layer (on ``sys.path`` as
/opt/python) has no code of its own: its ``Handler`` is one of these. Standard library only.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "BACKFILL_HANDLER",
    "TTL_ARCHIVE_HANDLER",
    "WINDOW_HANDLER",
]


TTL_ARCHIVE_HANDLER: Final = "cdc_consumer.ttl_archive.handler"
"""The TTL archive's Lambda handler, a module of the runtime layer (on ``sys.path`` as
/opt/python): the construct's function has no code of its own."""

WINDOW_HANDLER: Final = "cdc_consumer.window_handler.handler"
"""The handler StreamConsumer gives a function it makes whose mapping has a tumbling window: it
runs the function's own handler (:data:`USER_HANDLER_ENV`) and adds the ``state`` an answer to a
windowed event must carry when that handler's answer lacks it."""

BACKFILL_HANDLER: Final = "cdc_consumer.backfill.handler.handler"
"""The segment function's handler (runtime layer). Its input is a :class:`BackfillRequest` (the
start step: validates, decides the horizon, returns a :class:`BackfillPlan`) or a
:class:`SegmentTask` (one segment invocation: returns a :class:`SegmentResult`)."""
