"""Redrive through the local pipeline on the synthesized reference stack (issue 5 must-show).

test_reference_pipeline.py already shows a batch whose retries ran out being held on the
on-failure queue and redriven. These add the quarantine's replay after the handler is fixed,
and the command line's answer to an on-failure message whose records the stream no longer
holds, S3's CLI replay of records the stream no longer holds. (Malformed messages, and lost
ranges against plain moto, are in tests/cdc_consumer/test_redrive.py; SQS pointers into a
trimmed stream reported lost, in test_on_failure_pipeline.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from cdc_local.accounting import ConsumerWiring, account, on_failure_batches, peek_messages, scan
from cdc_local.endpoint import LocalEndpoint
from cdc_local.faults import FaultPlan
from cdc_local.retention import STREAM_RETENTION_SECONDS
from cdc_local.runner import LocalPipeline
from reference_app.oracle import (
    actual_view,
    expected_view,
    order_stats_wiring,
    view_reconciled,
    view_table,
)
from reference_app.workload import OrderWorkload, apply

Handler = Callable[[dict[str, Any], Any], Any]


def numeric_string(typed: Any) -> str | None:
    """The text of a DynamoDB String attribute that holds a decimal number, else None."""
    if not isinstance(typed, dict) or set(typed) != {"S"}:
        return None
    try:
        Decimal(typed["S"])
    except InvalidOperation:
        return None
    return str(typed["S"])


def read_numeric_string_amounts(image: dict[str, Any]) -> dict[str, Any]:
    """The fix's reading of an order image: an ``amount`` sent as a numeric String is that
    Number. Any other amount is left as it is (``"ten"`` is still unreadable)."""
    text = numeric_string(image.get("amount"))
    return image if text is None else {**image, "amount": {"N": text}}


def fixed(handler: Handler) -> Handler:
    """Version 2 of the order-stats handler: reads amounts sent as numeric Strings, then runs
    version 1 (the deployed handler, with its runtime, environment and idempotency table)."""

    def handler_v2(event: dict[str, Any], context: Any) -> Any:
        for record in event["Records"]:
            images = record["dynamodb"]
            for side in ("NewImage", "OldImage"):
                if side in images:
                    images[side] = read_numeric_string_amounts(images[side])
        return handler(event, context)

    return handler_v2


def redrive_quarantine(pipeline: LocalPipeline, wiring: ConsumerWiring, handler: Handler) -> Any:
    from cdc_consumer import redrive

    return redrive.Redrive(
        invoker=redrive.CallableInvoker(handler=handler, function_name=wiring.function.name),
        stream_arn=wiring.mapping.stream_arn,
        sqs_client=pipeline.client("sqs"),
        streams_client=pipeline.client("dynamodbstreams"),
        consumer_name=wiring.consumer_name,
        member_names=[member.name for member in wiring.members],  # order-stats, ttl-archive
        receive_wait_seconds=0,
    ).run(wiring.quarantine_queue_url, redrive.Source.QUARANTINE)


def quarantined_pks(pipeline: LocalPipeline, wiring: ConsumerWiring) -> list[str]:
    messages = peek_messages(pipeline.client("sqs"), wiring.quarantine_queue_url)
    return sorted(m["record"]["dynamodb"]["Keys"]["pk"]["S"] for m in messages)


def markers(pipeline: LocalPipeline, wiring: ConsumerWiring) -> set[str]:
    """The idempotency table's items and the ledger's entries, by key."""
    ddb = pipeline.client("dynamodb")
    ids = {item["id"]["S"] for item in scan(ddb, wiring.idempotency_table)}
    assert wiring.ledger_table is not None
    entries = scan(ddb, wiring.ledger_table)
    return ids | {f"{item['id']['S']}|{item['seq']['S']}" for item in entries}


def view(pipeline: LocalPipeline, wiring: ConsumerWiring) -> dict[str, dict[str, Decimal]]:
    return actual_view(scan(pipeline.client("dynamodb"), view_table(wiring)))


def test_quarantined_records_are_replayed_once_the_handler_is_fixed_and_the_view_is_exact(
    aws: LocalEndpoint, reference_assembly: Path
) -> None:
    """A producer sent two orders' amounts as numeric Strings ("125"); version 1 of the
    order-stats handler raises PermanentError on them, so their three records are quarantined
    with the workload's poison order (amount "ten"). Version 2 reads numeric-String amounts;
    redriving the quarantine through it makes the view equal its recomputation under version
    2's reading, while "ten" is quarantined again. A second redrive, and a duplicated
    quarantine message, change nothing.

    Why a handler wrapper: the fix is code (what the handler accepts), so the items stay as the
    producer wrote them; rewriting them in the table would be fixing the data, and the replayed
    records would still carry the old images. Wrapping the deployed handler runs the fix with
    the same runtime, markers and view table as the function."""
    workload = OrderWorkload(changes=300, orders=30, poison=1, seed=6)
    typos = [  # (index in the workload to write after, change)
        (40, {"pk": "ORDER#typo-1", "customerId": "customer-001", "amount": "125"}),
        (41, {"pk": "ORDER#typo-2", "customerId": "customer-002", "amount": "40"}),
    ]
    with LocalPipeline(
        reference_assembly, "CdcReferenceStack", endpoint=aws, track_records=True
    ) as pipeline:
        wiring = order_stats_wiring(pipeline)
        ddb = pipeline.client("dynamodb")
        for index, change in enumerate(workload.plan()):
            apply(ddb, wiring.source_table, change)
            for at, typo in typos:
                if index == at:
                    item = {k: {"S": v} for k, v in typo.items()} | {"status": {"S": "pending"}}
                    ddb.put_item(TableName=wiring.source_table, Item=item)
            if index == 120:  # typo-1 is paid: still a String amount, so quarantined too
                ddb.update_item(
                    TableName=wiring.source_table,
                    Key={"pk": {"S": "ORDER#typo-1"}},
                    UpdateExpression="SET #s = :paid",
                    ExpressionAttributeNames={"#s": "status"},
                    ExpressionAttributeValues={":paid": {"S": "paid"}},
                )
            if index % 50 == 0:
                pipeline.poll()
        pipeline.run()

        assert quarantined_pks(pipeline, wiring) == sorted(
            ["ORDER#poison-1", "ORDER#typo-1", "ORDER#typo-1", "ORDER#typo-2"]
        )
        assert account(pipeline, wiring).lost == []
        assert view_reconciled(pipeline, wiring)  # version 1's view: the typos count nowhere
        orders = scan(ddb, wiring.source_table)
        expected_v2 = expected_view([read_numeric_string_amounts(item) for item in orders])
        assert view(pipeline, wiring) != expected_v2
        typo_1_insert = next(
            m
            for m in peek_messages(pipeline.client("sqs"), wiring.quarantine_queue_url)
            if m["record"]["eventName"] == "INSERT"
            and m["record"]["dynamodb"]["Keys"]["pk"]["S"] == "ORDER#typo-1"
        )

        handler_v2 = fixed(wiring.function.as_handler())
        report = redrive_quarantine(pipeline, wiring, handler_v2)

        # "ten" is still unreadable: quarantined again, reported by sequence number, not ok.
        poison_insert = next(
            m["record"]["dynamodb"]["SequenceNumber"]
            for m in peek_messages(pipeline.client("sqs"), wiring.quarantine_queue_url)
            if m["record"]["dynamodb"]["Keys"]["pk"]["S"] == "ORDER#poison-1"
        )
        assert [r.sequence_number for r in report.requarantined] == [poison_insert]
        assert not report.ok and not report.failed and not report.kept, report.summary()
        assert (report.messages_received, report.messages_deleted) == (4, 4)
        assert view(pipeline, wiring) == expected_v2
        assert expected_v2["CUSTOMER#customer-001"]["paid_amount"] >= Decimal(125)
        assert quarantined_pks(pipeline, wiring) == ["ORDER#poison-1"]  # still unreadable
        applied = markers(pipeline, wiring)

        again = redrive_quarantine(pipeline, wiring, handler_v2)  # "ten" goes round once more
        assert not again.ok and again.records_replayed == 1 and len(again.requarantined) == 1
        pipeline.client("sqs").send_message(  # SQS delivers at least once
            QueueUrl=wiring.quarantine_queue_url, MessageBody=json.dumps(typo_1_insert)
        )
        duplicate = redrive_quarantine(pipeline, wiring, handler_v2)
        assert duplicate.messages_deleted >= 1 and not duplicate.failed and not duplicate.kept
        assert view(pipeline, wiring) == expected_v2
        assert markers(pipeline, wiring) == applied
        assert quarantined_pks(pipeline, wiring) == ["ORDER#poison-1"]


def test_cli_replays_an_s3_object_whose_records_the_stream_no_longer_holds(
    aws: LocalEndpoint, reference_assembly: Path
) -> None:
    """Every invocation crashes, so each batch ends in the on-failure bucket (the default), whole.
    A day passes and the stream trims the records. ``python -m cdc_consumer.redrive --bucket B
    --prefix P --handler order_stats:handler --path DIR``, run with the consumer's environment,
    replays the objects, deletes them and exits 0; the view is exact (issue 12 must-show)."""
    offset = [0.0]
    with LocalPipeline(
        reference_assembly,
        "CdcReferenceStack",
        endpoint=aws,
        faults=FaultPlan(crash_probability=1.0),
        clock=lambda: time.time() + offset[0],
    ) as pipeline:
        wiring = order_stats_wiring(pipeline)
        assert wiring.on_failure_bucket is not None
        ddb = pipeline.client("dynamodb")
        for change in OrderWorkload(changes=6, orders=3, poison=0, seed=1).plan():
            apply(ddb, wiring.source_table, change)
        pipeline.drain()
        held = on_failure_batches(pipeline, wiring)
        assert held and not view_reconciled(pipeline, wiring)
        offset[0] += STREAM_RETENTION_SECONDS + 60
        assert pipeline.trim_streams() > 0

        asset_dir, *layer_dirs = wiring.function.code_dirs
        command = [sys.executable, "-m", "cdc_consumer.redrive", "--json"]
        command += ["--bucket", wiring.on_failure_bucket, "--prefix", wiring.on_failure_prefix]
        command += ["--stream-arn", wiring.mapping.stream_arn]
        command += ["--handler", "order_stats:handler", "--path", str(asset_dir)]
        environment = {
            **os.environ,
            **aws.environment(),
            **wiring.function.environment,  # the consumer's environment
            "PYTHONPATH": os.pathsep.join(str(d) for d in layer_dirs),  # the runtime layer
        }
        result = subprocess.run(
            command, capture_output=True, text=True, env=environment, timeout=120, check=False
        )

        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout.splitlines()[-1])  # after the handler's log lines
        assert report["ok"] and report["messages_deleted"] == len(held)
        assert report["records_replayed"] == sum(b["DDBStreamBatchInfo"]["batchSize"] for b in held)
        assert on_failure_batches(pipeline, wiring) == []
        assert view_reconciled(pipeline, wiring)


def test_the_redrive_functions_age_check_measures_the_failed_batch_bucket_locally(
    aws: LocalEndpoint, reference_assembly: Path
) -> None:
    """The hourly schedule's event, ``{"check": "failure-age"}``, run through the local pipeline
    on the synthesized redrive function (its environment, its role's credentials): it lists the
    mapping's prefix of the failed-batch bucket and prints ``OldestFailedBatchAge``, the metric
    the consumer's FailedBatchAge alarm watches; nothing is replayed or deleted (issue 41)."""
    with LocalPipeline(
        reference_assembly,
        "CdcReferenceStack",
        endpoint=aws,
        faults=FaultPlan(crash_probability=1.0),
    ) as pipeline:
        wiring = order_stats_wiring(pipeline)
        ddb = pipeline.client("dynamodb")
        for change in OrderWorkload(changes=4, orders=2, poison=0, seed=2).plan():
            apply(ddb, wiring.source_table, change)
        pipeline.drain()
        held = on_failure_batches(pipeline, wiring)
        assert held
        (redrive,) = [
            f
            for f in pipeline.functions.values()
            if f.spec.handler == "cdc_consumer.redrive_handler.handler"
        ]

        redrive.faults = None  # the crashes were the consumer's; the check runs clean
        result = redrive.invoke({"check": "failure-age"})

        assert not result.failed, result.error_message
        assert result.response["measured"] and 0 <= result.response["ageSeconds"] < 600
        lines = [json.loads(text) for text in result.output.splitlines() if '"_aws"' in text]
        assert [line["OldestFailedBatchAge"] for line in lines] == [result.response["ageSeconds"]]
        assert on_failure_batches(pipeline, wiring) == held, "a check replays nothing"
