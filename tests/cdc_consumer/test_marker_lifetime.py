"""The runtime keeps processed-markers and side-effect claims for the consumer's marker lifetime
(CDC_MARKER_TTL_SECONDS, which the constructs derive from its replay windows), in projection and
side-effect mode alike; without the variable, for the rule applied to the longest windows it
can assume (issue 23 §1)."""

from __future__ import annotations

import uuid

import pytest
from cdc_consumer import Change
from cdc_consumer.defaults import (
    UNCONFIGURED_FAILED_BATCH_RETENTION_SECONDS,
    UNCONFIGURED_QUARANTINE_RETENTION_SECONDS,
)
from cdc_consumer.environment_variables import LEDGER_TABLE_ENV, MARKER_TTL_ENV
from cdc_consumer.replay_windows import ReplayWindows, minimum_marker_lifetime
from cdc_consumer.service_limits import STREAM_RETENTION_SECONDS, UNLIMITED_RECORD_AGE
from cdc_consumer.testing import DEFAULT_SHARD_ID, FakeContext, TableStream, stream_event

from tests.cdc_consumer.fixtures import Resources, create_table, mirror_projection

T0 = 1_800_000_000
DAY = 24 * 3600


def expirations(resources: Resources, lifetime: str | None, monkeypatch: pytest.MonkeyPatch):
    """The ``expiration`` of the marker a projection writes and of the claim a side effect
    completes, for one record each, with CDC_MARKER_TTL_SECONDS ``lifetime`` (None: unset)."""
    if lifetime is None:
        monkeypatch.delenv(MARKER_TTL_ENV, raising=False)
    else:
        monkeypatch.setenv(MARKER_TTL_ENV, lifetime)
    projection = resources.processor("view", clock=lambda: T0)
    projection.projection(mirror_projection(resources.view_table))
    effects = resources.processor("mailer", clock=lambda: T0)

    @effects.side_effect
    def notify(change: Change) -> None:
        pass

    record = TableStream().put({"pk": "ORDER#1", "status": "paid"})
    for processor in (projection, effects):
        processor.handle(stream_event([record]), FakeContext(remaining_ms=30_000))
    by_consumer = {m["id"].split("#")[0]: m["expiration"] for m in resources.markers()}
    return by_consumer["view"] - T0, by_consumer["mailer"] - T0


def test_markers_and_claims_live_the_consumers_lifetime(
    resources: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert expirations(resources, str(45 * DAY), monkeypatch) == (45 * DAY, 45 * DAY)


def ledger_expirations(
    resources: Resources, lifetime: str | None, monkeypatch: pytest.MonkeyPatch
) -> set[int]:
    """The ``expiration`` of each ledger item (entry and head) a projection writes for one
    record, less the clock, with CDC_MARKER_TTL_SECONDS ``lifetime`` (None: unset)."""
    ledger = f"ledger-{uuid.uuid4().hex[:8]}"
    create_table(resources.dynamodb, ledger, key="id", sort_key="seq")
    monkeypatch.setenv(LEDGER_TABLE_ENV, ledger)
    if lifetime is None:
        monkeypatch.delenv(MARKER_TTL_ENV, raising=False)
    else:
        monkeypatch.setenv(MARKER_TTL_ENV, lifetime)
    projection = resources.processor("view", clock=lambda: T0)
    projection.projection(mirror_projection(resources.view_table))
    record = TableStream().put({"pk": "ORDER#1", "status": "paid"})
    event = stream_event([record], shard_id=DEFAULT_SHARD_ID)
    projection.handle(event, FakeContext(remaining_ms=30_000))
    assert resources.markers() == []  # the ledger took the marker's place
    items = [
        item
        for item in resources.scan(ledger)
        if item["seq"] == "~head" or item["seq"][:1].isdigit()
    ]
    assert {item["seq"] == "~head" for item in items} == {True, False}  # an entry and the head
    return {int(item["expiration"]) - T0 for item in items}


def test_ledger_entries_live_as_long_as_markers(
    resources: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entries replace markers, so they outlive every replay window by the same rule: the
    consumer's marker lifetime, which the constructs derive (cdc_constructs.marker_lifetime)."""
    assert ledger_expirations(resources, str(45 * DAY), monkeypatch) == {45 * DAY}
    assert ledger_expirations(resources, None, monkeypatch) == {31 * DAY}


def test_without_the_variable_the_rule_for_the_longest_windows(
    resources: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    rule = minimum_marker_lifetime(
        ReplayWindows(
            STREAM_RETENTION_SECONDS,
            UNLIMITED_RECORD_AGE,
            UNCONFIGURED_FAILED_BATCH_RETENTION_SECONDS,
            UNCONFIGURED_QUARANTINE_RETENTION_SECONDS,
        )
    )
    assert rule == 31 * DAY  # 1 + 14 (+ 1, S3's rounding to midnight UTC) + 14 + 1
    assert expirations(resources, None, monkeypatch) == (rule, rule)
