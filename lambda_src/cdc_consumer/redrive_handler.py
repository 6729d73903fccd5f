"""The provisioned redrive function: ``cdc_consumer.redrive_handler.handler``.

Invoke it by hand (console, ``aws lambda invoke``) once the consumer's fault is fixed; it drains
the on-failure queue and then the quarantine queue into the consumer function, within its
remaining time, and returns the reports. It is deliberately not triggered by the queues: an
automatic redrive of a consumer that still fails would loop.

Environment (set by the StreamRedrive construct):

    CONSUMER_FUNCTION_NAME   the consumer function to invoke synchronously
    STREAM_ARN               the consumer's stream; messages of other streams are refused
    ON_FAILURE_QUEUE_URL     the event source mapping's on-failure queue (an SQS destination)
    ON_FAILURE_BUCKET_NAME   the event source mapping's S3 on-failure destination (instead)
    ON_FAILURE_PREFIX        where its objects are (default aws/lambda/: those of every
                             mapping of the consumer function on the stream, a replaced
                             mapping's too; cdc_consumer.redrive.mapping_prefixes)
    EVENT_SOURCE_MAPPING_UUID  the consumer's current mapping: always one of them
    QUARANTINE_QUEUE_URL     the runtime's quarantine queue (optional; on either route)
    CDC_CONSUMER_NAME        the consumer name: metric dimension, quarantine message check
    CDC_METRICS_NAMESPACE    EMF namespace, default "CdcConstructs" (interfaces §3)
    CONSUMER_FILTERS         the event source mapping's filter patterns, a JSON list (optional)
    REDRIVE_RESERVE_SECONDS  no message is started later than this before the deadline
    CDC_MARKER_TTL_SECONDS   the consumer's marker lifetime: an object or message whose failure
                             is older is refused, neither replayed nor deleted
    IDEMPOTENCY_TABLE_NAME   the consumer's idempotency table: each run takes the consumer's
                             redrive lease there first (cdc_consumer.redrive.lease)
    CDC_REDRIVE_SOURCE_MODULES  modules to import first, each registering a failure source kind
                             defined outside the runtime (a failure kind's redrive_source)

Event (all optional): ``{"source": "on-failure" | "quarantine" | "all" (default "all"),
"maxMessages": int (default 100), "dryRun": bool (default false)}``. ``{"check":
"failure-age"}`` (the construct's schedule) replays nothing: it measures how long the oldest
failed batch of an S3 destination has waited and prints it as a metric
(:mod:`cdc_consumer.redrive.age_check`). ``"on-failure"`` reads
whatever destination the consumer has: the bucket when ``ON_FAILURE_BUCKET_NAME`` is set (each
object holds its batch), else the queue (pointers, read back from the stream): each source is
found by its kind (:mod:`cdc_consumer.redrive.sources`), and replayed by the one driver.

Each run prints one JSON log line per queue and one EMF line with RedriveLostRecords,
RedriveRecordsReplayed and RedriveFailedMessages (dimension Consumer), so an alarm fires when
records were lost.

When another redrive of the consumer (a command line, say) holds its lease, the run touches
nothing and stops: the response says ``"busy"`` (who holds the lease until when) with
``"retryLater": true``; invoke it again once that one ended.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from cdc_consumer.environment_variables import (
    CONSUMER_FILTERS_ENV,
    CONSUMER_FUNCTION_NAME_ENV,
    CONSUMER_GROUP_ENV,
    CONSUMER_NAME_ENV,
    IDEMPOTENCY_TABLE_ENV,
    MAPPING_UUID_ENV,
    MARKER_TTL_ENV,
    METRICS_NAMESPACE_ENV,
    REDRIVE_RESERVE_SECONDS_ENV,
    STREAM_ARN_ENV,
)
from cdc_consumer.group_member_spec import GroupMemberSpec
from cdc_consumer.message_fields import ContractError
from cdc_consumer.metric_names import (
    CONSUMER_DIMENSION,
    DEFAULT_METRICS_NAMESPACE,
    REDRIVE_FAILED_MESSAGES,
    REDRIVE_LOST_RECORDS,
    REDRIVE_METRICS,
    REDRIVE_RECORDS_REPLAYED,
)
from cdc_consumer.redrive import LambdaInvoker, Redrive, RedriveReport, Source, sources
from cdc_consumer.redrive_shapes import FAILURE_AGE_CHECK, RedriveCause

#: Messages per invocation unless the event says otherwise: a bounded run, so one invocation
#: cannot spend its whole time on a queue that keeps filling up.
DEFAULT_MAX_MESSAGES = 100
#: Time kept in reserve before the function's deadline: no new message is started later than
#: this, so the one in flight (a synchronous consumer invoke) can finish and the report is logged.
#: The construct sets it from the consumer's timeout.
DEFAULT_RESERVE_SECONDS = 60


def _required(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name, "")
    if not value:
        raise RuntimeError(
            f"environment variable {name} is not set; the StreamRedrive construct sets it"
        )
    return value


def _filters(text: str) -> list[dict[str, Any]]:
    if not text:
        return []
    try:
        filters = json.loads(text)
    except ValueError as error:
        raise RuntimeError(
            f"{CONSUMER_FILTERS_ENV} is not JSON ({error}): {text[:120]!r}"
        ) from None
    if not isinstance(filters, list):
        raise RuntimeError(
            f"{CONSUMER_FILTERS_ENV} is {text[:120]!r}; expected a JSON list of patterns"
        )
    return filters


def emf_line(
    reports: list[RedriveReport],
    consumer: str,
    namespace: str,
    now_ms: int | None = None,
    latest: list[RedriveReport] | None = None,
) -> dict[str, Any]:
    """One CloudWatch embedded-metric-format record summing ``reports``: records replayed by
    every run, records lost and messages failed (or held) as each source's last run
    (``latest``, default ``reports``) left them."""
    latest = reports if latest is None else latest
    return {
        "_aws": {
            "Timestamp": now_ms if now_ms is not None else int(time.time() * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": namespace,
                    "Dimensions": [[CONSUMER_DIMENSION]],
                    "Metrics": [{"Name": m.name, "Unit": m.unit} for m in REDRIVE_METRICS],
                }
            ],
        },
        CONSUMER_DIMENSION: consumer,
        REDRIVE_LOST_RECORDS.name: sum(r.lost_record_count for r in latest),
        REDRIVE_RECORDS_REPLAYED.name: sum(r.records_replayed for r in reports),
        REDRIVE_FAILED_MESSAGES.name: sum(
            len(r.failed) + len(r.held) + len(r.refused) for r in latest
        ),
    }


def handler(
    event: Mapping[str, Any] | None,
    context: Any,
    *,
    redrive: Redrive | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Drain the consumer's on-failure destination and quarantine queue; ``redrive`` and
    ``environ`` are injectable for tests. ``STREAM_ARN`` may be either route's stream."""
    environ = os.environ if environ is None else environ
    event = event or {}
    sources.import_modules(sources.modules_of(environ))  # kinds defined outside the runtime
    if event.get("check") is not None:
        return _check(event, environ)
    consumer = environ.get(CONSUMER_NAME_ENV, "") or _required(environ, CONSUMER_FUNCTION_NAME_ENV)
    if redrive is None:
        redrive = _redrive(environ)
    if isinstance(redrive, Redrive):  # what it quarantines again holds nothing
        redrive.set_aside_since_ms = int(time.time() * 1000)
    wanted = str(event.get("source", "all"))
    queues = {source: sources.located(source, environ) or "" for source in Source}
    if wanted not in ("all", *queues):
        raise ValueError(
            f"event source is {wanted!r}; expected 'on-failure', 'quarantine' or 'all'"
        )
    reserve_ms = 1000 * float(environ.get(REDRIVE_RESERVE_SECONDS_ENV, DEFAULT_RESERVE_SECONDS))

    def should_stop() -> bool:
        return context is not None and context.get_remaining_time_in_millis() < reserve_ms

    budget = int(event.get("maxMessages", DEFAULT_MAX_MESSAGES))
    reports: list[RedriveReport] = []
    latest: dict[Source, RedriveReport] = {}
    # The second round: an on-failure object held for the quarantine's earlier change goes once
    # the quarantine replayed it (docs/design.md §5, "no change ahead of an earlier pending one").
    rounds = [*queues.items(), (Source.ON_FAILURE, queues[Source.ON_FAILURE])]
    for round_index, (source, queue_url) in enumerate(rounds):
        if wanted not in ("all", source.value) or not queue_url or budget <= 0:
            continue
        if round_index == len(queues) and not _worth_another_round(latest):
            continue
        report = _run(redrive, source, queue_url, event, budget, should_stop)
        budget -= report.messages_received + report.messages_deferred
        print(json.dumps(report.to_log(), default=str))
        reports.append(report)
        latest[source] = report
        if report.busy is not None:
            break  # another redrive holds the lease: every further round would find it so
    namespace = environ.get(METRICS_NAMESPACE_ENV) or DEFAULT_METRICS_NAMESPACE
    print(json.dumps(emf_line(reports, consumer, namespace, latest=list(latest.values()))))
    return _result(reports, list(latest.values()))


def _check(event: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """A scheduled check, not a redrive: nothing is replayed or deleted."""
    if event["check"] != FAILURE_AGE_CHECK:
        raise ValueError(f"event check is {event['check']!r}; expected {FAILURE_AGE_CHECK!r}")
    from cdc_consumer.redrive.age_check import check_failure_age  # the check's only caller

    return check_failure_age(environ)


def _worth_another_round(latest: Mapping[Source, RedriveReport]) -> bool:
    """Whether the on-failure run held an object for the quarantine's earlier change and the
    quarantine run since replayed something."""
    on_failure, quarantine = latest.get(Source.ON_FAILURE), latest.get(Source.QUARANTINE)
    return (
        on_failure is not None
        and quarantine is not None
        and quarantine.messages_deleted > 0
        and any(held.cause is RedriveCause.EARLIER_CHANGE_IN_QUARANTINE for held in on_failure.held)
    )


def _redrive(environ: Mapping[str, str]) -> Redrive:
    """The redrive the StreamRedrive construct's environment describes (of either route: the
    stream's, :func:`~cdc_consumer.routes.replay.route_of_stream`)."""
    function_name = _required(environ, CONSUMER_FUNCTION_NAME_ENV)
    bucket, prefix = sources.on_failure_bucket(environ)
    return Redrive(
        invoker=LambdaInvoker(function_name),
        stream_arn=_required(environ, STREAM_ARN_ENV),
        consumer_name=environ.get(CONSUMER_NAME_ENV) or None,
        member_names=_member_names(environ.get(CONSUMER_GROUP_ENV, "")),
        function_name=function_name,
        quarantine_queue_url=sources.located(Source.QUARANTINE, environ),
        mapping_uuid=environ.get(MAPPING_UUID_ENV) or None,
        on_failure_bucket=bucket,
        on_failure_prefix=prefix,
        filters=_filters(environ.get(CONSUMER_FILTERS_ENV, "")),
        marker_ttl_seconds=_marker_ttl(environ),
        lease_table=environ.get(IDEMPOTENCY_TABLE_ENV) or None,
    )


def _marker_ttl(environ: Mapping[str, str]) -> int | None:
    """The consumer's marker lifetime (``CDC_MARKER_TTL_SECONDS``, set by the construct): older
    failures are refused. None when unset (a redrive set up by hand: no age check)."""
    value = environ.get(MARKER_TTL_ENV, "")
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise RuntimeError(
            f"{MARKER_TTL_ENV} is {value!r}; expected the consumer's marker lifetime in whole"
            " seconds; the StreamConsumer construct sets it"
        )
    return int(value)


def _run(
    redrive: Redrive,
    source: Source,
    where: str,
    event: Mapping[str, Any],
    budget: int,
    should_stop: Callable[[], bool],
) -> RedriveReport:
    """Redrive one source, wherever its kind keeps it (:mod:`cdc_consumer.redrive.sources`)."""
    return redrive.run(
        where,
        source,
        dry_run=bool(event.get("dryRun", False)),
        max_messages=budget,
        should_stop=should_stop,
    )


def _result(reports: list[RedriveReport], latest: list[RedriveReport]) -> dict[str, Any]:
    """The function's response: whether all went well (each source's last run), the counts to
    act on, every run's report."""
    return {
        "ok": all(r.ok for r in latest),
        "lostRecords": sum(r.lost_record_count for r in latest),
        "keptMessages": sum(len(r.kept) for r in latest),
        "heldMessages": sum(len(r.held) for r in latest),
        "refusedMessages": sum(len(r.refused) for r in latest),
        "requarantinedRecords": sum(len(r.requarantined) for r in reports),
        "busy": next((r.busy.reason for r in latest if r.busy is not None), None),
        "retryLater": any(r.busy is not None for r in latest),
        "reports": [r.to_log() for r in reports],
    }


def _member_names(value: str) -> tuple[str, ...]:
    """The consumer group's member names (``CDC_CONSUMER_GROUP``), none when unset."""
    if not value:
        return ()
    try:
        return tuple(spec.name for spec in GroupMemberSpec.decode(value))
    except ContractError as error:
        raise RuntimeError(f"{error}; the StreamConsumer construct sets it") from None
