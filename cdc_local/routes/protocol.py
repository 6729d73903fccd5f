"""What a route is to the local pipeline (docs/design.md §9): a change source an event source
mapping reads, with everything about it that differs from another source.

A :class:`Route` (one per source service, stateless) says which mappings of a stack read it,
creates its resources on the local endpoint, makes the feeds that fill it (what AWS would put
into it and moto does not) and opens a :class:`Source` for one mapping. A :class:`Source` is the
source seen by one mapping: its shards and pages (GetShardIterator, GetRecords: read by
:class:`~cdc_local.shard_reader.ShardReader`), and how one of its records is identified,
ordered, aged, filtered and described to an on-failure destination. The event source mapping,
the runner and serve mode ask the route and never name one (a structure test keeps it so).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from cdc_local.shard_reader import ShardPages

if TYPE_CHECKING:
    from cdc_local.assembly import StackTemplate
    from cdc_local.endpoint import LocalEndpoint
    from cdc_local.faults import FaultPlan
    from cdc_local.resources import LocalResources
    from cdc_local.ttl import TtlLedger

__all__ = ["Feed", "Route", "RouteContext", "Source", "SourceContext"]


@dataclass(frozen=True)
class RouteContext:
    """What a route's feeds are made with: the pipeline's resources and endpoint, its TTL
    ledger, its fault plan and its clock."""

    resources: LocalResources
    endpoint: LocalEndpoint
    ttl_ledger: TtlLedger
    faults: FaultPlan
    clock: Callable[[], float]


@dataclass(frozen=True)
class SourceContext:
    """What a mapping's source is opened with: its function's ARN, the TTL ledger, and the
    pipeline's feeds (a source reads what they record, e.g. when a record was put)."""

    function_arn: str
    ttl_ledger: TtlLedger | None = None
    feeds: Sequence[Feed] = ()


class Feed(Protocol):
    """What fills a route's source locally, where AWS would (a table's change stream put into
    another stream): the pipeline pumps it before its mappings read."""

    def pump(self) -> bool:
        """Move what is available; whether anything moved."""
        ...


class Source(ShardPages, Protocol):
    """One mapping's source: its shards and pages, and its records' identity, order and age."""

    #: The mapping's ``EventSourceArn``.
    arn: str

    def start(self) -> None:
        """The calls Lambda makes when the mapping starts, before it takes iterators."""
        ...

    def record(self, shard_id: str, raw: Mapping[str, Any]) -> dict[str, Any]:
        """A GetRecords record in the shape Lambda delivers it (an element of ``Records``)."""
        ...

    def filter_view(self, record: Mapping[str, Any]) -> Mapping[str, Any]:
        """What the mapping's ``FilterCriteria`` match against."""
        ...

    def sequence_number(self, record: Mapping[str, Any]) -> str:
        """The record's item identifier in ``batchItemFailures``."""
        ...

    def created_at(self, record: Mapping[str, Any]) -> float:
        """Epoch seconds the record's age (``MaximumRecordAgeInSeconds``) and its tumbling
        window count from."""
        ...

    def partition_value(self, record: Mapping[str, Any]) -> str:
        """What picks the record's lane under ``ParallelizationFactor``: its partition key."""
        ...

    def change_id(self, record: Mapping[str, Any]) -> str | None:
        """The table change the record carries (its DynamoDB ``eventID``), for accounting;
        None when it carries none."""
        ...

    def failure_record(
        self, records: Sequence[Mapping[str, Any]], **context: Any
    ) -> dict[str, Any]:
        """The on-failure destination's invocation record for discarded ``records``
        (``context``: :func:`~cdc_local.destinations.invocation_record`'s other arguments but
        the stream's ARN)."""
        ...


class Route(Protocol):
    """A change source's route through the local pipeline (``cdc_local.routes`` keeps them by
    :attr:`service`)."""

    #: The service of the event source ARNs it reads (``arn:aws:<service>:...``).
    service: str
    #: The boto3 client a mapping reads the source with (with its function's role).
    client_service: str
    #: What serve mode says of a consumer's quarantine queue when ``cdc-redrive`` does not
    #: replay it; None when it does.
    quarantine_note: str | None
    #: The actions a reader's role needs on the source (an EventBridge Pipe's).
    reader_actions: tuple[str, ...]
    #: An EventBridge Pipe's ``SourceParameters`` key for the source.
    pipe_parameters: str

    def mapping_ids(self, stack: StackTemplate) -> list[str]:
        """The logical ids of the stack's event source mappings that read this route."""
        ...

    def provision(self, resources: LocalResources, endpoint: LocalEndpoint) -> None:
        """Create the route's own resources on ``endpoint`` and register their names."""
        ...

    def feeds(self, context: RouteContext) -> list[Feed]:
        """What fills the stack's sources of this route (none when AWS's service does)."""
        ...

    def source(self, client: Any, arn: str, context: SourceContext) -> Source:
        """The source ``arn`` as one mapping reads it, through ``client``."""
        ...

    def redrive_stream_arn(self, arn: str) -> str:
        """The stream ``cdc-redrive --stream-arn`` names for a mapping of ``arn``."""
        ...
