"""Upgrade in place (cdc_consumer.legacy_markers): old per-record markers still count."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from cdc_consumer import Change
from cdc_consumer import legacy_markers as legacy
from cdc_consumer.defaults import LEGACY_MARKER_MARGIN_SECONDS
from cdc_consumer.legacy_markers import LegacyMarkers, batch_get
from cdc_consumer.record_writes import marker_action
from cdc_consumer.testing import stream_record

from tests.cdc_consumer.fixtures import Resources, create_table

STREAM = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-01-01T00:00:00.000"
OTHER_STREAM = STREAM.replace("orders", "invoices")
SINCE = 1_800_000_000


@pytest.fixture
def markers(resources: Resources) -> LegacyMarkers:
    table = f"ledger-{uuid.uuid4().hex[:8]}"
    create_table(resources.dynamodb, table, key="id", sort_key="seq")
    legacy._SINCE.clear()
    return LegacyMarkers(
        resources.dynamodb, resources.idempotency_table, table, "view", lambda: SINCE
    )


def change(number: int, created: float, stream: str = STREAM) -> Change:
    record = stream_record(
        "INSERT",
        {"pk": f"k{number}"},
        new_image={"pk": f"k{number}"},
        sequence_number=1000 + number,
        event_id=f"e{number}",
        source_arn=stream,
        approximate_creation_time=created,
    )
    return Change.from_record(record)


def covered(markers: LegacyMarkers, changes: list[Change]) -> set[str]:
    """One lookup of ``changes``' old markers, as a batch makes it."""
    table = markers.idempotency_table
    wanted = [change for change in changes if markers.may_have_marker(change)]
    found = batch_get(markers.client, {table: markers.keys(wanted)})[table]
    return markers.covered(changes, found)


def old_marker(resources: Resources, event_id: str, stream: str | None = STREAM) -> None:
    put = marker_action(resources.idempotency_table, f"view#{event_id}", SINCE + 100, stream)
    resources.dynamodb.put_item(
        **{k: v for k, v in put["Put"].items() if k != "ReturnValuesOnConditionCheckFailure"}
    )


def test_a_record_an_old_marker_covers_is_a_duplicate(
    resources: Resources, markers: LegacyMarkers
) -> None:
    old_marker(resources, "e1")
    old_marker(resources, "e2", stream=None)  # written before markers named their stream
    batch = [change(n, SINCE - 3600) for n in range(1, 4)]
    assert covered(markers, batch) == {"e1", "e2"}


def test_a_marker_of_another_stream_does_not_cover(
    resources: Resources, markers: LegacyMarkers
) -> None:
    old_marker(resources, "e1", stream=OTHER_STREAM)
    assert covered(markers, [change(1, SINCE - 3600)]) == set()


def test_one_batch_get_per_batch_and_none_for_records_newer_than_the_upgrade(
    resources: Resources, markers: LegacyMarkers, count_requests: Any
) -> None:
    markers.since()
    counter = count_requests(resources.dynamodb)
    old = [change(n, SINCE - 60) for n in range(150)]
    covered(markers, old)
    assert counter.by_operation["BatchGetItem"] == 2  # 100 keys a request
    counter.by_operation.clear()
    new = [change(n, SINCE + LEGACY_MARKER_MARGIN_SECONDS + 1) for n in range(100)]
    assert covered(markers, new) == set()
    assert counter.total == 0


def test_since_is_stored_once_and_kept(resources: Resources, markers: LegacyMarkers) -> None:
    assert markers.since() == SINCE
    legacy._SINCE.clear()  # a new execution environment, later
    later = LegacyMarkers(
        resources.dynamodb,
        markers.idempotency_table,
        markers.ledger_table,
        "view",
        lambda: SINCE + 999,
    )
    assert later.since() == SINCE
    other = LegacyMarkers(
        resources.dynamodb,
        markers.idempotency_table,
        markers.ledger_table,
        "other",
        lambda: SINCE + 999,
    )
    assert other.since() == SINCE + 999


def test_a_record_without_creation_time_is_looked_up(
    resources: Resources, markers: LegacyMarkers
) -> None:
    old_marker(resources, "e7")
    record = change(7, SINCE + 10**6)
    bare = Change(
        event_id=record.event_id,
        event_name=record.event_name,
        keys=record.keys,
        new_image=record.new_image,
        old_image=None,
        sequence_number=record.sequence_number,
        approximate_creation_time=None,
        is_ttl_expiry=False,
        source_arn=STREAM,
        raw={},
    )
    assert covered(markers, [bare]) == {"e7"}
