"""The TTL archive, end to end through the local pipeline on the synthesized reference stack.

Issue 6 must-show: expired orders (and only those) are archived to S3 once each, even when
deliveries repeat; manual deletes are not archived. The reference stack's TTL archive (the
library's ``TtlArchive``, a member of the orders consumers' group) receives, through its
member's filter, only DynamoDB's TTL deletions and writes each expired order's old image to the
archive bucket.

What is expected is worked out from the workload alone, not from the handler: the workload's
plan, replayed onto a dict, gives each order's last image; its ``expire`` changes are the orders
DynamoDB's TTL (the local sweeper) deletes and its ``delete`` changes are manual deletes. The
object's key and body are functions of the table, the order's key and its TTL value
(docs/constructs.md, "TtlArchive"), whatever record of the expiry the archive was given.

To count writes, not just objects, the tests turn on versioning on the local archive bucket:
every PutObject then leaves a version behind.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from cdc_local.accounting import (
    ConsumerWiring,
    on_failure_batches,
    peek_messages,
    redrive_on_failure,
    scan,
    stream_records,
)
from cdc_local.endpoint import LocalEndpoint
from cdc_local.faults import FaultPlan
from cdc_local.runner import LocalPipeline
from reference_app.handlers.orders_schema import (
    ARCHIVE_PREFIX,
    ORDER_PREFIX,
    TTL_ARCHIVE_CONSUMER,
)
from reference_app.handlers.orders_schema import (
    ORDERS_CONSUMERS_HANDLER as TTL_HANDLER,  # the TTL archive is a member of this group
)
from reference_app.workload import OrderWorkload, write_while_running

pytestmark = pytest.mark.xdist_group("cdc_local")  # with the other users of the assembly

ARCHIVE_BUCKET = "ExpiredOrdersArchiveBucket"


#: Writes between two pipeline turns, so the consumers keep up with the workload as it runs.
WRITES_PER_TURN = 40


@dataclass(frozen=True)
class Expected:
    """What the workload did to the orders, from its plan alone."""

    last_images: dict[str, dict[str, Any]]  # order pk -> its last image (DynamoDB JSON)
    expired: set[str]  # order pks DynamoDB's TTL deletes
    deleted: set[str]  # order pks a user deleted


def planned(workload: OrderWorkload) -> Expected:
    images: dict[str, dict[str, Any]] = {}
    expired: set[str] = set()
    deleted: set[str] = set()
    for change in workload.plan():
        pk = ORDER_PREFIX + change.order_id
        if change.operation == "put":
            images[pk] = dict(change.item)
        elif change.operation == "update":
            images[pk] = {**images[pk], **change.set}
        else:
            deleted.add(pk)
        if change.kind == "expire":
            expired.add(pk)
    return Expected(images, expired, deleted)


def run_workload(pipeline: LocalPipeline, workload: OrderWorkload) -> None:
    """Write the workload while the pipeline runs, then let the TTL sweeper delete the
    expired orders and drain their REMOVE records."""
    table = ConsumerWiring.of(pipeline, TTL_HANDLER).source_table
    write_while_running(pipeline, table, workload, WRITES_PER_TURN)
    pipeline.run()


def removes(pipeline: LocalPipeline, table: str) -> dict[str, dict[str, Any]]:
    """The stream's REMOVE records by order pk (each order is removed at most once)."""
    found: dict[str, dict[str, Any]] = {}
    for record in stream_records(pipeline, table):
        if record["eventName"] == "REMOVE":
            pk = record["dynamodb"]["Keys"]["pk"]["S"]
            assert pk not in found, f"{pk} removed twice: the workload never reuses an order id"
            found[pk] = record
    return found


def expected_object(table: str, image: dict[str, Any]) -> Any:
    """The archive's key and (parsed) body for one expired order, as docs/constructs.md
    ("TtlArchive") documents the layout: a function of the table, the key and the TTL value."""
    expires_at = int(image["expireAt"]["N"])
    day = datetime.fromtimestamp(expires_at, UTC)
    pk = image["pk"]["S"]
    key = (
        f"{ARCHIVE_PREFIX}table={table}/expiry_date={day:%Y-%m-%d}/"
        f"pk={quote(pk, safe='')}@{expires_at}.json"
    )
    return key, {"keys": {"pk": {"S": pk}}, "expires_at": expires_at, "old_image": image}


def expected_archive(
    pipeline: LocalPipeline, wiring: ConsumerWiring, expected: Expected
) -> dict[str, Any]:
    """Object key -> body for every expired order; checks the workload's premises on the way."""
    by_pk = removes(pipeline, wiring.source_table)
    assert expected.expired and expected.deleted, "the workload must expire and delete orders"
    assert expected.expired | expected.deleted == set(by_pk)
    archive = {}
    for pk in expected.expired:
        key, body = expected_object(wiring.source_table, expected.last_images[pk])
        archive[key] = body
    return archive


def archive_versions(pipeline: LocalPipeline) -> dict[str, list[Any]]:
    """Object key -> the parsed body of each of its versions (one per PutObject)."""
    s3 = pipeline.client("s3")
    bucket = pipeline.bucket_name(ARCHIVE_BUCKET)
    versions: dict[str, list[Any]] = {}
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for version in page.get("Versions", []):
            body = s3.get_object(Bucket=bucket, Key=version["Key"], VersionId=version["VersionId"])
            versions.setdefault(version["Key"], []).append(json.loads(body["Body"].read()))
    return versions


def count_puts(pipeline: LocalPipeline) -> None:
    """Keep a version of every PutObject to the local archive bucket (a test instrument; the
    stack's bucket is not versioned)."""
    pipeline.client("s3").put_bucket_versioning(
        Bucket=pipeline.bucket_name(ARCHIVE_BUCKET),
        VersioningConfiguration={"Status": "Enabled"},
    )


@contextmanager
def reference_pipeline(
    endpoint: LocalEndpoint, assembly: Path, faults: FaultPlan
) -> Iterator[LocalPipeline]:
    with LocalPipeline(
        assembly, "CdcReferenceStack", endpoint=endpoint, faults=faults, track_records=True
    ) as pipeline:
        count_puts(pipeline)
        yield pipeline


def test_expired_orders_are_archived_once_each_and_manual_deletes_never(
    aws: LocalEndpoint, reference_assembly: Path
) -> None:
    """Deliveries repeat (a succeeded batch delivered again; a response lost after the handler
    finished, so the whole batch is retried): every expired order's old image is in the archive,
    written by exactly one PutObject; no manual delete and no live order is archived."""
    workload = OrderWorkload(changes=1200, orders=40, poison=0, seed=4)
    faults = FaultPlan(seed=8, duplicate_delivery_probability=0.5, lost_response_probability=0.3)
    with reference_pipeline(aws, reference_assembly, faults) as pipeline:
        run_workload(pipeline, workload)
        wiring = ConsumerWiring.of(pipeline, TTL_HANDLER)
        expected = planned(workload)
        assert pipeline.counters.ttl_deletions == len(expected.expired)
        injected = pipeline.faults.counters if pipeline.faults else None
        assert injected is not None and injected.duplicate_deliveries and injected.lost_responses
        archive_metrics = pipeline.consumer_metrics[TTL_ARCHIVE_CONSUMER]
        assert archive_metrics["DuplicatesSkipped"] > 0  # repeats reached the archive consumer

        versions = archive_versions(pipeline)
        assert {key: bodies[-1] for key, bodies in versions.items()} == expected_archive(
            pipeline, wiring, expected
        )
        assert all(len(bodies) == 1 for bodies in versions.values()), versions
        archived = {body["keys"]["pk"]["S"] for bodies in versions.values() for body in bodies}
        assert not archived & expected.deleted

        # The member's filter, not the handler, kept the manual deletes out: nothing was quarantined
        # ("not a TTL deletion") and nothing is waiting on the on-failure queue.
        sqs = pipeline.client("sqs")
        assert peek_messages(sqs, wiring.quarantine_queue_url) == []
        assert wiring.on_failure_bucket is not None  # the default: S3 keeps batches whole
        assert on_failure_batches(pipeline, wiring) == []
        # The group, not the mapping, hands the archive only TTL deletions (the mapping
        # delivers every change: order-stats, behind the same mapping, takes them all).
        assert wiring.mapping.counters.records_filtered_out == 0
        assert archive_metrics["RecordsProcessed"] == len(expected.expired)


def let_crashed_claims_expire(pipeline: LocalPipeline, idempotency_table: str) -> int:
    """What waiting out the crashed invocations' timeout would do, without the wait (60 s).

    A crash between a side effect's claim and its completion leaves the claim INPROGRESS until
    the crashed invocation's deadline (``in_progress_expiration``, epoch ms; interfaces §7).
    Moving that deadline into the past is what the clock passing it does. Returns how many.
    """
    ddb = pipeline.client("dynamodb")
    past_ms = str(int(datetime.now(UTC).timestamp() * 1000) - 1)
    moved = 0
    for item in scan(ddb, idempotency_table):
        if item.get("status", {}).get("S") == "INPROGRESS":
            ddb.update_item(
                TableName=idempotency_table,
                Key={"id": item["id"]},
                UpdateExpression="SET in_progress_expiration = :past",
                ConditionExpression="#s = :in_progress",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={
                    ":past": {"N": past_ms},
                    ":in_progress": {"S": "INPROGRESS"},
                },
            )
            moved += 1
    return moved


def held_sequence_ranges(messages: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [
        (
            int(m["DDBStreamBatchInfo"]["startSequenceNumber"]),
            int(m["DDBStreamBatchInfo"]["endSequenceNumber"]),
        )
        for m in messages
    ]


def test_crashes_hold_expiries_on_the_on_failure_queue_then_redrive_archives_each_once(
    aws: LocalEndpoint, reference_assembly: Path
) -> None:
    """Handlers crash at random points (before the claim, between the claim and PutObject,
    between PutObject and completing the claim). A crash after the claim leaves it in progress
    for the archive's side-effect timeout (3 s); the mapping's immediate retry waits for it and
    takes it over (issue 11 §8), so a crash no longer exhausts the retries by itself. Whatever
    is archived is right, every expiry is archived or held on the on-failure queue (never lost,
    never archived twice with other bytes), redrive archives what is held, and a second
    redrive finds nothing to do."""
    workload = OrderWorkload(changes=1200, orders=40, poison=0, seed=4)
    faults = FaultPlan(seed=12, crash_probability=0.25, duplicate_delivery_probability=0.2)
    with reference_pipeline(aws, reference_assembly, faults) as pipeline:
        run_workload(pipeline, workload)
        wiring = ConsumerWiring.of(pipeline, TTL_HANDLER)
        assert wiring.on_failure_bucket is not None
        expected = planned(workload)
        archive = expected_archive(pipeline, wiring, expected)
        by_pk = removes(pipeline, wiring.source_table)
        injected = pipeline.faults.counters if pipeline.faults else None
        assert injected is not None and injected.crashes

        # After the run: whatever is archived is right, and written once ...
        sqs = pipeline.client("sqs")
        held = held_sequence_ranges(on_failure_batches(pipeline, wiring))
        versions = archive_versions(pipeline)
        for key, bodies in versions.items():
            assert bodies == [archive[key]], key
        # ... and every expired order is archived or held for redrive: none is lost.
        archived_pks = {bodies[0]["keys"]["pk"]["S"] for bodies in versions.values()}
        for pk in expected.expired - archived_pks:
            sequence = int(by_pk[pk]["dynamodb"]["SequenceNumber"])
            assert any(first <= sequence <= last for first, last in held), f"{pk} lost"
        assert peek_messages(sqs, wiring.quarantine_queue_url) == []

        assert pipeline.faults is not None
        pipeline.faults.plan = FaultPlan()  # the faults are over
        let_crashed_claims_expire(pipeline, wiring.idempotency_table)
        report = redrive_on_failure(pipeline, wiring)
        assert report.ok, report.summary()
        assert report.messages_deleted == len(held)
        assert (report.records_replayed > 0) == bool(held)
        assert on_failure_batches(pipeline, wiring) == []

        versions = archive_versions(pipeline)
        assert {key: bodies[-1] for key, bodies in versions.items()} == archive
        for key, bodies in versions.items():
            assert all(body == archive[key] for body in bodies), key
        archived = {body["keys"]["pk"]["S"] for bodies in versions.values() for body in bodies}
        assert archived == expected.expired and not archived & expected.deleted
        # A crash between PutObject and completing the claim makes the retry that takes the
        # claim over (or the redrive) write the object again: S3 refuses the conditional write
        # (If-None-Match), so every expired order has one version, written once.
        assert all(len(bodies) == 1 for bodies in versions.values())

        again = redrive_on_failure(pipeline, wiring)
        assert again.ok and again.messages_received == 0 and again.invocations == 0
        assert archive_versions(pipeline) == versions


def test_cdc_local_redrive_on_failure_replays_held_ttl_deletions(
    aws: LocalEndpoint, reference_assembly: Path
) -> None:
    """Records redrive reads back from the stream carry DynamoDB's TTL userIdentity, as the
    mapping saw them, so the TTL-only filter keeps them and the held expiries are archived."""
    with reference_pipeline(aws, reference_assembly, FaultPlan(crash_probability=1.0)) as pipeline:
        wiring = ConsumerWiring.of(pipeline, TTL_HANDLER)
        assert wiring.on_failure_bucket is not None
        ddb = pipeline.client("dynamodb")
        past = str(int(datetime.now(UTC).timestamp()) - 600)
        for n in range(3):
            item = {"pk": {"S": f"ORDER#{n}"}, "customerId": {"S": "c"}, "status": {"S": "paid"}}
            item |= {"amount": {"N": "10"}, "expireAt": {"N": past}}
            ddb.put_item(TableName=wiring.source_table, Item=item)
        pipeline.run()
        assert pipeline.counters.ttl_deletions == 3
        assert on_failure_batches(pipeline, wiring)
        assert pipeline.faults is not None
        pipeline.faults.plan = FaultPlan()

        report = redrive_on_failure(pipeline, wiring)

        assert report.records_filtered == 0, report.summary()
        assert len(archive_versions(pipeline)) == 3
