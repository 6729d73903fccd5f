"""The backfill's defaults, in one place, each with its reason (docs/backfill.md)."""

from __future__ import annotations

from cdc_consumer import service_limits

#: The horizon's clock-skew margin: the segment's clock and the stamps DynamoDB puts on stream
#: records (``ApproximateCreationDateTime``, rounded down to the second) may differ; a change
#: made after the scan started must be stamped at or after the horizon, or a row read before it
#: would win. 5 s covers the second's rounding and NTP-synchronised clocks with a wide margin;
#: a larger margin costs nothing but changes that win over rows they are already in.
SKEW_SECONDS = 5
#: The smallest skew margin accepted (the start step refuses less): DynamoDB rounds a change's
#: stamp down to the second, so a margin under a second could let a change made just after the
#: scan started be stamped before the horizon on a clock only slightly ahead of the segment's.
MIN_SKEW_SECONDS = 1
#: How long the stream keeps a change: DynamoDB Streams' 24 hours
#: (:data:`cdc_consumer.service_limits.STREAM_RETENTION_SECONDS`; ViewBackfill backfills consumers
# of
#: a table's own stream). A horizon older than this, less the margin below, is refused: the
#: changes after it may be trimmed (or aged out of the mapping) before the consumer read them,
#: and a row would then stand below a change the view never got.
STREAM_RETENTION_SECONDS = service_limits.STREAM_RETENTION_SECONDS
#: Kept between the oldest horizon accepted and the stream's trim point: a consumer lagging by
#: up to this much still reads every change at or after the horizon.
RETENTION_MARGIN_SECONDS = 3600
#: Scan's Limit per page; a page is one consumer invocation. Write units fall with the page:
#: each row writes its contribution (2 units in a transaction), and the page's deltas merge per
#: view item into about one ADD, so a page of P rows touching V view items costs about
#: 2 + 2 V/P units a row (docs/design.md §11): the larger the page, the more rows share each
#: view item's ADD. 1,000 is the largest page ViewBackfill accepts, and nothing it bounds is
#: near its limit there: Scan returns at most 1 MB a page whatever the Limit (so large items
#: make smaller pages by themselves); the consumer cuts the page into transactions of at most
#: 100 actions and 4 MB as it cuts a stream batch (about 12 of them, a second or two, inside
#: the consumer's 60 s timeout, which it watches between transactions); the invocation payload
#: is cut below Lambda's 6 MB (INVOKE_MAX_BYTES); a 1 MB page and its JSON fit the segment
#: function's 256 MB; the rate limit's burst is one page (a segment's first page goes at once,
#: then pages are paced). 100 (the stream batch size) cost 2 units a row more wherever a page
#: of 100 rows touches about 100 view items.
PAGE_SIZE = 1000
#: No page is started when less than this share of the function's timeout is left (within
#: MIN/MAX_RESERVE_SECONDS): a page is a Scan plus a consumer invocation, and the progress
#: record must be written before Lambda's deadline.
RESERVE_SHARE = 0.2
MIN_RESERVE_SECONDS = 2.0
MAX_RESERVE_SECONDS = 30.0
#: Attempts of one page's records (the consumer reported a record failed, or its invocation
#: failed) before the segment gives up and fails: the state machine retries it from its progress
#: record, later. Backoff doubles from BACKOFF_SECONDS.
PAGE_ATTEMPTS = 5
BACKOFF_SECONDS = 0.2
#: The scan client's retries: botocore's adaptive mode backs off on throttling and rate-limits
#: the client itself (client-side token bucket), the library's answer to a throttled table.
SCAN_RETRIES = {"mode": "adaptive", "max_attempts": 10}
#: Serialized snapshot event size per consumer invocation: below the 6 MB limit of a
#: synchronous invoke payload, with headroom for the envelope (a Scan page is at most 1 MB of
#: items, which JSON makes larger).
INVOKE_MAX_BYTES = 5_000_000
#: Mapping states that deliver the stream (Lambda's ListEventSourceMappings ``State``).
RUNNING_STATES = frozenset({"Enabled", "Updating"})
