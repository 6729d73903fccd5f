"""A test handler whose behaviour each record chooses with its `mode` attribute.

ok (default): processed; fail: the invocation raises; report: reported in batchItemFailures;
empty-id / unknown-id: a malformed batchItemFailures entry; slow: sleeps 50 ms;
fail-once / report-once: fail (raise / report) the first time the record is seen only;
write: puts an item keyed by the sequence number into the table named by SINK_TABLE;
no-state / no-state-once: with a tumbling window, the responses (the first response) to a batch
holding the record have no ``state``.

With a tumbling window (the event has ``window``), the response's ``state`` counts the records
of the window so far (``{"records": n}``); ``recorder.OPTIONS["final_without_state"]`` final
invocations answer without state first.
"""

import os
import time

import boto3
from helperlib import WHO  # from the layer

from tests.cdc_local import recorder


def handler(event, context):
    recorder.record(WHO, event, context, dict(os.environ))
    failures = []
    without_state = False
    for record in event["Records"]:
        image = record["dynamodb"].get("NewImage") or {}
        mode = image.get("mode", {}).get("S", "ok")
        sequence = record["dynamodb"]["SequenceNumber"]
        first_time = sequence not in recorder.SEEN
        recorder.SEEN.add(sequence)
        without_state = (
            without_state or mode == "no-state" or (mode == "no-state-once" and first_time)
        )
        if mode == "fail" or (mode == "fail-once" and first_time):
            raise ValueError(f"poison record {sequence}")
        if mode == "report-once" and first_time:
            failures.append({"itemIdentifier": sequence})
        if mode == "write":
            boto3.client("dynamodb").put_item(
                TableName=os.environ["SINK_TABLE"], Item={"pk": {"S": sequence}}
            )
        if mode == "report":
            failures.append({"itemIdentifier": sequence})
        elif mode == "empty-id":
            failures.append({"itemIdentifier": ""})
        elif mode == "unknown-id":
            failures.append({"itemIdentifier": "1"})
        elif mode == "slow":
            time.sleep(0.05)
    if "window" not in event:
        return {"batchItemFailures": failures}
    if event["isFinalInvokeForWindow"] and recorder.OPTIONS.get("final_without_state", 0) > 0:
        recorder.OPTIONS["final_without_state"] -= 1
        without_state = True
    if without_state:
        return {"batchItemFailures": failures}
    state = {"records": event["state"].get("records", 0) + len(event["Records"])}
    return {"batchItemFailures": failures, "state": state}
