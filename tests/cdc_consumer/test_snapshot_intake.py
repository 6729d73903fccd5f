"""What a consumer does with a backfill beside its stream: a group's probe, a contribution two
writers replace at once, and the progress a consumer records for the backfill's horizon."""

from __future__ import annotations

from typing import Any

import pytest
from cdc_consumer import (
    ConsumerGroup,
    Contributions,
    GroupMember,
    LatestImage,
    SnapshotRefusedError,
    StreamProcessor,
)
from cdc_consumer.backfill.shapes import ConsumerProgress
from cdc_consumer.environment_variables import CONSUMER_PROGRESS_ENV
from cdc_consumer.progress import read_progress
from cdc_consumer.testing import FakeContext, TableStream, snapshot_event, stream_event

from cdc_local.endpoint import patched_environ
from tests.cdc_consumer.fixtures import Resources
from tests.reference_app.handlers.orders import handler_module, recompute

TTL_DELETIONS = {
    "eventName": ["REMOVE"],
    "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
}
HORIZON = 1_000


def probe_event() -> dict[str, Any]:
    event = snapshot_event([], horizon=HORIZON)
    event["cdcBackfill"]["probe"] = True
    return event


def archive(change: Any) -> None:
    """A side effect: cannot take snapshot rows."""


def test_a_group_probe_skips_a_member_whose_filter_admits_no_insert(resources: Resources) -> None:
    replica = resources.processor("replica")
    replica.projection(LatestImage(table_name=resources.view_table))
    archiver = resources.processor("archive")
    archiver.side_effect(archive)
    group = ConsumerGroup([GroupMember(replica), GroupMember(archiver, [TTL_DELETIONS])])

    answer = group.handle(probe_event(), FakeContext())

    assert answer == {
        "batchItemFailures": [],
        "cdcBackfill": {"consumers": ["replica"], "members": ["replica", "archive"]},
    }


def test_a_member_whose_filter_asks_for_no_user_identity_is_probed(resources: Resources) -> None:
    """Snapshot rows have no userIdentity: ``exists: false`` on it admits them (the runtime's
    matcher decides, not a rule of thumb that any userIdentity pattern excludes rows)."""
    replica = resources.processor("replica")
    replica.projection(LatestImage(table_name=resources.view_table))
    archiver = resources.processor("stats")
    archiver.side_effect(archive)
    not_ttl = {"userIdentity": {"type": [{"exists": False}]}}
    group = ConsumerGroup([GroupMember(replica), GroupMember(archiver, [not_ttl])])

    with pytest.raises(SnapshotRefusedError, match="'stats' cannot take snapshot rows"):
        group.handle(probe_event(), FakeContext())


def test_a_group_probe_names_a_member_that_cannot_take_rows(resources: Resources) -> None:
    replica = resources.processor("replica")
    replica.projection(LatestImage(table_name=resources.view_table))
    archiver = resources.processor("archive")
    archiver.side_effect(archive)
    group = ConsumerGroup(
        [GroupMember(replica), GroupMember(archiver, [{"eventName": ["INSERT"]}])]
    )

    with pytest.raises(SnapshotRefusedError, match="'archive' cannot take snapshot rows"):
        group.handle(probe_event(), FakeContext())


def stats_processor(resources: Resources, client: Any) -> StreamProcessor:
    order_stats = handler_module("order_stats")
    processor = StreamProcessor(
        "order-stats",
        idempotency_table=resources.idempotency_table,
        quarantine_queue_url=resources.queue_url,
        dynamodb_client=client,
        sqs_client=resources.sqs,
    )
    processor.projection(
        Contributions(
            "order-stats",
            order_stats.order_shares,
            select=order_stats.is_order,
            table_name=resources.idempotency_table,
            dynamodb_client=client,
        )
    )
    return processor


def test_a_contribution_replaced_meanwhile_is_retried_not_lost(resources: Resources) -> None:
    """The segment's row and the stream's change of one order race: the stream's batch read the
    contribution before the row replaced it, so its swap fails; the batch reports the record
    (transient), and its retry reads the row's contribution and applies the change over it."""
    stream = TableStream(clock=lambda: HORIZON + 5)
    row = {"pk": "ORDER#1", "customerId": "c1", "status": "pending", "amount": 4}
    stream.items[("ORDER#1",)] = dict(row)
    paid = stream.update(("ORDER#1",), status="paid")
    consumer = stats_processor(resources, resources.dynamodb)
    backfill = stats_processor(resources, resources.dynamodb)
    with patched_environ({"VIEW_TABLE_NAME": resources.view_table}):
        for projection in consumer.batch_hooks:
            projection([paid])  # the stream's batch reads: no contribution yet
        answer = backfill.handle(snapshot_event([row], horizon=HORIZON), FakeContext())
        assert answer["batchItemFailures"] == []
        consumer.batch_hooks.clear()  # as if it had read before the row was written
        first = consumer.handle(stream_event([paid]), FakeContext())
        consumer.batch_hooks.extend(p.start_batch for p in consumer.projections)
        retried = consumer.handle(stream_event([paid]), FakeContext())

    assert first == {"batchItemFailures": [{"itemIdentifier": paid["dynamodb"]["SequenceNumber"]}]}
    assert retried == {"batchItemFailures": []}
    assert resources.view() == recompute(stream.items.values())


def test_a_consumer_records_how_far_it_has_applied_only_when_asked(resources: Resources) -> None:
    stream = TableStream(clock=lambda: HORIZON + 7)
    stream.put({"pk": "ORDER#1", "customerId": "c1", "status": "paid", "amount": 4})
    processor = stats_processor(resources, resources.dynamodb)
    with patched_environ({"VIEW_TABLE_NAME": resources.view_table}):
        processor.handle(stream_event(stream.records), FakeContext())
        assert read_progress(resources.dynamodb, resources.idempotency_table, "order-stats") is None
        with patched_environ({CONSUMER_PROGRESS_ENV: "1"}):
            processor.handle(stream_event(stream.records), FakeContext())

    progress = read_progress(resources.dynamodb, resources.idempotency_table, "order-stats")
    at = (HORIZON + 7) * 1_000_000
    assert progress == ConsumerProgress("order-stats", at, first_applied_us=at)
