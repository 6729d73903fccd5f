"""StreamProcessor: in-order, stop-at-first-failure processing of a DynamoDB stream batch.

Importing this module (what a handler module does at cold start) loads only what registering
projections and side effects needs; the batch machinery (:mod:`cdc_consumer.batch` and what it
imports, the contract's message shapes among them) is imported by the first :meth:`handle`,
so the import stays close to bare boto3's and the first batch pays the rest
(docs/design.md §4).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import boto3

from cdc_consumer import defaults
from cdc_consumer.exceptions import ConfigurationError, projection_reader
from cdc_consumer.sinks.protocol import (
    SideEffect,
    batch_hook,
    declared_reads,
    merge_key,
    takes_snapshots,
)

if TYPE_CHECKING:
    from cdc_consumer.batch import GroupTurn, LambdaContext
    from cdc_consumer.decide import Projection, Reads
    from cdc_consumer.progress import ProgressRecorder
    from cdc_consumer.settings import Settings

__all__ = ["LambdaContext", "Projection", "Settings", "SideEffect", "StreamProcessor"]

#: Names this module re-exports from the batch machinery, imported on first use (PEP 562).
_LAZY = {
    "LambdaContext": "cdc_consumer.batch",
    "Projection": "cdc_consumer.decide",
    "Settings": "cdc_consumer.settings",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


P = TypeVar("P", bound="Projection")
S = TypeVar("S", bound="SideEffect")


class StreamProcessor:
    """Processes DynamoDB stream batches serially, in order, stopping at the first failure.

    Register *projections* (exactly-once DynamoDB writes) and/or *side effects* (external
    calls guarded by claims) with the decorators, then call :meth:`handle` from the Lambda
    handler::

        processor = StreamProcessor("totals")

        @processor.projection
        def totals(change: Change) -> list[dict]: ...

        def handler(event, context):
            return processor.handle(event, context)

    Arguments (``None`` means "from the environment", as the StreamConsumer construct sets it):

    - ``consumer_name``: namespaces idempotency records; default env ``CDC_CONSUMER_NAME``.
    - ``idempotency_table``: default env ``IDEMPOTENCY_TABLE_NAME``.
    - ``quarantine_queue_url``: default env ``QUARANTINE_QUEUE_URL``.
    - ``dynamodb_client`` / ``sqs_client``: default ``boto3.client(...)`` with the runtime's
      client settings (``cdc_consumer.defaults.CLIENT_CONFIG``: standard retries, 3 attempts,
      connect 3 s, read 10 s), created on first use (so
      ``AWS_ENDPOINT_URL`` points them at a local endpoint).
    - ``metrics_namespace``: default env ``CDC_METRICS_NAMESPACE``, else ``"CdcConstructs"``,
      where the Monitoring construct's alarms look.
    - ``safety_margin_ms``: stop taking records when less invocation time is left; default
      ``None``: it follows the function's timeout (a fifth of it, between 0.5 and 5 s; see
      :func:`cdc_consumer.defaults.safety_margin_ms` for why). An invocation that cannot take
      even its first record raises :class:`DeadlineError` (a function error).
    - ``side_effect_timeout_ms``: how long a side effect's claim stays in progress; default
      env ``CDC_SIDE_EFFECT_TIMEOUT_MS``, else 10 s or a quarter of the function's timeout
      if shorter. A retry that meets a crashed invocation's claim waits for it to expire and
      takes it over when its invocation has the time (billed duration, at most one timeout);
      a side effect must finish within it (see :mod:`cdc_consumer.claims`).
    - ``clock``: epoch seconds; default ``time.time``; ``sleep``: default ``time.sleep``
      (tests pass their own).

    Names are resolved at each :meth:`handle` call, so a processor can be built at import
    time; a missing one raises :class:`ConfigurationError` naming the variable.
    """

    def __init__(
        self,
        consumer_name: str | None = None,
        *,
        idempotency_table: str | None = None,
        quarantine_queue_url: str | None = None,
        dynamodb_client: Any = None,
        sqs_client: Any = None,
        metrics_namespace: str | None = None,
        safety_margin_ms: int | None = None,
        side_effect_timeout_ms: int | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.consumer_name = consumer_name
        self.idempotency_table = idempotency_table
        self.quarantine_queue_url = quarantine_queue_url
        self.metrics_namespace = metrics_namespace
        self.safety_margin_ms = _margin(safety_margin_ms)
        self.side_effect_timeout_ms = _side_effect_timeout(side_effect_timeout_ms)
        self.sleep = sleep
        self.clock = clock
        self._dynamodb = dynamodb_client
        self._sqs = sqs_client
        self.projections: list[Projection] = []
        self.side_effects: list[tuple[str, SideEffect]] = []
        #: The images each projection and side effect declared it reads (``reads=``).
        self.reads: list[Reads] = []
        #: The registered functions that cannot take a backfill's snapshot rows.
        self.snapshot_refusers: list[str] = []
        #: Each projection's ``start_batch(records)`` (called before a batch is decided) and
        #: ``merge_key(change)`` (a snapshot batch is grouped by them).
        self.batch_hooks: list[Callable[[list[Any]], None]] = []
        self.merge_keys: list[Callable[[Any], str | None]] = []
        #: What records this consumer's progress (:mod:`cdc_consumer.progress`), when asked.
        self.progress: ProgressRecorder | None = None

    # --- registration -------------------------------------------------------------------

    def projection(
        self,
        function: P | None = None,
        *,
        reads: Iterable[str] | None = None,
        snapshots: bool | None = None,
    ) -> Any:
        """Register a projection: ``change -> list of TransactWriteItems actions``.

        Usable as ``@processor.projection`` or ``@processor.projection(reads=["NewImage"])``.
        Its actions commit in one transaction with the record's processed-marker (exactly
        once). Projections run in registration order; their actions are concatenated.
        Return ``[]`` for a change that does not concern the projection.
        Raise :class:`PermanentError` for a change it can never interpret (quarantined); pass
        it ``actions=`` to have compensating actions committed for the quarantined record
        (exactly once, after its quarantine message is sent; see
        :meth:`cdc_consumer.batch.BatchRun.compensate`).
        When one projection raises, the record's other projections' actions are not applied.

        ``reads``: the images the projection reads, ``"NewImage"`` and/or ``"OldImage"``
        (default: the function's ``reads`` attribute, as a sink declares them, else none
        declared). A record whose view type lacks a declared image fails the invocation with
        :class:`MissingImageError` before it runs (see there why), as reading one from the
        change does, declared or not; INSERT's old image (say) is just None.

        ``snapshots``: whether it takes a backfill's snapshot rows (docs/backfill.md); default:
        the function's ``takes_snapshots`` attribute (True for :class:`LatestImage` and
        :class:`Contributions`), else False, so a delta projection is refused a backfill.
        A function with ``start_batch(records)`` has it called before each batch.
        """

        def add(function: Projection) -> str:
            return _add_projection(self, function, snapshots)

        return _registration(function, reads, add, self.reads)

    def side_effect(
        self,
        function: S | None = None,
        *,
        name: str | None = None,
        reads: Iterable[str] | None = None,
        snapshots: bool = False,
    ) -> Any:
        """Register a side effect: ``change -> None``, an external call made once per record.

        Usable as ``@processor.side_effect`` or ``@processor.side_effect(name="notify")``.
        ``name`` (default: the function's ``__name__``) is part of the claim id
        ``{consumer}#{eventID}#{name}``; keep it stable across deployments. ``reads``: as
        for :meth:`projection`. ``snapshots``: whether a backfill's snapshot rows may reach it
        (default False: a backfill of this consumer is refused).
        """

        def add(function: S) -> str:
            claim_name = name or function.__name__
            if any(existing == claim_name for existing, _ in self.side_effects):
                raise ConfigurationError(
                    f"a side effect named {claim_name!r} is already registered; pass name="
                )
            self.side_effects.append((claim_name, function))
            if not snapshots:
                self.snapshot_refusers.append(f"side effect {claim_name!r}")
            return f"side effect {claim_name!r}"

        return _registration(function, reads, add, self.reads)

    # --- processing ---------------------------------------------------------------------

    def handle(
        self,
        event: Mapping[str, Any],
        context: LambdaContext | None = None,
        *,
        turn: GroupTurn | None = None,
    ) -> dict[str, Any]:
        """Process a Lambda DynamoDB stream event; return the partial batch response.

        Returns ``{"batchItemFailures": []}`` when every record was applied, skipped as a
        duplicate or quarantined, else ``{"batchItemFailures": [{"itemIdentifier": seq}]}``
        with the sequence number of the first record not applied; nothing after it was
        applied. A bad record never raises. Raises :class:`ConfigurationError` when a name
        is missing, :class:`MissingImageError` (after committing the records before it) when a
        record's stream view type lacks an image a registered function reads, and
        :class:`MalformedBatchError` when the event has no ``Records`` list or a record has no
        sequence number: such a record cannot be reported alone, so the whole batch fails (a
        function error, which Lambda retries and bisects, and which alarms). A backfill's
        snapshot batch is refused whole with :class:`SnapshotRefusedError` when a registered
        function cannot take snapshot rows (docs/backfill.md).

        ``turn``: given by :class:`~cdc_consumer.ConsumerGroup` to each member (what it shares
        with the members before it in the invocation: see :class:`cdc_consumer.batch.GroupTurn`).
        """
        from cdc_consumer.expiry import keep_declared  # a table with replicas' own filters
        from cdc_consumer.intake import handle_batch  # the batch machinery (module docstring)

        return handle_batch(self, keep_declared(event), context, turn)

    def settings(self) -> Settings:
        """The names this invocation uses; :class:`ConfigurationError` names what is missing."""
        from cdc_consumer.settings import resolve_settings

        return resolve_settings(
            self.consumer_name,
            self.idempotency_table,
            self.quarantine_queue_url,
            self.metrics_namespace,
        )

    @property
    def dynamodb(self) -> Any:
        if self._dynamodb is None:
            self._dynamodb = boto3.client("dynamodb", config=defaults.CLIENT_CONFIG)
        return self._dynamodb

    @property
    def sqs(self) -> Any:
        if self._sqs is None:
            self._sqs = boto3.client("sqs", config=defaults.CLIENT_CONFIG)
        return self._sqs


def _margin(given: int | None) -> int | None:
    if given is not None and given < 0:
        raise ConfigurationError(f"safety_margin_ms must be >= 0 milliseconds, got {given}")
    return given


def _side_effect_timeout(given: int | None) -> int | None:
    """``given``, else the environment's; None: the default, decided per invocation."""
    value: Any = given
    if value is None:
        value = os.environ.get(defaults.SIDE_EFFECT_TIMEOUT_ENV) or None
        if value is None:
            return None
    try:
        timeout = int(value)
    except ValueError:
        timeout = 0
    if timeout <= 0:
        raise ConfigurationError(
            f"side_effect_timeout_ms (or {defaults.SIDE_EFFECT_TIMEOUT_ENV}) must be a positive "
            f"number of milliseconds, got {value!r}"
        )
    return timeout


def _add_projection(processor: StreamProcessor, function: Any, snapshots: bool | None) -> str:
    """Register ``function`` as one of ``processor``'s projections, with what the sink
    protocol says of it (whether it takes snapshot rows, its hooks); its reader's name."""
    processor.projections.append(function)
    name = projection_reader(function)
    takes = takes_snapshots(function) if snapshots is None else snapshots
    if not takes:
        processor.snapshot_refusers.append(name)
    _add_hooks(function, processor.batch_hooks, processor.merge_keys)
    return name


def _add_hooks(
    sink: Any,
    batch_hooks: list[Callable[[list[Any]], None]],
    merge_keys: list[Callable[[Any], str | None]],
) -> None:
    """Keep a projection's ``start_batch`` and ``merge_key`` (sink protocol), when it has them."""
    start_batch, key = batch_hook(sink), merge_key(sink)
    if start_batch is not None:
        batch_hooks.append(start_batch)
    if key is not None:
        merge_keys.append(key)


def _registration(
    function: Any, reads: Iterable[str] | None, add: Callable[[Any], str], declared: list[Reads]
) -> Any:
    """Register ``function`` with ``add`` (now, or as a decorator when it is None) and the
    images it reads in ``declared``: ``reads``, else the function's own ``reads`` attribute
    (sink protocol: :func:`~cdc_consumer.sinks.protocol.declared_reads`);
    :class:`ConfigurationError` for an unknown image name."""
    if reads is not None:
        _images(reads, "reads=")  # refused at once, before the decorator is applied

    def register(function: Any) -> Any:
        images = (
            _images(reads, "reads=")
            if reads is not None
            else _images(declared_reads(function), f"{function!r}.reads")
        )
        reader = add(function)
        if images:
            declared.append((reader, images))
        return function

    return register if function is None else register(function)


def _images(reads: Iterable[str], given_as: str) -> frozenset[str]:
    """``reads`` as a set of image names; :class:`ConfigurationError` naming ``given_as`` for
    an unknown one."""
    images = frozenset([reads] if isinstance(reads, str) else reads)
    unknown = sorted(images - {defaults.NEW_IMAGE, defaults.OLD_IMAGE})
    if unknown:
        raise ConfigurationError(
            f"{given_as} takes {defaults.NEW_IMAGE!r} and/or {defaults.OLD_IMAGE!r}, got {unknown}"
        )
    return images
