"""Redrive: replay what a stream consumer failed on, from its on-failure queue or its quarantine.

The on-failure queue holds *pointers* (interfaces §5: shard id, start and end sequence numbers),
not records. For each message, redrive reads the records of that range back from the stream
(GetShardIterator AT_SEQUENCE_NUMBER, then GetRecords page by page), replays them in order
through the consumer's handler contract (``{"Records": [...]}`` in, ``batchItemFailures`` out)
and deletes the message only after every record succeeded. A quarantine message (interfaces §4)
carries the whole record, which is replayed the same way.

What redrive never does:

- skip a record silently. Records the stream no longer holds (trimmed after 24 h, shard gone,
  iterator expired, or simply not there) are reported as *lost* with their sequence numbers, and
  the message stays in the queue. A message with any lost record is not replayed at all: replaying
  around the gap would hide it, so the operator reconciles it by hand (docs/operations.md:
  "Redrive").
- replay or delete another consumer's or another stream's message, or one that names neither:
  it is *kept* and reported with the reason, and the run is not ok.
- delete a message it could not replay: malformed messages and messages whose replay failed stay
  in the queue (made visible again at the end of the run) and are reported with the reason.
- report success when a replayed record was quarantined again (still poison): it is reported as
  *re-quarantined* by sequence number and the run is not ok.

Operator mistakes (a missing queue, no credentials, a stream ARN that is not one, unreadable
arguments) raise :class:`~cdc_consumer.exceptions.RedriveSetupError` before any message is
touched; the command line prints it as one line and exits 2.

Either route is replayed alike (a table's DynamoDB stream, or its Kinesis data stream): the route
is the stream ARN's, and what differs between routes is asked of it
(:mod:`cdc_consumer.routes.replay`); no module here names one.

Replaying twice changes nothing: the consumer runtime's processed-markers make replays of
already-applied records no-ops, and deleted messages are gone.

Run it as a command line (``python -m cdc_consumer.redrive --help``) or as the provisioned
redrive function (``cdc_consumer.redrive_handler.handler``). boto3 only: it ships in the runtime
layer.

Modules: :mod:`~cdc_consumer.redrive.messages` (parsing and validating queue messages),
:mod:`~cdc_consumer.redrive.stream_reader` (reading a range back, in Lambda's record shape),
:mod:`~cdc_consumer.redrive.invokers` (delivering events to the consumer),
:mod:`~cdc_consumer.redrive.replay` (the run: :class:`Redrive`, composing
:mod:`~cdc_consumer.redrive.sources` (one module per failure source: ``bucket``, ``queue``,
``quarantine``, each a :class:`~cdc_consumer.redrive.failure_source.FailureSource`),
:mod:`~cdc_consumer.redrive.driver` (the one driver), :mod:`~cdc_consumer.redrive.replayer`,
:mod:`~cdc_consumer.redrive.requarantine`, :mod:`~cdc_consumer.redrive.access` and
:mod:`~cdc_consumer.redrive.lease`: one redrive of a consumer at a time),
:mod:`~cdc_consumer.redrive.report` (its outcome), :mod:`~cdc_consumer.redrive.pipe_dlq` (a
fan-out pipe's dead-letter queue, read back from the stream onto the pipe's bus, with
:mod:`~cdc_consumer.redrive.pipe_events`), :mod:`~cdc_consumer.redrive.cli` (the command
line), :mod:`~cdc_consumer.redrive.defaults`.
The errors are in :mod:`cdc_consumer.exceptions`.
"""

from cdc_consumer.exceptions import (
    ForeignMessageError,
    InvocationError,
    MalformedMessageError,
    RecordsLostError,
    RedriveError,
    RedriveSetupError,
)
from cdc_consumer.filter_patterns import check_filter_pattern, matches_filter_pattern
from cdc_consumer.redrive.cli import main
from cdc_consumer.redrive.defaults import (
    DEFAULT_INVOKE_MAX_BYTES,
    DEFAULT_INVOKE_MAX_RECORDS,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_EMPTY_PAGES,
    DEFAULT_PUT_ATTEMPTS,
    DEFAULT_RECEIVE_WAIT_SECONDS,
    DEFAULT_VISIBILITY_TIMEOUT_SECONDS,
    DEFAULT_WINDOW,
)
from cdc_consumer.redrive.invokers import CallableInvoker, Invoker, LambdaInvoker, LocalContext
from cdc_consumer.redrive.messages import (
    OnFailureBatch,
    QuarantinedRecord,
    Source,
    parse_on_failure_message,
    parse_quarantine_message,
)
from cdc_consumer.redrive.pipe_dlq import PipeDlqRedrive
from cdc_consumer.redrive.pipe_events import EventShape
from cdc_consumer.redrive.replay import Redrive
from cdc_consumer.redrive.report import (
    FailedMessage,
    LeaseHeld,
    LostRange,
    PlannedMessage,
    RedriveReport,
    RequarantinedRecord,
)
from cdc_consumer.redrive.stream_reader import StreamRangeReader, to_lambda_record

__all__ = [
    "DEFAULT_INVOKE_MAX_BYTES",
    "DEFAULT_INVOKE_MAX_RECORDS",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_MAX_EMPTY_PAGES",
    "DEFAULT_PUT_ATTEMPTS",
    "DEFAULT_RECEIVE_WAIT_SECONDS",
    "DEFAULT_VISIBILITY_TIMEOUT_SECONDS",
    "DEFAULT_WINDOW",
    "CallableInvoker",
    "EventShape",
    "FailedMessage",
    "ForeignMessageError",
    "InvocationError",
    "Invoker",
    "LambdaInvoker",
    "LeaseHeld",
    "LocalContext",
    "LostRange",
    "MalformedMessageError",
    "OnFailureBatch",
    "PipeDlqRedrive",
    "PlannedMessage",
    "QuarantinedRecord",
    "RecordsLostError",
    "Redrive",
    "RedriveError",
    "RedriveReport",
    "RedriveSetupError",
    "RequarantinedRecord",
    "Source",
    "StreamRangeReader",
    "check_filter_pattern",
    "main",
    "matches_filter_pattern",
    "parse_on_failure_message",
    "parse_quarantine_message",
    "to_lambda_record",
]
