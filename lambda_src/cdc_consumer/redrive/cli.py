"""The command line: ``python -m cdc_consumer.redrive --help``."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from cdc_consumer.environment_variables import (
    CONSUMER_GROUP_ENV,
    CONSUMER_NAME_ENV,
    IDEMPOTENCY_TABLE_ENV,
    MAPPING_UUID_ENV,
    MARKER_TTL_ENV,
    ON_FAILURE_BUCKET_ENV,
    QUARANTINE_QUEUE_ENV,
)
from cdc_consumer.exceptions import RedriveSetupError
from cdc_consumer.filter_patterns import check_filter_pattern
from cdc_consumer.group_member_spec import GroupMemberSpec
from cdc_consumer.message_fields import ContractError
from cdc_consumer.redrive import sources
from cdc_consumer.redrive.access import check_stream_arn
from cdc_consumer.redrive.defaults import (
    DEFAULT_LEASE_WAIT_SECONDS,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PUT_ATTEMPTS,
    LAMBDA_READ_TIMEOUT_SECONDS,
)
from cdc_consumer.redrive.interrupts import EXIT_INTERRUPTED, sigterm_as_keyboard_interrupt
from cdc_consumer.redrive.invokers import CallableInvoker, Invoker, LambdaInvoker
from cdc_consumer.redrive.messages import Source, clip
from cdc_consumer.redrive.pipe_dlq import PipeDlqRedrive
from cdc_consumer.redrive.pipe_events import EventShape
from cdc_consumer.redrive.replay import Redrive
from cdc_consumer.redrive.report import RedriveReport
from cdc_consumer.redrive.scope import Scope, consumer_scope
from cdc_consumer.redrive.sources import bucket_where
from cdc_consumer.redrive_shapes import ON_FAILURE_S3_PREFIX
from cdc_consumer.routes.replay import ROUTES, route_of_stream

__all__ = [
    "EXIT_BUSY",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_OK",
    "EXIT_OK",
    "EXIT_SETUP",
    "build_parser",
    "main",
]

#: Exit status: everything replayed (or nothing to do).
EXIT_OK = 0
#: Exit status: the run finished, but something was lost, failed, kept (another consumer's or
#: stream's) or quarantined again; the report says which, by message and sequence number.
EXIT_NOT_OK = 1
#: Exit status: an operator mistake stopped the run before it touched anything.
EXIT_SETUP = 2
#: Exit status: another redrive of the consumer held its lease past --lease-wait-seconds; this
#: run touched nothing (or stopped when it lost the lease midway): run it again later. BSD's
#: EX_TEMPFAIL, "try again later".
EXIT_BUSY = 75
#: The console script's name (pyproject.toml [project.scripts]): what usage and errors call it
#: (``python -m cdc_consumer.redrive`` is the same program).
PROG = "cdc-redrive"
#: The option that selects the fan-out pipe dead-letter queue mode (its own options).
PIPE_DLQ_OPTION = "--pipe-dlq-queue-url"


class _Parser(argparse.ArgumentParser):
    """argparse, but an unreadable command line is one line (what to fix) and exit 2."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        raise RedriveSetupError(f"{message} (see --help)")


def _load_handler(spec: str, paths: Sequence[str]) -> Callable[[dict[str, Any], Any], Any]:
    """Import ``module:function`` (``module.function`` also works) after adding ``paths``."""
    for path in reversed(paths):
        if path not in sys.path:
            sys.path.insert(0, path)
    module_name, sep, attribute = spec.partition(":")
    if not sep:
        module_name, _, attribute = spec.rpartition(".")
    if not module_name or not attribute:
        raise RedriveSetupError(f"--handler {spec!r} is not module:function (e.g. index:handler)")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # any import-time failure is the operator's to fix
        raise RedriveSetupError(
            f"--handler {spec!r}: cannot import {module_name} ({type(error).__name__}: {error});"
            " add its directory with --path DIR and the runtime layer to PYTHONPATH"
        ) from None
    handler = getattr(module, attribute, None)
    if not callable(handler):
        raise RedriveSetupError(f"--handler {spec!r}: {module_name} has no callable {attribute!r}")
    return handler


def _progress_printer(total: int | None) -> Callable[[int, RedriveReport], None]:
    def show(done: int, report: RedriveReport) -> None:
        width = 30
        if total:
            filled = min(width, width * done // max(total, 1))
            bar = f"[{'#' * filled}{'.' * (width - filled)}] {done}/~{total}"
        else:
            bar = f"{done} message(s)"
        sys.stderr.write(
            f"\r{bar} replayed {report.records_replayed} lost {report.lost_record_count}"
            f" failed {len(report.failed)}"
        )
        sys.stderr.flush()

    return show


def _queue_depth(sqs_client: Any, queue_url: str) -> int | None:
    try:
        attributes = sqs_client.get_queue_attributes(
            QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"])
    except (ClientError, KeyError, ValueError):
        return None  # only the progress bar's total; not worth failing the redrive over


def _json_pattern(text: str) -> dict[str, Any]:
    try:
        pattern = json.loads(text)
        check_filter_pattern(pattern)
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"{clip(text)!r} is not a filter pattern: {error}"
        ) from None
    return pattern


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description=(
            "Replay what a DynamoDB stream consumer failed on: the batches its on-failure"
            " destination holds (an S3 bucket's objects carry the batch itself; an SQS queue's"
            " messages point at records read back from the stream) or the records in its"
            " quarantine queue."
            " Deletes a message only after all its records succeeded; never replays or deletes"
            " another consumer's or stream's message (kept, reported); reports records the"
            " stream no longer holds as lost. Exit status 0: all replayed; 1: something was"
            " lost, failed, kept or quarantined again (see the report); 2: an operator mistake"
            " (one line says what to fix), nothing touched; 75: another redrive of the consumer"
            " holds its lease (nothing touched: run again later); 130: stopped by Ctrl-C or SIGTERM"
            " (what was not replayed yet stays where it was: run it again)."
        ),
        epilog=(
            f"A fan-out pipe's dead-letter queue (StreamFanOut, OutboxPublisher):"
            f" {PROG} {PIPE_DLQ_OPTION} URL --stream-arn ARN --event-bus-name NAME"
            " --event-source SOURCE --detail-type TYPE [--input-template TEMPLATE]"
            " [--resource ARN]: no consumer is invoked; records the stream no longer holds are"
            " reported lost by sequence number and their message kept (exit 1)."
        ),
    )
    _add_source_arguments(parser)
    _add_consumer_arguments(parser)
    _add_pipe_event_arguments(parser)
    _add_scope_arguments(parser)
    _add_run_arguments(parser)
    return parser


def _add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the failed batches are: a queue (on-failure or quarantine) or a bucket."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--queue-url", help="the on-failure or quarantine queue")
    where.add_argument(
        "--bucket",
        help="the S3 on-failure destination: its objects hold the failed batches themselves",
    )
    where.add_argument(
        "--location",
        metavar="WHERE",
        help="a failure source of a kind a --source-module registers: where it is, as that"
        " kind names it (e.g. the destination's ARN)",
    )
    parser.add_argument(
        "--source-module",
        metavar="MODULE",
        action="append",
        default=[],
        help="import MODULE first (repeatable): it registers a failure source kind defined"
        " outside the runtime (cdc_consumer.redrive.sources.register); it must be importable"
        " (PYTHONPATH)",
    )
    where.add_argument(
        PIPE_DLQ_OPTION,
        metavar="URL",
        help="a fan-out pipe's dead-letter queue (StreamFanOut, OutboxPublisher): its records"
        " are read back from the stream and put on the pipe's bus (--event-bus-name,"
        " --event-source, --detail-type, --input-template, --resource: the pipe's target"
        " parameters, aws pipes describe-pipe --name PIPE --query TargetParameters); a message is"
        " deleted once all its records were delivered (PutEvents, at most 10 entries and 256 KB"
        " a call, failed entries sent again --max-attempts rounds)",
    )
    parser.add_argument(
        "--prefix",
        default=ON_FAILURE_S3_PREFIX,
        help=f"with --bucket, the objects under this prefix (default {ON_FAILURE_S3_PREFIX}; e.g."
        " aws/lambda/<mapping UUID>/ for one mapping)",
    )
    parser.add_argument(
        "--source",
        choices=[s.value for s in Source],
        default=Source.ON_FAILURE.value,
        help="what the queue holds (default: on-failure)",
    )
    parser.add_argument(
        "--quarantine",
        dest="source",
        action="store_const",
        const=Source.QUARANTINE.value,
        help="same as --source quarantine",
    )


def _add_scope_arguments(parser: argparse.ArgumentParser) -> None:
    """Which consumer's batches and records: its mapping, function and group members."""
    parser.add_argument(
        "--mapping-uuid",
        help="with --bucket, replay only the objects this event source mapping wrote (as does"
        " --prefix aws/lambda/<UUID>/). Default: the current mapping from"
        f" ${MAPPING_UUID_ENV}, else the one mapping of --function-name on --stream-arn, and"
        " the objects of every mapping of that function on the stream (a replaced one's too);"
        " a bucket may hold several consumers' batches, so without a mapping the run does not"
        " start",
    )
    parser.add_argument(
        "--consumer-function",
        help="with --handler and an on-failure queue, the consumer function whose mapping"
        " wrote the messages: only its are replayed (--function-name is that function)",
    )
    parser.add_argument(
        "--on-failure-bucket",
        help="with --quarantine, the consumer's S3 on-failure destination: a quarantined record"
        " waits while it holds an earlier change of the record's item (default:"
        f" ${ON_FAILURE_BUCKET_ENV}; the mapping as for --bucket)",
    )
    parser.add_argument(
        "--member",
        dest="members",
        action="append",
        default=[],
        metavar="NAME",
        help="a member of the consumer group behind the function (repeatable): its quarantine"
        " messages are replayed through the group, as the redrive function does (default: the"
        f" members ${CONSUMER_GROUP_ENV} declares, else --function-name's environment)",
    )


def _add_consumer_arguments(parser: argparse.ArgumentParser) -> None:
    """The consumer replayed into: its stream, function or handler, name, queue and filters."""
    parser.add_argument(
        "--stream-arn",
        required=True,
        help="the consumer's stream, of any route: "
        + " or ".join(f"a {route.name} ({route.arn_shape})" for route in ROUTES),
    )
    target = parser.add_mutually_exclusive_group()  # one of them unless --pipe-dlq-queue-url
    target.add_argument("--function-name", help="invoke this Lambda function synchronously")
    target.add_argument(
        "--handler",
        help="call this handler in-process instead, as module:function (local pipeline)",
    )
    parser.add_argument(
        "--path",
        action="append",
        default=[],
        metavar="DIR",
        help="directory to import --handler from (repeatable)",
    )
    parser.add_argument(
        "--consumer-name",
        help="the consumer's name: only its quarantine messages are replayed (default:"
        f" ${CONSUMER_NAME_ENV}, else the --function-name's environment)",
    )
    parser.add_argument(
        "--quarantine-queue-url",
        help="the consumer's quarantine queue, where an on-failure run looks for records it"
        f" replayed that were quarantined again (default: ${QUARANTINE_QUEUE_ENV})",
    )
    parser.add_argument(
        "--filter",
        dest="filters",
        action="append",
        default=[],
        type=_json_pattern,
        metavar="PATTERN",
        help="the event source mapping's filter pattern, as JSON (repeatable): records of a"
        " range that match none are not replayed",
    )


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """How much one run does, where it calls, and what it prints."""
    parser.add_argument(
        "--endpoint-url",
        metavar="URL",
        help="the AWS endpoint every client calls, e.g. the local pipeline's "
        "http://127.0.0.1:PORT (default: $AWS_ENDPOINT_URL, else AWS)",
    )
    parser.add_argument(
        "--max-messages", type=int, help="stop after this many messages (objects with --bucket)"
    )
    parser.add_argument(
        "--max-attempts",
        type=int,
        help="invocations without progress before a message is kept (default"
        f" {DEFAULT_MAX_ATTEMPTS}); with {PIPE_DLQ_OPTION}, PutEvents rounds for the entries that"
        f" failed (default {DEFAULT_PUT_ATTEMPTS})",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="list what would be replayed (message or object, shard, sequence range, record"
        " count) without invoking or deleting anything",
    )
    parser.add_argument(
        "--marker-ttl-seconds",
        type=int,
        help="the consumer's marker lifetime: a failed batch or record older than this is"
        " refused, neither replayed nor deleted, since its markers may have expired (default:"
        f" ${MARKER_TTL_ENV}, else --function-name's environment; unknown: no age check)",
    )
    parser.add_argument(
        "--idempotency-table",
        metavar="NAME",
        help="the consumer's idempotency table, where the run takes the consumer's redrive"
        " lease so two redrives of one consumer never overlap (default:"
        f" ${IDEMPOTENCY_TABLE_ENV}, else --function-name's environment; unknown: no lease,"
        " the report notes it)",
    )
    parser.add_argument(
        "--lease-wait-seconds",
        type=float,
        default=DEFAULT_LEASE_WAIT_SECONDS,
        metavar="SECONDS",
        help="how long to wait while another redrive of the consumer holds its lease (default"
        f" {DEFAULT_LEASE_WAIT_SECONDS:g}); then exit {EXIT_BUSY}, nothing touched",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")


def _consumer_environment(args: argparse.Namespace, session: Any) -> dict[str, str]:
    """The consumer's environment, where a flag is left out: this process's, then (with
    --function-name) the function's configuration."""
    variables: dict[str, str] = {}
    if args.function_name:
        try:
            configuration = session.client("lambda").get_function_configuration(
                FunctionName=args.function_name
            )
            variables = dict((configuration.get("Environment") or {}).get("Variables") or {})
        except (ClientError, BotoCoreError):
            pass  # only defaults: the run says what is missing if it needs it
    names = (
        CONSUMER_NAME_ENV,
        CONSUMER_GROUP_ENV,
        MAPPING_UUID_ENV,
        ON_FAILURE_BUCKET_ENV,
        QUARANTINE_QUEUE_ENV,
        MARKER_TTL_ENV,
        IDEMPOTENCY_TABLE_ENV,
    )
    return variables | {name: os.environ[name] for name in names if os.environ.get(name)}


def _members(args: argparse.Namespace, environment: Mapping[str, str]) -> tuple[str, ...]:
    """--member, else the group the consumer's environment declares (none: not a group)."""
    if args.members:
        return tuple(args.members)
    value = environment.get(CONSUMER_GROUP_ENV, "")
    try:
        return tuple(spec.name for spec in GroupMemberSpec.decode(value)) if value else ()
    except ContractError as error:
        raise RedriveSetupError(f"{error}; or name the members with --member") from None


def _invoker(args: argparse.Namespace, session: Any) -> Invoker:
    """--handler in this process, else --function-name invoked synchronously."""
    if args.handler:
        return CallableInvoker(_load_handler(args.handler, args.path))
    return LambdaInvoker(
        args.function_name,
        session.client("lambda", config=Config(read_timeout=LAMBDA_READ_TIMEOUT_SECONDS)),
    )


def _redrive(
    args: argparse.Namespace,
    session: Any,
    sqs_client: Any,
    invoker: Invoker,
    environment: Mapping[str, str],
    scope: Scope,
) -> Redrive:
    """The Redrive the command line describes, scoped to one consumer, reading its stream with
    its route's client (:func:`~cdc_consumer.routes.replay.route_of_stream`)."""
    return Redrive(
        invoker=invoker,
        stream_arn=args.stream_arn,
        sqs_client=sqs_client,
        streams_client=route_of_stream(args.stream_arn).client(session),
        consumer_name=args.consumer_name or environment.get(CONSUMER_NAME_ENV) or None,
        member_names=_members(args, environment),
        function_name=scope.function_name,
        mapping_uuid=scope.mapping_uuid,
        on_failure_bucket=None if args.bucket else scope.bucket,
        on_failure_prefix=scope.prefix,
        quarantine_queue_url=(
            args.quarantine_queue_url or environment.get(QUARANTINE_QUEUE_ENV) or None
        ),
        max_attempts=args.max_attempts,
        filters=args.filters,
        marker_ttl_seconds=_marker_ttl(args, environment),
        lease_table=args.idempotency_table or environment.get(IDEMPOTENCY_TABLE_ENV) or None,
        dynamodb_client=session.client("dynamodb"),
        lease_wait_seconds=args.lease_wait_seconds,
    )


def _marker_ttl(args: argparse.Namespace, environment: Mapping[str, str]) -> int | None:
    """--marker-ttl-seconds, else the consumer's ``CDC_MARKER_TTL_SECONDS``; None: no check."""
    if args.marker_ttl_seconds is not None:
        value: Any = args.marker_ttl_seconds
    else:
        value = environment.get(MARKER_TTL_ENV)
    if value is None or value == "":
        return None
    if not str(value).isdigit() or int(value) < 1:
        raise RedriveSetupError(
            f"the marker lifetime is {value!r}; expected whole seconds, 1 or more"
            " (--marker-ttl-seconds, or the consumer's CDC_MARKER_TTL_SECONDS)"
        )
    return int(value)


def _check_stream(args: argparse.Namespace) -> None:
    """A stream ARN of a route (:func:`~cdc_consumer.routes.replay.route_of_stream`)."""
    check_stream_arn(args.stream_arn)


def _check_numbers(args: argparse.Namespace) -> None:
    """The counts and times of the command line in range (``--max-attempts`` defaulted)."""
    if args.max_messages is not None and args.max_messages < 1:
        raise RedriveSetupError(f"--max-messages is {args.max_messages}; expected 1 or more")
    if args.max_attempts is None:
        pipe = bool(args.pipe_dlq_queue_url)
        args.max_attempts = DEFAULT_PUT_ATTEMPTS if pipe else DEFAULT_MAX_ATTEMPTS
    if args.max_attempts < 1:
        raise RedriveSetupError(f"--max-attempts is {args.max_attempts}; expected 1 or more")
    if args.lease_wait_seconds < 0:
        raise RedriveSetupError(
            f"--lease-wait-seconds is {args.lease_wait_seconds:g}; expected 0 or more"
        )


def _run(argv: Sequence[str] | None, session: Any) -> int:
    args = build_parser().parse_args(argv)
    if args.endpoint_url:  # every client of the run, and a --handler's own, call it
        os.environ["AWS_ENDPOINT_URL"] = args.endpoint_url
    _check_numbers(args)
    _check_stream(args)
    sources.import_modules(args.source_module)
    if args.pipe_dlq_queue_url:
        return _run_pipe_dlq(args, session)
    if not (args.function_name or args.handler):
        raise RedriveSetupError("one of the arguments --function-name --handler is required")
    pipe_options = (args.event_bus_name, args.event_source, args.detail_type)
    if any(pipe_options) or args.input_template or args.resources:
        raise RedriveSetupError(
            "--event-bus-name, --event-source, --detail-type, --input-template and --resource"
            f" are for {PIPE_DLQ_OPTION}"
        )
    if args.bucket and args.source != Source.ON_FAILURE.value:
        raise RedriveSetupError(
            "--bucket is an on-failure destination; the quarantine is a queue (--queue-url)"
        )
    session = session or boto3.session.Session()
    invoker = _invoker(args, session)
    environment = _consumer_environment(args, session)
    scope = consumer_scope(args, session, environment)
    sqs_client = session.client("sqs")
    redrive = _redrive(args, session, sqs_client, invoker, environment, scope)
    if scope.bucket:
        redrive.s3_client = session.client("s3")
    where = bucket_where(args.bucket, scope.prefix) if args.bucket else args.location
    where = where or args.queue_url
    redrive.check(where, args.source)
    total = _queue_depth(sqs_client, args.queue_url) if args.queue_url else None
    if args.max_messages is not None and total is not None:
        total = min(total, args.max_messages)
    report = redrive.run(
        where,
        args.source,
        dry_run=args.dry_run,
        max_messages=args.max_messages,
        progress=_progress_printer(total),
    )
    sys.stderr.write("\n" if report.messages_received else "")
    sys.stderr.write(report.summary() + "\n")
    if args.json:
        sys.stdout.write(json.dumps(report.to_log(), default=str) + "\n")
    if report.busy is not None:
        return EXIT_BUSY
    return EXIT_OK if report.ok else EXIT_NOT_OK


def main(argv: Sequence[str] | None = None, *, session: Any = None) -> int:
    """The command line. ``session`` (a boto3 Session) is for tests and embedding.

    Returns :data:`EXIT_OK`, :data:`EXIT_NOT_OK`, :data:`EXIT_SETUP` or :data:`EXIT_BUSY`; an
    operator mistake is printed as one line on stderr, never as a traceback. Ctrl-C and SIGTERM
    end it alike: one line on stderr and :data:`EXIT_INTERRUPTED`.
    """
    sigterm_as_keyboard_interrupt()
    try:
        return _run(argv, session)
    except KeyboardInterrupt:
        sys.stderr.write(
            f"\n{PROG}: interrupted: the message or object being replayed and those after it "
            "stay where they were (nothing is deleted before it is replayed); run it again\n"
        )
        return EXIT_INTERRUPTED
    except RedriveSetupError as error:
        message = str(error)
    except NoCredentialsError:
        message = (
            "no AWS credentials: set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
            " (or run where a role is attached)"
        )
    except BotoCoreError as error:  # no region, endpoint unreachable, ...
        message = f"{error}: check AWS_REGION / AWS_DEFAULT_REGION and the endpoint"
    sys.stderr.write(f"{PROG}: error: {message}\n")
    return EXIT_SETUP


def _add_pipe_event_arguments(parser: argparse.ArgumentParser) -> None:
    """The pipe's target and the events' shape: its ``TargetParameters``."""
    parser.add_argument(
        "--event-bus-name",
        metavar="NAME",
        help="with --pipe-dlq-queue-url (required), the pipe's target: the event bus's name or ARN",
    )
    parser.add_argument(
        "--event-source",
        metavar="SOURCE",
        help="with --pipe-dlq-queue-url (required), the events' source (the pipe's"
        " EventBridgeEventBusParameters.Source)",
    )
    parser.add_argument(
        "--detail-type",
        metavar="TYPE",
        help="with --pipe-dlq-queue-url (required), the events' detail-type, fixed or a JSON"
        " path into the record such as $.dynamodb.NewImage.eventType.S (the pipe's DetailType)",
    )
    parser.add_argument(
        "--input-template",
        metavar="TEMPLATE",
        help="with --pipe-dlq-queue-url, the pipe's InputTemplate: the event's detail"
        " (default: the record itself, as a pipe without a template sends it)",
    )
    parser.add_argument(
        "--resource",
        dest="resources",
        action="append",
        default=[],
        metavar="ARN",
        help="with --pipe-dlq-queue-url, an ARN in the events' resources (repeatable; the"
        " fan-out constructs put the table's ARN)",
    )


def _run_pipe_dlq(args: argparse.Namespace, session: Any) -> int:
    """The ``--pipe-dlq-queue-url`` mode: a pipe's dead-letter queue onto its event bus."""
    _check_pipe_dlq_arguments(args)
    session = session or boto3.session.Session()
    shape = EventShape(
        event_bus_name=args.event_bus_name,
        source=args.event_source,
        detail_type=args.detail_type,
        input_template=args.input_template,
        resources=tuple(args.resources),
    )
    redrive = PipeDlqRedrive(
        sqs_client=session.client("sqs"),
        streams_client=route_of_stream(args.stream_arn).client(session),
        events_client=session.client("events"),
        stream_arn=args.stream_arn,
        shape=shape,
        put_attempts=args.max_attempts,
    )
    report = redrive.run(
        args.pipe_dlq_queue_url, dry_run=args.dry_run, max_messages=args.max_messages
    )
    sys.stderr.write(report.summary() + "\n")
    if args.json:
        sys.stdout.write(json.dumps(report.to_log(), default=str) + "\n")
    return EXIT_OK if report.ok else EXIT_NOT_OK


def _check_pipe_dlq_arguments(args: argparse.Namespace) -> None:
    """The pipe's target given, and nothing of a consumer's redrive."""
    missing = [
        option
        for option, value in (
            ("--event-bus-name", args.event_bus_name),
            ("--event-source", args.event_source),
            ("--detail-type", args.detail_type),
        )
        if not value
    ]
    if missing:
        raise RedriveSetupError(
            f"{PIPE_DLQ_OPTION} needs {', '.join(missing)}: the pipe's target parameters"
            " (aws pipes describe-pipe --name PIPE --query TargetParameters)"
        )
    consumer = [
        option
        for option, value in (
            ("--function-name", args.function_name),
            ("--handler", args.handler),
            ("--quarantine", args.source != Source.ON_FAILURE.value),
            ("--filter", args.filters),
            ("--member", args.members),
        )
        if value
    ]
    if consumer:
        raise RedriveSetupError(
            f"{PIPE_DLQ_OPTION} puts the records on the pipe's bus; {', '.join(consumer)}"
            " is a consumer's redrive: leave it out"
        )
