"""StreamProcessor: in-order, stop-at-first-failure processing of a DynamoDB stream batch."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import boto3

from cdc_consumer import defaults, logs, metrics
from cdc_consumer.change import Change
from cdc_consumer.exceptions import (
    ConfigurationError,
    InvalidActionError,
    MalformedBatchError,
    PermanentError,
    TransientError,
    UndecodableRecordError,
)
from cdc_consumer.kinesis import item_identifier
from cdc_consumer.quarantine import send_to_quarantine
from cdc_consumer.side_effects import Claim, SideEffectClaims
from cdc_consumer.transactions import (
    RecordWrites,
    TransactionGroup,
    action_list,
    commit,
    marker_action,
)

Projection = Callable[[Change], Sequence[Mapping[str, Any]]]
"""A function from a change to its TransactWriteItems actions (boto3 client shape)."""
SideEffect = Callable[[Change], None]
"""A function that performs an external call for a change."""

P = TypeVar("P", bound=Projection)
S = TypeVar("S", bound=SideEffect)


class LambdaContext(Protocol):
    """The part of Lambda's context object the processor uses."""

    def get_remaining_time_in_millis(self) -> int: ...


@dataclass(frozen=True)
class Settings:
    """Names resolved for one invocation (explicit arguments first, then the environment)."""

    consumer: str
    idempotency_table: str
    quarantine_queue_url: str
    metrics_namespace: str


class StreamProcessor:
    """Processes DynamoDB stream batches serially, in order, stopping at the first failure.

    Register *projections* (exactly-once DynamoDB writes) and/or *side effects* (external
    calls guarded by claims) with the decorators, then call :meth:`handle` from the Lambda
    handler::

        processor = StreamProcessor("order-stats")

        @processor.projection
        def order_stats(change: Change) -> list[dict]: ...

        def handler(event, context):
            return processor.handle(event, context)

    Arguments (``None`` means "from the environment", as the StreamConsumer construct sets it):

    - ``consumer_name``: namespaces idempotency records; default env ``CDC_CONSUMER_NAME``.
    - ``idempotency_table``: default env ``IDEMPOTENCY_TABLE_NAME``.
    - ``quarantine_queue_url``: default env ``QUARANTINE_QUEUE_URL``.
    - ``dynamodb_client`` / ``sqs_client``: default ``boto3.client(...)`` with
      :data:`cdc_consumer.defaults.CLIENT_CONFIG`, created on first use (so
      ``AWS_ENDPOINT_URL`` points them at a local endpoint).
    - ``metrics_namespace``: default env ``CDC_METRICS_NAMESPACE``, else ``"CdcConstructs"``,
      where the Monitoring construct's alarms look.
    - ``safety_margin_ms``: stop taking records when less invocation time is left; default
      :data:`cdc_consumer.defaults.SAFETY_MARGIN_MS` (5 s, see there for why).
    - ``clock``: epoch seconds; default ``time.time`` (tests pass their own).

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
        safety_margin_ms: int = defaults.SAFETY_MARGIN_MS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if safety_margin_ms < 0:
            raise ConfigurationError(
                f"safety_margin_ms must be >= 0 milliseconds, got {safety_margin_ms}"
            )
        self.consumer_name = consumer_name
        self.idempotency_table = idempotency_table
        self.quarantine_queue_url = quarantine_queue_url
        self.metrics_namespace = metrics_namespace
        self.safety_margin_ms = safety_margin_ms
        self.clock = clock
        self._dynamodb = dynamodb_client
        self._sqs = sqs_client
        self.projections: list[Projection] = []
        self.side_effects: list[tuple[str, SideEffect]] = []

    # --- registration -------------------------------------------------------------------

    def projection(self, function: P) -> P:
        """Register a projection: ``change -> list of TransactWriteItems actions``.

        Its actions commit in one transaction with the record's processed-marker, so each
        takes effect exactly once. Projections run in registration order; their actions are
        concatenated. Return ``[]`` for a change that does not concern the projection.
        Raise :class:`PermanentError` for a change it can never interpret (quarantined); pass
        it ``actions=`` to have compensating actions committed for the quarantined record
        (exactly once, after its quarantine message is sent; see :meth:`_Batch.compensate`).
        When one projection raises, the record's other projections' actions are not applied.
        """
        self.projections.append(function)
        return function

    def side_effect(self, function: S | None = None, *, name: str | None = None) -> Any:
        """Register a side effect: ``change -> None``, an external call made once per record.

        Usable as ``@processor.side_effect`` or ``@processor.side_effect(name="notify")``.
        ``name`` (default: the function's ``__name__``) is part of the claim id
        ``{consumer}#{eventID}#{name}``; keep it stable across deployments.
        """

        def register(function: S) -> S:
            claim_name = name or function.__name__
            if any(existing == claim_name for existing, _ in self.side_effects):
                raise ConfigurationError(
                    f"a side effect named {claim_name!r} is already registered; pass name="
                )
            self.side_effects.append((claim_name, function))
            return function

        return register if function is None else register(function)

    # --- processing ---------------------------------------------------------------------

    def handle(
        self, event: Mapping[str, Any], context: LambdaContext | None = None
    ) -> dict[str, list[dict[str, str]]]:
        """Process a Lambda DynamoDB stream event; return the partial batch response.

        Returns ``{"batchItemFailures": []}`` when every record was applied, skipped as a
        duplicate or quarantined, else ``{"batchItemFailures": [{"itemIdentifier": seq}]}``
        with the sequence number of the first record not applied; nothing after it was
        applied. A bad record never raises. Raises :class:`ConfigurationError` when a name
        is missing, and :class:`MalformedBatchError` when the event has no ``Records`` list or
        a record has no sequence number: such a record cannot be reported alone, so the whole
        batch fails (a function error, which Lambda retries and bisects, and which alarms).
        """
        if not self.projections and not self.side_effects:
            raise ConfigurationError(
                "the processor has neither a projection nor a side effect: register one with "
                "@processor.projection or @processor.side_effect"
            )
        settings = self.settings()
        started = self.clock()
        batch = _Batch(self, settings, context)
        try:
            records = _records_of(event)
        except MalformedBatchError as error:
            batch.metrics.batch_failures = 1
            logs.log(
                "ERROR",
                "batch rejected",
                consumer=settings.consumer,
                error=logs.describe_error(error),
            )
            metrics.emit(
                settings.metrics_namespace, settings.consumer, batch.metrics, now=self.clock()
            )
            raise
        failed = batch.run(records)
        batch.metrics.batch_failures = int(failed is not None)
        logs.log(
            "INFO",
            "batch processed",
            consumer=settings.consumer,
            records=len(records),
            processed=batch.metrics.records_processed,
            duplicates=batch.metrics.duplicates_skipped,
            quarantined=batch.metrics.records_quarantined,
            transactions=batch.transactions,
            failedSequenceNumber=failed,
            firstSequenceNumber=_sequence_number(records[0]) if records else None,
            lastSequenceNumber=_sequence_number(records[-1]) if records else None,
            durationMs=round((self.clock() - started) * 1000),
        )
        metrics.emit(settings.metrics_namespace, settings.consumer, batch.metrics, now=self.clock())
        return {"batchItemFailures": [] if failed is None else [{"itemIdentifier": failed}]}

    def settings(self) -> Settings:
        """The names this invocation uses; :class:`ConfigurationError` names what is missing."""
        problems = []
        resolved: dict[str, str] = {}
        for attribute, variable in (
            ("consumer_name", defaults.CONSUMER_NAME_ENV),
            ("idempotency_table", defaults.IDEMPOTENCY_TABLE_ENV),
            ("quarantine_queue_url", defaults.QUARANTINE_QUEUE_ENV),
        ):
            value: str = getattr(self, attribute) or os.environ.get(variable) or ""
            if not value:
                problems.append(
                    f"{attribute} (pass it, or set the environment variable {variable})"
                )
            resolved[attribute] = value
        if problems:
            raise ConfigurationError("StreamProcessor is missing: " + "; ".join(problems))
        return Settings(
            consumer=resolved["consumer_name"],
            idempotency_table=resolved["idempotency_table"],
            quarantine_queue_url=resolved["quarantine_queue_url"],
            metrics_namespace=self.metrics_namespace
            or os.environ.get(defaults.METRICS_NAMESPACE_ENV)
            or defaults.METRICS_NAMESPACE,
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


def _records_of(event: Mapping[str, Any]) -> list[Any]:
    """The event's records, checked before anything is applied.

    A record without a sequence number cannot be named in ``batchItemFailures``. Lambda would
    also fail the whole batch for an empty ``itemIdentifier``, but we raise instead: a function
    error shows in the function's Errors metric and alarm, Lambda's bisect-on-error splits the
    batch so the other records still get through, and redrive and the local pipeline read an
    exception as "the whole batch failed" without a special case.
    """
    records = event.get("Records") if isinstance(event, Mapping) else None
    if not isinstance(records, list):
        raise MalformedBatchError(
            f"a DynamoDB stream event is {{'Records': [...]}}, got {str(event)[:200]}"
        )
    for position, record in enumerate(records):
        if _sequence_number(record) is None:
            raise MalformedBatchError(
                f"record {position} (eventID {_event_id(record)!r}) has no "
                "dynamodb.SequenceNumber (kinesis.sequenceNumber for a Kinesis record), so it "
                "cannot be reported alone; failing the batch"
            )
    return records


def _sequence_number(record: Any) -> str | None:
    # A Kinesis record is named by its Kinesis sequence number (docs/design.md §9).
    return item_identifier(record)


def _event_id(record: Any) -> Any:
    return record.get("eventID") if isinstance(record, Mapping) else None


@dataclass(frozen=True)
class _Stop:
    """Stop: report the record at ``position`` (nothing from it on was applied)."""

    position: int


@dataclass(frozen=True)
class _Resume:
    """Go on from ``position`` (the records before it are done)."""

    position: int


_Step = _Stop | _Resume | None


@dataclass
class _Batch:
    """The state of one :meth:`StreamProcessor.handle` call."""

    processor: StreamProcessor
    settings: Settings
    context: LambdaContext | None
    metrics: metrics.BatchMetrics = field(default_factory=metrics.BatchMetrics)
    group: TransactionGroup = field(default_factory=TransactionGroup)
    changes: dict[int, Change] = field(default_factory=dict)
    duplicate_positions: set[int] = field(default_factory=set)
    transactions: int = 0
    records: list[Any] = field(default_factory=list)

    def run(self, records: list[Any]) -> str | None:
        """Process ``records``; the sequence number to report, or None if all are done."""
        self.records = records
        position = 0
        while True:
            if position >= len(records):
                step = self.flush()
                if step is None:
                    return None
            elif self.near_deadline():
                step = self.flush()
                if step is None:
                    logs.log(
                        "WARNING",
                        "record failed",
                        consumer=self.settings.consumer,
                        sequenceNumber=_sequence_number(records[position]),
                        eventID=_event_id(records[position]),
                        reason="deadline",
                        remainingMs=self.remaining_ms(),
                        safetyMarginMs=self.processor.safety_margin_ms,
                    )
                    return _sequence_number(records[position])
            else:
                step = self.take(position)
                if step is None:
                    position += 1
                    continue
            if isinstance(step, _Stop):
                return _sequence_number(records[step.position])
            position = step.position

    # --- one record ---------------------------------------------------------------------

    def take(self, position: int) -> _Step:
        record = self.records[position]
        try:
            change = Change.from_record(record)
        except UndecodableRecordError as error:
            return self.poison(position, error)
        self.changes[position] = change
        self.metrics.saw_record_time(change.approximate_creation_time)
        if self.processor.projections:
            try:
                writes = self.project(position, change)
            except PermanentError as error:
                if error.actions:
                    return self.compensate(position, change, error)
                return self.poison(position, error)
            except Exception as error:  # user code: anything but PermanentError is transient
                return self.transient(position, error)
            if not self.group.fits(writes):
                step = self.flush()
                if step is not None:
                    return step
            self.group.add(writes)
        if not self.processor.side_effects:
            return None
        step = self.flush()
        if step is not None:
            return step
        return self.run_side_effects(position, change)

    def project(self, position: int, change: Change) -> RecordWrites:
        actions: list[Any] = []
        for projection in self.processor.projections:
            actions.extend(action_list(projection(change)))
        return RecordWrites.build(
            position, self.marker(change), actions, self.settings.idempotency_table
        )

    def compensate(self, position: int, change: Change, error: PermanentError) -> _Step:
        """Quarantine a poison record, then commit its marker with the compensating actions
        its projection's error carries (its OLD image's contribution taken back, say).

        Order: everything before the record is committed, then the quarantine message is
        sent, then the marker and actions join the transaction group like any record's (and
        commit with it, exactly once: a redelivery finds the marker and writes nothing). The
        message goes FIRST because a quarantine report must never be lost: the view changes
        for a poison record only once its report is in the queue, and if the send fails
        nothing of the record is committed, so it is reported to Lambda and retried from the
        same state. The price is a second message for the same record when it is delivered
        again (a later transient failure, a redelivery after success): at-least-once, which
        the queue's readers (redrive, operators) must tolerate anyway.
        """
        try:
            writes = RecordWrites.build(
                position,
                self.marker(change),
                error.actions,
                self.settings.idempotency_table,
                quarantined=True,
            )
        except InvalidActionError as invalid:
            # The compensation itself is unusable: quarantine without it, naming both.
            return self.poison(
                position,
                InvalidActionError(f"{error}; and its compensating actions are invalid: {invalid}"),
            )
        step = self.poison(position, error)
        if step is not None:
            return step
        self.group.add(writes)  # the group is empty: poison() committed it
        return None

    def marker(self, change: Change) -> dict[str, Any]:
        return marker_action(
            self.settings.idempotency_table,
            f"{self.settings.consumer}#{change.event_id}",
            int(self.processor.clock()) + defaults.marker_ttl_seconds(),
        )

    def run_side_effects(self, position: int, change: Change) -> _Step:
        claims = SideEffectClaims(
            self.processor.dynamodb, self.settings.idempotency_table, self.processor.clock
        )
        ran = False
        for name, side_effect in self.processor.side_effects:
            claim_id = f"{self.settings.consumer}#{change.event_id}#{name}"
            try:
                if claims.claim(claim_id, self.remaining_ms()) is Claim.ALREADY_COMPLETED:
                    continue
            except TransientError as error:
                return self.transient(position, error)
            try:
                side_effect(change)
            except Exception as error:
                try:
                    claims.release(claim_id)
                except TransientError as release_error:
                    logs.log(
                        "WARNING",
                        "side effect claim not released",
                        consumer=self.settings.consumer,
                        claimId=claim_id,
                        error=logs.describe_error(release_error),
                    )
                if isinstance(error, PermanentError):
                    return self.poison(position, error)
                return self.transient(position, error)
            ran = True
            try:
                claims.complete(claim_id)
            except TransientError as error:
                return self.transient(position, error)
        projected = bool(self.processor.projections)
        if ran or (projected and position not in self.duplicate_positions):
            self.count_applied(position)
        else:
            self.metrics.duplicates_skipped += 1
        return None

    # --- outcomes -----------------------------------------------------------------------

    def flush(self) -> _Step:
        """Commit the pending group. Poison found there is quarantined, then we resume after
        it; a transient failure stops at the failing record."""
        if not self.group:
            return None
        pending = self.group.take()
        self.transactions += 1
        outcome = commit(self.processor.dynamodb, pending)
        for writes in outcome.committed:
            if not self.processor.side_effects and not writes.quarantined:
                self.count_applied(writes.position)
        for writes in outcome.duplicates:
            if writes.quarantined:
                continue  # counted as quarantined when its message was sent
            self.duplicate_positions.add(writes.position)
            if not self.processor.side_effects:
                self.metrics.duplicates_skipped += 1
        if outcome.failed is None:
            return None
        position = outcome.failed.position
        if isinstance(outcome.error, PermanentError):
            return self.quarantine(position, outcome.error) or _Resume(position + 1)
        return self.fail(position, outcome.error)

    def poison(self, position: int, error: Exception) -> _Step:
        """Quarantine the record after committing everything before it; then go on."""
        step = self.flush()
        if step is not None:
            return step
        return self.quarantine(position, error)

    def transient(self, position: int, error: Exception) -> _Step:
        """Commit everything before the record, then stop at it."""
        step = self.flush()
        if step is not None:
            return step
        return self.fail(position, error)

    def quarantine(self, position: int, error: Exception) -> _Stop | None:
        record = self.records[position]
        try:
            message_id = send_to_quarantine(
                self.processor.sqs,
                self.settings.quarantine_queue_url,
                self.settings.consumer,
                record,
                error,
            )
        except TransientError as send_error:
            return self.fail(position, send_error, cause=error)
        self.metrics.records_quarantined += 1
        logs.log(
            "ERROR",
            "record quarantined",
            consumer=self.settings.consumer,
            sequenceNumber=_sequence_number(record),
            eventID=_event_id(record),
            error=logs.describe_error(error),
            messageId=message_id,
        )
        return None

    def fail(self, position: int, error: Exception | None, cause: Exception | None = None) -> _Stop:
        record = self.records[position]
        fields: dict[str, Any] = {}
        if cause is not None:
            fields["poisonError"] = logs.describe_error(cause)
        logs.log(
            "ERROR",
            "record failed",
            consumer=self.settings.consumer,
            sequenceNumber=_sequence_number(record),
            eventID=_event_id(record),
            reason="transient",
            error=logs.describe_error(error) if error else None,
            **fields,
        )
        return _Stop(position)

    def count_applied(self, position: int) -> None:
        self.metrics.records_processed += 1
        change = self.changes.get(position)
        if change is not None and change.is_ttl_expiry:
            self.metrics.ttl_expiries += 1

    # --- deadline -----------------------------------------------------------------------

    def remaining_ms(self) -> int | None:
        if self.context is None:
            return None
        return int(self.context.get_remaining_time_in_millis())

    def near_deadline(self) -> bool:
        remaining = self.remaining_ms()
        return remaining is not None and remaining < self.processor.safety_margin_ms
