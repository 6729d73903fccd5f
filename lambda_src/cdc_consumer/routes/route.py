"""What the engine asks of a change source: :class:`Route` (docs/design.md §9).

A route is one way a table's changes reach the consumer (a DynamoDB stream, a Kinesis data
stream). The engine reads every record through its route (:func:`cdc_consumer.routes.route_of`):
how Lambda's ``batchItemFailures`` names it, the DynamoDB change it carries, when that change was
made and its version, what a filter matches, what a quarantine pointer keeps of it, and where the
ledger lists it. Reading a route's records back (from its stream, a failed batch, a message) is
the redrive's part of a route, beside this one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

Created = tuple[int | None, datetime | None]
"""A change's creation time: epoch microseconds and an aware UTC datetime (both None: absent)."""

LanePosition = tuple[str | None, int]
"""A record's place in a ledger lane: its stream's ARN (None when it does not say) and its
sequence number."""

Edit = Callable[[Mapping[str, Any]], Mapping[str, Any]]
"""A change to the DynamoDB change a filter view holds (:meth:`Route.filter_view`)."""


class Route(Protocol):
    """One change source, as the engine reads its records (see the module docstring)."""

    name: str
    """The route's name: its package's in :mod:`cdc_consumer.routes`."""
    event_source: str
    """The ``eventSource`` Lambda gives the route's records."""
    identifier_field: str
    """Where a record holds what ``batchItemFailures`` names it by (for error messages)."""

    def recognises(self, record: Any) -> bool:
        """Whether ``record`` (any value, as an event delivers it) is one of the route's."""
        ...

    def item_identifier(self, record: Any) -> str | None:
        """What ``batchItemFailures`` names ``record`` by (its sequence number); None if missing."""
        ...

    def change_document(self, record: Mapping[str, Any]) -> Mapping[str, Any]:
        """The DynamoDB change ``record`` carries, in the DynamoDB stream record's shape (the
        record itself, or what it holds decoded). Raises
        :class:`~cdc_consumer.exceptions.UndecodableRecordError` when it holds none."""
        ...

    def created(self, stream: Mapping[str, Any], event_id: str) -> Created:
        """The creation time of the change whose ``dynamodb`` object is ``stream``. Raises
        :class:`~cdc_consumer.exceptions.UndecodableRecordError` naming ``event_id`` when its
        ``ApproximateCreationDateTime`` is not in the route's unit."""
        ...

    def version(self, time_us: int, sequence_number: str) -> str:
        """The version (:mod:`cdc_consumer.versions`) of a change created at ``time_us``."""
        ...

    def filter_view(self, record: Mapping[str, Any], edit: Edit | None = None) -> Any:
        """What Lambda's filters match for ``record``, with ``edit`` applied to the DynamoDB
        change the view holds (when it holds one)."""
        ...

    def envelope(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """``record`` without its change (what a quarantine pointer keeps of it besides the
        change's keys and times)."""
        ...

    def lane_position(self, record: Any) -> LanePosition | None:
        """Where the ledger lists ``record`` in its lane (the shard comes from the event);
        None when it keeps a per-record marker, keyed on its change's ``eventID``, instead."""
        ...
