"""AWS service limits and clocks the packages check against (each with where AWS states it).

The runtime splits its transactions by them, CdcChecks (``cdc_constructs.nag``) and the constructs
refuse what exceeds them, and the local pipeline plays them. Standard library only.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "MAX_DETAIL_TYPE_LENGTH",
    "MAX_QUEUE_MESSAGE_BYTES",
    "MAX_STREAM_READERS",
    "MAX_STREAM_READERS_WITH_REPLICAS",
    "MAX_TOTAL_SEGMENTS",
    "MAX_TRANSACTION_ACTIONS",
    "MAX_TRANSACTION_BYTES",
    "MIN_TOTAL_SEGMENTS",
    "S3_EXPIRY_ROUNDING_SECONDS",
    "STREAM_RETENTION_SECONDS",
    "UNLIMITED_RECORD_AGE",
]


STREAM_RETENTION_SECONDS: Final = 24 * 3600
"""DynamoDB Streams keep a record for 24 hours, fixed; then it is trimmed."""

MAX_STREAM_READERS: Final = 2
"""Concurrent readers (event source mappings, pipes) a DynamoDB stream's shard serves; a third is
throttled (``LimitExceededException``)."""

MAX_STREAM_READERS_WITH_REPLICAS: Final = 1
"""Readers AWS's Lambda guide asks for on the stream of a global table (a table with replicas)."""

MAX_TRANSACTION_ACTIONS: Final = 100
"""TransactWriteItems takes at most 100 actions."""

MAX_TRANSACTION_BYTES: Final = 4 * 1024 * 1024
"""TransactWriteItems takes at most 4 MB of items."""

MAX_QUEUE_MESSAGE_BYTES: Final = 262_144
"""SQS's default ``MaximumMessageSize`` (256 KiB) for a queue that sets none, as the quarantine
queues here: a larger SendMessage is refused. A DynamoDB item reaches 400 KB, a record carries
two images and binary travels as base64, so a quarantine message can be larger: the runtime then
keeps the record in a bucket and sends a pointer (:class:`QuarantineMessage`)."""

MAX_DETAIL_TYPE_LENGTH: Final = 128
"""EventBridge's limit on an event's detail-type (an outbox event's type becomes it)."""

S3_EXPIRY_ROUNDING_SECONDS: Final = 24 * 3600
"""How much longer than its lifecycle rule's days S3 can keep an object: S3 adds the rule's days
to the object's creation time and rounds the result up to the next midnight UTC (AWS S3 User
Guide, "Lifecycle configuration elements": an object created 1/15 10:30 UTC under a 3-day rule
expires 1/19 00:00 UTC), so a failed batch written just after midnight lives almost a day more.
Then S3 queues the expired object and removes it asynchronously ("Expiring objects"): it can
still be read for a while, unbounded by any rule, which :data:`MARKER_LIFETIME_MARGIN_SECONDS`
absorbs in part and the redrive's own age check covers beyond that."""

UNLIMITED_RECORD_AGE: Final = -1
"""``MaximumRecordAgeInSeconds`` meaning "no limit": the stream's retention bounds it."""

MIN_TOTAL_SEGMENTS: Final = 1

MAX_TOTAL_SEGMENTS: Final = 1_000_000
"""Scan's ``TotalSegments`` range (DynamoDB API reference)."""
