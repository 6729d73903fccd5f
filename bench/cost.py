"""What a change costs in AWS money: request units, Lambda GB-seconds and requests, in dollars.

DynamoDB's on-demand bill is request units, not requests (AWS, "DynamoDB read and write
operations"; "Amazon DynamoDB Transactions: How it works"):

* a standard write (PutItem, UpdateItem, DeleteItem, each item of BatchWriteItem) costs 1 write
  request unit (WRU) per KB of the item, rounded up; an item in TransactWriteItems costs 2 per KB;
* a write whose condition fails is still charged (at least 1 WRU; 2 in a transaction);
* a strongly consistent read costs 1 read request unit (RRU) per 4 KB of the item returned,
  an eventually consistent read half, a transactional read 2.

:class:`CostMeter` sizes every item of every DynamoDB request the consumers send (botocore
events, the same hook that counts requests: bench/local_aws.py) with DynamoDB's item-size rules
(:func:`item_size`): attribute names plus values. For an UpdateItem the request names only the
key and the values it sets, not the item it lands on; the report therefore also scans the
tables after each run and states the largest item stored, which decides whether the per-request
sizing rounds the same way (every item in these workloads is far under 1 KB).

A cancelled transaction is charged here as if every item in it had been written (2 per KB):
AWS charges the prepare phase of a cancelled transaction, and this is the conservative reading.

Lambda duration is not measured on moto (its latencies are not DynamoDB's). It is modelled per
invocation as the sum of a published p50 latency per request kind (:data:`LATENCY_SOURCE`),
plus the consumer's CPU time measured in the delivering thread (botocore's request building
and parsing included), scaled from this machine's one CPU to the share of a vCPU a function of
:data:`MEMORY_MB` gets (Lambda allocates CPU in proportion to memory, one vCPU at 1,769 MB).
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

# --- prices -----------------------------------------------------------------------------------

PRICE_REGION = "us-east-1 (US East, N. Virginia)"
#: When the prices below were last checked against AWS's public on-demand price pages.
PRICE_DATE = "2026-11-30"
PRICE_SOURCE = (
    "AWS's public on-demand price pages for DynamoDB (on-demand throughput, after the "
    "November 2024 reduction), Lambda, SQS and S3"
)
USD_PER_MILLION_WRU = 0.625
USD_PER_MILLION_RRU = 0.125
#: Lambda duration, x86 and Arm (the StreamConsumer deploys Arm: cdc_constructs/defaults.py).
USD_PER_GB_SECOND_X86 = 0.0000166667
USD_PER_GB_SECOND_ARM = 0.0000133334
USD_PER_MILLION_INVOCATIONS = 0.20
#: SQS standard queue, per million requests (each 64 KB chunk of a payload is one request).
USD_PER_MILLION_SQS_REQUESTS = 0.40
#: S3 Standard, per 1,000 PUT/POST/LIST requests and per 1,000 GET requests.
USD_PER_THOUSAND_S3_PUTS = 0.005
USD_PER_THOUSAND_S3_GETS = 0.0004

#: The function's memory and architecture as the StreamConsumer construct deploys it
#: (cdc_constructs/defaults.py MEMORY_SIZE_MB and ARCHITECTURE; tests/bench checks they agree).
MEMORY_MB = 256
ARCHITECTURE = "arm64"
USD_PER_GB_SECOND = USD_PER_GB_SECOND_ARM
#: Lambda: "at 1,769 MB, a function has the equivalent of one vCPU".
MB_PER_VCPU = 1_769

# --- latency model ----------------------------------------------------------------------------

LATENCY_SOURCE = (
    "p50 latencies measured from AWS Lambda in us-east-1 by Alex DeBrie, 'DynamoDB "
    "Transactions Performance Testing' (alexdebrie.com; results table in github.com/alexdebrie/"
    "dynamodb-performance-testing): PutItem 7.55 ms; BatchWriteItem 8.14 ms (5 items), 10.2 ms "
    "(25); TransactWriteItems 25.3 ms (5 items, also with one failing item), 32.1 ms (25). "
    "Other single-item requests are taken as PutItem's; transactions and batches are "
    "interpolated linearly in their item count (extrapolated outside 5-25 items). SQS "
    "SendMessage and S3 requests have no figure there: 10 ms and 20 ms are assumed."
)
SINGLE_ITEM_MS = 7.55
TRANSACT_5_MS, TRANSACT_25_MS = 25.3, 32.1
BATCH_5_MS, BATCH_25_MS = 8.14, 10.2
SQS_MS = 10.0
S3_MS = 20.0


def _linear(at5: float, at25: float, items: int) -> float:
    return at5 + (at25 - at5) * (items - 5) / 20


def request_items(operation: str, params: Mapping[str, Any]) -> int:
    """How many items a request names (client shape): what a transaction's or a batch's
    modelled latency grows with; 1 for any other request."""
    if operation in ("TransactWriteItems", "TransactGetItems"):
        return len(params.get("TransactItems", []))
    batches = params.get("RequestItems") or {}
    if operation == "BatchWriteItem":
        return sum(len(requests) for requests in batches.values())
    if operation == "BatchGetItem":
        return sum(len(table.get("Keys", [])) for table in batches.values())
    return 1


def modelled_latency_ms(service: str, operation: str, items: int) -> float:
    """The modelled p50 latency of one request (see :data:`LATENCY_SOURCE`)."""
    if service == "sqs":
        return SQS_MS
    if service == "s3":
        return S3_MS
    if operation in ("TransactWriteItems", "TransactGetItems"):
        return _linear(TRANSACT_5_MS, TRANSACT_25_MS, max(items, 1))
    if operation in ("BatchWriteItem", "BatchGetItem"):
        return _linear(BATCH_5_MS, BATCH_25_MS, max(items, 1))
    return SINGLE_ITEM_MS


# --- item sizes -------------------------------------------------------------------------------


def _number_size(text: str) -> int:
    """DynamoDB: a number takes about 1 byte per two significant digits, plus 1 byte."""
    digits = Decimal(text).normalize().as_tuple().digits
    return (len(digits) + 1) // 2 + 1


def value_size(value: Mapping[str, Any]) -> int:
    """Bytes of one attribute value in DynamoDB's item-size rules (client shape)."""
    ((kind, body),) = value.items()
    if kind == "S":
        return len(body.encode())
    if kind == "N":
        return _number_size(body)
    if kind == "B":
        return len(body) if isinstance(body, (bytes, bytearray)) else len(str(body).encode())
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in body)
    if kind == "NS":
        return sum(_number_size(n) for n in body)
    if kind == "BS":
        return sum(len(b) for b in body)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in body)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in body.items())
    raise ValueError(f"not a DynamoDB attribute value: {value!r:.100}")


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """Bytes of an item: each attribute's name (UTF-8) plus its value."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def _written_size(body: Mapping[str, Any]) -> int:
    """What a write request says about its item: Item for a Put; Key plus the names and
    values of the expression for an Update, Delete or ConditionCheck (a lower bound of the
    stored item's size; the report checks the stored items separately)."""
    if "Item" in body:
        return item_size(body["Item"])
    size = item_size(body.get("Key", {}))
    names = body.get("ExpressionAttributeNames") or {}
    size += sum(len(str(name).encode()) for name in names.values())
    size += sum(value_size(v) for v in (body.get("ExpressionAttributeValues") or {}).values())
    return size


def write_units(size: int, transactional: bool) -> int:
    units = max(1, math.ceil(size / 1024))
    return 2 * units if transactional else units


def read_units(size: int, *, consistent: bool, transactional: bool = False) -> float:
    units = max(1, math.ceil(size / 4096))
    if transactional:
        return 2.0 * units
    return float(units) if consistent else units / 2


# --- the meter --------------------------------------------------------------------------------

#: Error codes DynamoDB returns before doing (and charging) any work.
NOT_CHARGED = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "ValidationException",
        "ResourceNotFoundException",
        "InternalServerError",
    }
)


@dataclass
class CostMeter:
    """Request units, modelled latency and requests of every request it is shown."""

    wru: float = 0.0
    rru: float = 0.0
    #: WRU of writes whose condition failed (duplicates' markers, Powertools' repeated claims).
    failed_condition_wru: float = 0.0
    transactional_wru: float = 0.0
    latency_ms: float = 0.0
    requests: Counter[str] = field(default_factory=Counter)
    largest_item_sent: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reset(self) -> None:
        with self._lock:
            self.wru = self.rru = self.failed_condition_wru = self.transactional_wru = 0.0
            self.latency_ms = 0.0
            self.requests.clear()
            self.largest_item_sent = 0

    def snapshot(self) -> CostMeter:
        """A copy of the figures so far."""
        with self._lock:
            return CostMeter(
                wru=self.wru,
                rru=self.rru,
                failed_condition_wru=self.failed_condition_wru,
                transactional_wru=self.transactional_wru,
                latency_ms=self.latency_ms,
                requests=Counter(self.requests),
                largest_item_sent=self.largest_item_sent,
            )

    def record(
        self,
        service: str,
        operation: str,
        params: Mapping[str, Any],
        parsed: Mapping[str, Any] | None,
    ) -> None:
        """One request as sent (``params``, client shape) and its parsed response."""
        parsed = parsed or {}
        error = (parsed.get("Error") or {}).get("Code")
        wru, rru, failed = 0.0, 0.0, 0.0
        if service == "dynamodb" and error not in NOT_CHARGED:
            wru, rru, failed = self._dynamodb(operation, params, parsed, error)
        latency = modelled_latency_ms(service, operation, request_items(operation, params))
        with self._lock:
            self.requests[f"{service}.{operation}"] += 1
            self.latency_ms += latency
            self.wru += wru
            self.rru += rru
            self.failed_condition_wru += failed
            if operation == "TransactWriteItems":
                self.transactional_wru += wru

    def _dynamodb(
        self, operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any], error: Any
    ) -> tuple[float, float, float]:
        """Write units, read units and write units of failed conditions of one request."""
        condition_failed = error == "ConditionalCheckFailedException"
        if operation in ("PutItem", "UpdateItem", "DeleteItem"):
            size = _written_size(params)
            self._saw(size)
            units = write_units(size, transactional=False)
            return units, 0.0, units if condition_failed else 0.0
        if operation == "TransactWriteItems":
            actions = params.get("TransactItems", [])
            reasons = parsed.get("CancellationReasons") or []
            wru = failed = 0.0
            for index, action in enumerate(actions):
                ((_kind, body),) = action.items()
                size = _written_size(body)
                self._saw(size)
                units = write_units(size, transactional=True)
                wru += units
                if index < len(reasons) and reasons[index].get("Code") == "ConditionalCheckFailed":
                    failed += units
            return wru, 0.0, failed
        if operation == "BatchWriteItem":
            wru = 0.0
            for requests in params.get("RequestItems", {}).values():
                for request in requests:
                    body = request.get("PutRequest") or request.get("DeleteRequest") or {}
                    size = _written_size(body)
                    self._saw(size)
                    wru += write_units(size, transactional=False)
            return wru, 0.0, 0.0
        if operation == "GetItem":
            size = item_size(parsed.get("Item") or {})
            consistent = bool(params.get("ConsistentRead"))
            return 0.0, read_units(size, consistent=consistent), 0.0
        if operation in ("Query", "Scan"):
            size = sum(item_size(item) for item in parsed.get("Items") or [])
            consistent = bool(params.get("ConsistentRead"))
            return 0.0, read_units(size, consistent=consistent), 0.0
        if operation == "BatchGetItem":
            wanted = params.get("RequestItems") or {}
            rru = sum(
                read_units(
                    item_size(item), consistent=bool(wanted.get(table, {}).get("ConsistentRead"))
                )
                for table, items in (parsed.get("Responses") or {}).items()
                for item in items
            )
            return 0.0, rru, 0.0
        if operation == "TransactGetItems":
            rru = sum(
                read_units(item_size(r.get("Item") or {}), consistent=True, transactional=True)
                for r in parsed.get("Responses") or []
            )
            return 0.0, rru, 0.0
        return 0.0, 0.0, 0.0

    def _saw(self, size: int) -> None:
        self.largest_item_sent = max(self.largest_item_sent, size)


# --- per record and dollars -------------------------------------------------------------------


def lambda_seconds(latency_ms: float, cpu_seconds: float, memory_mb: int = MEMORY_MB) -> float:
    """Modelled function duration: request latencies plus CPU time at ``memory_mb``'s share of
    a vCPU (this machine's CPU seconds stretched by 1,769 / memory_mb, at most one vCPU)."""
    share = min(1.0, memory_mb / MB_PER_VCPU)
    return latency_ms / 1000 + cpu_seconds / share


def summarise(
    meter: CostMeter,
    *,
    records: int,
    invocations: int,
    cpu_seconds: float,
    largest_item_stored: int,
    memory_mb: int = MEMORY_MB,
) -> dict[str, Any]:
    """Per-record units, GB-seconds, requests and US dollars per million changes."""
    duration = lambda_seconds(meter.latency_ms, cpu_seconds, memory_mb)
    gb_seconds = duration * memory_mb / 1024
    sqs = sum(n for k, n in meter.requests.items() if k.startswith("sqs."))
    s3_puts = sum(
        n for k, n in meter.requests.items() if k.startswith("s3.") and not k.startswith("s3.Get")
    )
    s3_gets = sum(n for k, n in meter.requests.items() if k.startswith("s3.Get"))
    usd = {
        "dynamodb_writes": meter.wru * USD_PER_MILLION_WRU / 1e6,
        "dynamodb_reads": meter.rru * USD_PER_MILLION_RRU / 1e6,
        "lambda_duration": gb_seconds * USD_PER_GB_SECOND,
        "lambda_invocations": invocations * USD_PER_MILLION_INVOCATIONS / 1e6,
        "sqs": sqs * USD_PER_MILLION_SQS_REQUESTS / 1e6,
        "s3": s3_puts * USD_PER_THOUSAND_S3_PUTS / 1e3 + s3_gets * USD_PER_THOUSAND_S3_GETS / 1e3,
    }
    per_million = {k: round(v * 1e6 / records, 4) for k, v in usd.items()}
    return {
        "wru_per_record": round(meter.wru / records, 4),
        "rru_per_record": round(meter.rru / records, 4),
        "failed_condition_wru_per_record": round(meter.failed_condition_wru / records, 4),
        "transactional_wru_share": round(meter.transactional_wru / meter.wru, 4)
        if meter.wru
        else 0.0,
        "modelled_request_ms_per_record": round(meter.latency_ms / records, 4),
        "cpu_us_per_record": round(cpu_seconds * 1e6 / records, 2),
        "gb_seconds_per_record": round(gb_seconds / records, 8),
        "invocations_per_record": round(invocations / records, 4),
        "sqs_requests_per_record": round(sqs / records, 4),
        "s3_requests_per_record": round((s3_puts + s3_gets) / records, 4),
        "largest_item_sent_bytes": meter.largest_item_sent,
        "largest_item_stored_bytes": largest_item_stored,
        "usd_per_million_changes_by_part": per_million,
        "usd_per_million_changes": round(sum(per_million.values()), 4),
    }


def prices() -> dict[str, Any]:
    """The prices and model in use, for results.json and the report."""
    return {
        "region": PRICE_REGION,
        "date": PRICE_DATE,
        "source": PRICE_SOURCE,
        "usd_per_million_wru": USD_PER_MILLION_WRU,
        "usd_per_million_rru": USD_PER_MILLION_RRU,
        "usd_per_gb_second": USD_PER_GB_SECOND,
        "usd_per_gb_second_x86": USD_PER_GB_SECOND_X86,
        "usd_per_million_invocations": USD_PER_MILLION_INVOCATIONS,
        "usd_per_million_sqs_requests": USD_PER_MILLION_SQS_REQUESTS,
        "usd_per_thousand_s3_puts": USD_PER_THOUSAND_S3_PUTS,
        "memory_mb": MEMORY_MB,
        "architecture": ARCHITECTURE,
        "latency_source": LATENCY_SOURCE,
    }
