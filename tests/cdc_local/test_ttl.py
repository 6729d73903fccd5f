"""The TTL sweeper, and TTL deletions marked in the stream as DynamoDB marks them."""

from __future__ import annotations

import time

from tests.cdc_local import recorder
from tests.cdc_local.helpers import delete, put

NOW = time.time()
YEAR = 365 * 24 * 3600


def remaining_keys(pipeline, table: str = "Items") -> set[str]:
    items = pipeline.client("dynamodb").scan(TableName=pipeline.table_name(table))["Items"]
    return {i["pk"]["S"] for i in items}


def test_sweeper_deletes_only_numbers_of_epoch_seconds_in_the_past(pipeline_for) -> None:
    """DynamoDB TTL: the attribute must be a Number of epoch seconds at or before now; values in
    milliseconds (far future in seconds), non-numbers and values more than five years in the past
    are never deleted; an item without the attribute stays."""
    pipeline = pipeline_for("Filtered")
    put(pipeline, "expired", expiresAt=int(NOW) - 10)
    put(pipeline, "future", expiresAt=int(NOW) + 3600)
    put(pipeline, "milliseconds", expiresAt=int(NOW * 1000) - 10_000)
    put(pipeline, "string", expiresAt=str(int(NOW) - 10))
    put(pipeline, "six-years-old", expiresAt=int(NOW) - 6 * YEAR)
    put(pipeline, "no-ttl")
    assert pipeline.sweep_ttl() == 1
    assert remaining_keys(pipeline) == {
        "future",
        "milliseconds",
        "string",
        "six-years-old",
        "no-ttl",
    }
    assert pipeline.sweep_ttl() == 0


def test_ttl_removes_carry_the_service_user_identity_and_user_deletes_do_not(pipeline_for) -> None:
    """A TTL deletion's REMOVE record has userIdentity {type: Service, principalId:
    dynamodb.amazonaws.com}; the Filtered stack's mapping lets through INSERTs whose status
    starts with "p" and TTL deletions, and drops the rest before the handler."""
    pipeline = pipeline_for("Filtered")
    put(pipeline, "paid", status="paid")
    put(pipeline, "open", status="open")
    put(pipeline, "paid", status="pending")  # a MODIFY: not an INSERT
    put(pipeline, "expiring", status="open", expiresAt=int(NOW) - 1)
    delete(pipeline, "open")  # a user's REMOVE
    pipeline.run()  # drain, sweep, drain the sweeper's REMOVE
    delivered = [r for i in recorder.INVOCATIONS for r in i.event["Records"]]
    assert [(r["eventName"], r["dynamodb"]["Keys"]["pk"]["S"]) for r in delivered] == [
        ("INSERT", "paid"),
        ("REMOVE", "expiring"),
    ]
    assert delivered[1]["userIdentity"] == {
        "type": "Service",
        "principalId": "dynamodb.amazonaws.com",
    }
    assert "userIdentity" not in delivered[0]
    counters = pipeline.counters
    assert counters.records_read == 6 and counters.records_filtered_out == 4
    assert counters.ttl_deletions == 1


def test_every_mapping_on_the_stream_sees_the_ttl_mark(pipeline_for) -> None:
    pipeline = pipeline_for("TwoFunctions")
    put(pipeline, "expiring", expiresAt=int(NOW) - 1)
    pipeline.run()
    removes = [
        (i.probe, r.get("userIdentity"))
        for i in recorder.INVOCATIONS
        for r in i.event["Records"]
        if r["eventName"] == "REMOVE"
    ]
    service = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    assert sorted(removes, key=lambda x: x[0]) == [("other", service), ("probe", service)]


def test_a_ttl_value_in_milliseconds_is_warned_about_once_with_the_seconds(pipeline_for) -> None:
    """DynamoDB never expires it, silently; the local pipeline says so (cdc-local prints it)."""
    pipeline = pipeline_for("Filtered")
    millis = int(NOW * 1000) - 10_000
    put(pipeline, "milliseconds", expiresAt=millis)
    put(pipeline, "milliseconds-too", expiresAt=millis + 1)
    pipeline.sweep_ttl()
    pipeline.sweep_ttl()
    (warning,) = [w for w in pipeline.warnings if "looks like epoch milliseconds" in w]
    assert f"expiresAt = {millis}" in warning or f"expiresAt = {millis + 1}" in warning
    assert pipeline.table_name("Items") in warning
    assert f"({millis // 1000}" in warning or f"({(millis + 1) // 1000}" in warning


def test_a_mapping_that_drops_ttl_deletions_is_warned_about_once() -> None:
    """StreamFilters.exclude_ttl_deletions() on a view that counts live items keeps the expired
    ones for ever: the mapping that drops a TTL deletion says so, once."""
    from cdc_local.ttl import TtlLedger

    ledger = TtlLedger()
    arn = "arn:aws:dynamodb:us-east-1:123456789012:table/Users/stream/1"
    user_delete = {"eventName": "REMOVE", "eventSourceARN": arn}
    ttl_delete = {
        **user_delete,
        "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
    }
    ledger.filtered_out("CountsMapping", user_delete)
    assert ledger.warnings == []
    ledger.filtered_out("CountsMapping", ttl_delete)
    ledger.filtered_out("CountsMapping", ttl_delete)
    (warning,) = ledger.warnings
    assert warning.startswith("mapping CountsMapping: its filters drop TTL deletions")
    assert "keeps the expired ones" in warning


def test_a_sweeper_deletion_marks_the_record_of_its_own_region_only() -> None:
    """A global table's replicas share the table's name: the REMOVE replicated into another
    region's stream is not the TTL's there (it arrives without the identity, as on AWS)."""
    from cdc_local.ttl import TtlLedger

    ledger = TtlLedger()
    keys, item = {"pk": {"S": "o1"}}, {"pk": {"S": "o1"}, "expireAt": {"N": "1"}}
    ledger.record("Orders", keys, item, region="us-east-1")

    def remove(sequence: str) -> dict:
        return {
            "eventName": "REMOVE",
            "dynamodb": {"Keys": keys, "OldImage": item, "SequenceNumber": sequence},
        }

    west = "arn:aws:dynamodb:us-west-2:123456789012:table/Orders/stream/1"
    east = "arn:aws:dynamodb:us-east-1:123456789012:table/Orders/stream/1"
    assert "userIdentity" not in ledger.annotate(west, remove("1"))
    assert "userIdentity" in ledger.annotate(east, remove("1"))
