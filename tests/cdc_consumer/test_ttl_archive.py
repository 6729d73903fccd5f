"""The TTL archive's consumer (cdc_consumer.ttl_archive): one object per expired item, whatever
the deliveries, the cuts or the regions that saw the expiry; binary values round-trip."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from cdc_consumer import Change
from cdc_consumer.testing import FakeContext, stream_event, stream_record
from cdc_consumer.ttl_archive import (
    MAX_KEY_BYTES,
    TtlArchiver,
    archive_key,
    archive_object,
    archive_processor,
    archived_item,
)

from tests.cdc_consumer.fixtures import Resources

EXPIRES_AT = 1_767_225_600  # 2026-01-01T00:00:00Z
EXPIRED = {
    "pk": b"ORDER#\x00\x01",
    "expireAt": Decimal(EXPIRES_AT),
    "amount": Decimal("12.50"),
    "receipt": b"%PDF-1.7\xff",
    "attachments": {b"a", b"\x00"},
    "history": [{"signature": b"\x01\x02", "status": "paid"}],
}
SETTINGS = {"table": "Orders", "ttl_attribute": "expireAt", "prefix": "expired/"}


def expiry(event_id: str = "e7", created: int = EXPIRES_AT + 60, **options: Any) -> dict[str, Any]:
    old_image = options.pop("old_image", EXPIRED)
    return stream_record(
        "REMOVE",
        {"pk": old_image["pk"]},
        old_image=old_image,
        sequence_number=options.pop("sequence_number", 7),
        event_id=event_id,
        ttl_expiry=options.pop("ttl_expiry", True),
        approximate_creation_time=created,
        **options,
    )


def test_the_object_keeps_binary_as_base64_and_round_trips() -> None:
    record = expiry()
    found = archive_object(record, **SETTINGS)

    document = json.loads(found.body)
    assert found.body.endswith(b"\n") and found.body.count(b"\n") == 1  # one JSON line
    assert document["old_image"]["receipt"] == {"B": "JVBERi0xLjf/"}
    assert document["keys"] == {"pk": {"B": "T1JERVIjAAE="}}
    assert document["expires_at"] == EXPIRES_AT
    assert found.key == (
        f"expired/table=Orders/expiry_date=2026-01-01/pk=T1JERVIjAAE%3D@{EXPIRES_AT}.json"
    )
    assert archived_item(found.body) == EXPIRED == Change.from_record(record).old_image


def test_the_object_is_the_same_for_any_record_of_the_expiry() -> None:
    """Another region's record of the same expiry (another event id, creation time, stream)."""
    here = archive_object(expiry(), **SETTINGS)
    there = archive_object(
        expiry(
            "other-region-id",
            EXPIRES_AT + 3_600,
            ttl_expiry=False,
            source_arn="arn:aws:dynamodb:us-west-2:1:table/Orders/stream/x",
            sequence_number=99,
        ),
        **SETTINGS,
    )
    assert here == there


def test_a_key_longer_than_s3_takes_is_hashed_and_stays_deterministic() -> None:
    keys = {"pk": {"S": "p" * 2_000}, "sk": {"S": "s" * 900}}
    key = archive_key("expired/", "Orders", keys, EXPIRES_AT)

    assert len(key.encode()) <= MAX_KEY_BYTES
    assert key.startswith("expired/table=Orders/expiry_date=2026-01-01/sha256=")
    assert key == archive_key("expired/", "Orders", dict(reversed(keys.items())), EXPIRES_AT)


@pytest.fixture
def bucket(resources: Resources) -> tuple[Any, str]:
    s3 = resources.endpoint.client("s3")
    s3.create_bucket(Bucket="archive")
    s3.put_bucket_versioning(Bucket="archive", VersioningConfiguration={"Status": "Enabled"})
    return s3, "archive"


def _processor(resources: Resources, archiver: TtlArchiver) -> Any:
    return archive_processor(
        "ttl-archive",
        archiver=archiver,
        idempotency_table=resources.idempotency_table,
        quarantine_queue_url=resources.queue_url,
        dynamodb_client=resources.dynamodb,
        sqs_client=resources.sqs,
    )


def _versions(s3: Any, bucket: str) -> list[str]:
    return [v["Key"] for v in s3.list_object_versions(Bucket=bucket).get("Versions", [])]


def test_an_expiry_is_kept_once_across_redeliveries_cuts_and_regions(
    resources: Resources, bucket: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s3, name = bucket
    archiver = TtlArchiver(bucket=name, s3_client=s3, **SETTINGS)
    processor = _processor(resources, archiver)
    other = expiry("e8", sequence_number=8, old_image={"pk": b"other", "expireAt": EXPIRES_AT})
    replicated = expiry("from-west", EXPIRES_AT + 5, ttl_expiry=False, sequence_number=9)

    for batch in ([expiry(), other], [expiry()], [other, expiry()]):  # a redelivery, a new cut
        assert processor.handle(stream_event(batch), FakeContext()) == {"batchItemFailures": []}
    # The same expiry in another region's stream, where it arrives without the TTL identity
    # (what the constructs set on a consumer of a table with replicas tells it).
    monkeypatch.setenv("CDC_REPLICATED_TABLE", "true")
    monkeypatch.setenv("CDC_TTL_ATTRIBUTE", "expireAt")
    archiver(Change.from_record(replicated))

    assert sorted(_versions(s3, name)) == sorted(
        archive_object(r, **SETTINGS).key for r in (expiry(), other)
    )
    assert archiver.already_kept == 1  # the claims skipped the redeliveries; S3 the region


def test_a_crash_after_the_put_does_not_make_a_second_version(
    resources: Resources, bucket: tuple[Any, str]
) -> None:
    """The claim was never completed: the retry runs the side effect again; S3 refuses it."""
    s3, name = bucket
    archiver = TtlArchiver(bucket=name, s3_client=s3, **SETTINGS)
    archiver(Change.from_record(expiry()))
    archiver(Change.from_record(expiry()))

    assert len(_versions(s3, name)) == 1
    assert archiver.already_kept == 1


def test_what_is_not_an_expiry_or_has_no_ttl_value_is_quarantined(
    resources: Resources, bucket: tuple[Any, str]
) -> None:
    s3, name = bucket
    archiver = TtlArchiver(bucket=name, s3_client=s3, **SETTINGS)
    processor = resources.processor("ttl-archive")
    processor.side_effect(archiver, name="ttl-archive")
    user_delete = expiry("u1", ttl_expiry=False, sequence_number=1)
    no_ttl = expiry("n1", sequence_number=2, old_image={"pk": b"x"})

    result = processor.handle(stream_event([user_delete, no_ttl]), FakeContext())

    assert result == {"batchItemFailures": []}
    errors = [message["error"]["message"] for message in resources.quarantined()]
    assert any("is not a TTL deletion" in error for error in errors)
    assert any("no Number TTL attribute 'expireAt'" in error for error in errors)
    assert _versions(s3, name) == []


def test_the_handler_reads_its_settings_from_the_environment(
    resources: Resources, bucket: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s3, name = bucket
    for variable, value in {
        "CDC_ARCHIVE_BUCKET": name,
        "CDC_ARCHIVE_TABLE": "Orders",
        "CDC_ARCHIVE_TTL_ATTRIBUTE": "expireAt",
    }.items():
        monkeypatch.setenv(variable, value)
    processor = _processor(resources, TtlArchiver(s3_client=s3))

    assert processor.handle(stream_event([expiry()]), FakeContext()) == {"batchItemFailures": []}
    expected = archive_object(expiry(), table="Orders", ttl_attribute="expireAt")
    assert _versions(s3, name) == [expected.key]


def test_a_missing_setting_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CDC_ARCHIVE_BUCKET", raising=False)
    archiver = TtlArchiver(table="Orders", ttl_attribute="expireAt", s3_client=object())
    with pytest.raises(Exception, match="CDC_ARCHIVE_BUCKET is not set"):
        archiver(Change.from_record(expiry()))
