"""Redrive's defaults, in one place, each with its reason."""

from __future__ import annotations

#: Records per replay invocation: the StreamConsumer's default batch size, so the consumer sees
#: batches of the size it was built and timed for.
DEFAULT_INVOKE_MAX_RECORDS = 100
#: Serialized event size per replay invocation: below the 6 MB limit of a synchronous Lambda
#: invoke payload, with headroom for the JSON envelope.
DEFAULT_INVOKE_MAX_BYTES = 5_000_000
#: Invocations of the same first record without progress before the message is given up (and
#: kept): enough to ride out a throttle or a cold dependency, few enough that a still-broken
#: consumer does not hold the redrive for long.
DEFAULT_MAX_ATTEMPTS = 3
#: Consecutive empty GetRecords pages before the rest of the range counts as not found. DynamoDB
#: Streams may need several calls to get past a part of a shard without records, and an open
#: shard returns empty pages forever once the reader is past its newest record.
DEFAULT_MAX_EMPTY_PAGES = 10
#: GetRecords page size: the API's maximum, fewest calls (each shard allows 5 calls/s, shared
#: with the event source mapping that is reading it too).
DEFAULT_PAGE_LIMIT = 1000
#: Long-poll wait when receiving: short polling samples only some SQS servers and can come back
#: empty while messages remain; one second keeps the final (empty) receive cheap.
DEFAULT_RECEIVE_WAIT_SECONDS = 1
#: How long a received message stays invisible while redrive works on it: longer than reading a
#: range and replaying it takes, short enough that a crashed redrive's messages reappear soon.
DEFAULT_VISIBILITY_TIMEOUT_SECONDS = 900
#: Messages received and sorted by stream position before they are redriven: SQS standard queues
#: do not keep order, and a window this size is redriven well within the visibility timeout.
DEFAULT_WINDOW = 50
#: Read timeout of the Lambda client: a synchronous invoke lasts as long as the consumer runs (up
#: to Lambda's 15 minute maximum); botocore's 60 s default would time out and invoke again.
LAMBDA_READ_TIMEOUT_SECONDS = 905
#: Error codes that mean the records of a range can no longer be read.
LOST_ERROR_CODES = frozenset(
    {"TrimmedDataAccessException", "ResourceNotFoundException", "ExpiredIteratorException"}
)
#: Objects replayed per S3 redrive run unless bounded otherwise: each is read once to place it in
#: stream order and once to replay it, one at a time (the memory of one object, whatever the
#: count), so the bound is on the run's time, not its memory.
DEFAULT_MAX_OBJECTS = 1000
#: PutEvents rounds for the entries of a pipe dead-letter message a call failed (throttled,
#: internal) before the message is kept: enough to ride out a throttle, few enough that a bus
#: that refuses the events does not hold the run.
DEFAULT_PUT_ATTEMPTS = 3
#: How long a redrive's lease of its consumer lasts after each take or renewal (it is renewed
#: before each invocation of the consumer): longer than Lambda's 15 minute maximum, so a live
#: redrive renews it before it runs out, short enough that a crashed redrive's lease frees
#: itself soon (redrive.lease).
DEFAULT_LEASE_SECONDS = 960
#: How often a redrive waiting for its consumer's lease tries again.
DEFAULT_LEASE_POLL_SECONDS = 5.0
#: How long the command line waits for a lease another redrive of the consumer holds: long
#: enough to ride out the end of a run started a moment before, short enough that a person is
#: told soon that another redrive is running (the provisioned function does not wait).
DEFAULT_LEASE_WAIT_SECONDS = 60.0
#: Mapping folders (``aws/lambda/<UUID>/``) of a bucket looked at for the consumer's own: each
#: costs a listing and one object read, and a consumer has a handful (one per replacement of its
#: mapping within the bucket's retention); a bucket shared by more mappings than this is read
#: only this far, which the report says (redrive.mapping_prefixes).
DEFAULT_MAX_MAPPING_FOLDERS = 100
