"""A test handler whose behaviour each record chooses with its `mode` attribute.

ok (default): processed; fail: the invocation raises; report: reported in batchItemFailures;
empty-id / unknown-id: a malformed batchItemFailures entry; slow: sleeps 50 ms;
fail-once / report-once: fail (raise / report) the first time the record is seen only;
write: puts an item keyed by the sequence number into the table named by SINK_TABLE.
"""

import os
import time

import boto3
from helperlib import WHO  # from the layer

from tests.cdc_local import recorder


def handler(event, context):
    recorder.record(WHO, event, context, dict(os.environ))
    failures = []
    for record in event["Records"]:
        image = record["dynamodb"].get("NewImage") or {}
        mode = image.get("mode", {}).get("S", "ok")
        sequence = record["dynamodb"]["SequenceNumber"]
        first_time = sequence not in recorder.SEEN
        recorder.SEEN.add(sequence)
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
    return {"batchItemFailures": failures}
