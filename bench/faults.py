"""Faults injected into the projection run, the same for both consumers.

The target is one record in the middle of a batch whose order has a newer change later in the
same batch — the situation docs/design.md §4 warns about. Two faults hit its write:

* ``transient``: the write is throttled once (ProvisionedThroughputExceededException). The
  consumer reports the record; the mapping re-sends from the lowest reported sequence number.
* ``crash``: the write succeeds, then the process dies before the consumer records that it did
  (a timeout or out-of-memory kill); the mapping re-sends the whole batch after the invocation's
  deadline.
"""

from __future__ import annotations

import time
from collections import Counter
from decimal import Decimal, localcontext
from typing import Any

from cdc_consumer.decimals import DYNAMODB_CONTEXT

from bench.consumers import CONSUMER_NAME, Consumer
from bench.local_aws import VIEW_TABLE, Fault, marker_ids
from bench.projection import RunOptions, run
from bench.workload import CUSTOMER_PREFIX, Workload
from reference_app.oracle import contribution

#: The function timeout in the crash scenario, and so how long the mapping waits before it
#: re-sends a crashed batch. Short, so the benchmark does not wait long; long enough for a batch
#: of 100 records on moto's server beyond the runtime's 5 s safety margin
#: (cdc_consumer.defaults.SAFETY_MARGIN_MS), under which it stops taking records.
CRASH_TIMEOUT_S = 8.0
BATCH_SIZE = 100


def _delta(record: dict[str, Any]) -> tuple[str, tuple[Decimal, ...]]:
    """(customer, the sorted non-zero amounts the record ADDs): what its UpdateItem carries."""
    customer = ""
    figures: dict[str, Decimal] = {}
    # The new image last, so the customer is the new image's when there is one.
    for image, sign in (("OldImage", -1), ("NewImage", 1)):
        found = contribution(record["dynamodb"].get(image) or {})
        if found is not None:
            customer, values = found
            for name, value in values.items():
                with localcontext(DYNAMODB_CONTEXT):  # DynamoDB's 38 digits, exactly
                    figures[name] = figures.get(name, Decimal(0)) + sign * value
    return customer, tuple(sorted(v for v in figures.values() if v != 0))


def pick_target(workload: Workload, batch_size: int = BATCH_SIZE) -> dict[str, Any]:
    """A record in the middle of a batch, with a newer change of its order later in that batch,
    whose view write is unique in the workload (so the fault cannot hit another record)."""
    deltas = [_delta(r) for r in workload.records]
    seen = Counter(deltas)
    batches = (len(workload.records) + batch_size - 1) // batch_size
    for batch in range(min(batches - 1, 3), -1, -1) if batches > 1 else [0]:
        start = batch * batch_size
        chunk = workload.records[start : start + batch_size]
        for offset in range(min(len(chunk) // 10, len(chunk) - 1), len(chunk) - 1):
            record = chunk[offset]
            order = record["dynamodb"]["Keys"]["pk"]["S"]
            later = [r for r in chunk[offset + 1 :] if r["dynamodb"]["Keys"]["pk"]["S"] == order]
            delta = deltas[start + offset]
            if later and delta[1] and seen[delta] == 1:
                return record
    raise ValueError("no record in the workload has a newer change of its order later in its batch")


def _predicate(consumer: Consumer, target: dict[str, Any]) -> Any:
    if consumer.name == "powertools":
        customer, amounts = _delta(target)

        def powertools_write(operation: str, params: dict[str, Any]) -> bool:
            if operation != "UpdateItem" or params.get("TableName") != VIEW_TABLE:
                return False
            values = params.get("ExpressionAttributeValues", {}).values()
            amounts_written = tuple(sorted(Decimal(v["N"]) for v in values))
            key = params["Key"]["pk"]["S"]
            return key == CUSTOMER_PREFIX + customer and amounts_written == amounts

        return powertools_write
    # What commits the target: its per-record marker, or a ledger entry listing its number.
    marker = f"{CONSUMER_NAME}#{target['eventID']}"
    listed = f"#seq:{int(target['dynamodb']['SequenceNumber'])}"

    def runtime_write(operation: str, params: dict[str, Any]) -> bool:
        if operation != "TransactWriteItems":
            return False
        return any(name == marker or name.endswith(listed) for name in marker_ids(params))

    return runtime_write


def run_fault(consumer: Consumer, endpoint: Any, workload: Workload, kind: str) -> dict[str, Any]:
    """Run the workload with one fault of ``kind`` ("transient" or "crash") on the target."""
    target = pick_target(workload)
    when = _predicate(consumer, target)
    if kind == "transient":
        options = RunOptions(batch_size=BATCH_SIZE, faults=[Fault(when, "throttle")])
    elif kind == "crash":
        options = RunOptions(
            batch_size=BATCH_SIZE,
            faults=[Fault(when, "crash-after")],
            timeout_s=CRASH_TIMEOUT_S,
            after_crash=lambda: time.sleep(CRASH_TIMEOUT_S + 0.1),
        )
    else:
        raise ValueError(f"fault kind {kind!r} is unknown; use 'transient' or 'crash'")
    result = run(consumer, endpoint, workload, options)
    result["target"] = {
        "eventID": target["eventID"],
        "sequenceNumber": target["dynamodb"]["SequenceNumber"],
        "index": workload.records.index(target),
    }
    return result
