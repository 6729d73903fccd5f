"""The TTL archive's object: binary values stay base64 text (documented), and round-trip."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from cdc_consumer import Change
from cdc_consumer.testing import FakeContext, stream_event, stream_record

from tests.cdc_consumer.fixtures import Resources
from tests.reference_app.handlers.orders import handler_module

ttl_archive = handler_module("ttl_archive")

EXPIRED = {
    "pk": b"ORDER#\x00\x01",
    "amount": Decimal("12.50"),
    "receipt": b"%PDF-1.7\xff",
    "attachments": {b"a", b"\x00"},
    "history": [{"signature": b"\x01\x02", "status": "paid"}],
}


def expiry() -> dict[str, Any]:
    return stream_record(
        "REMOVE",
        {"pk": EXPIRED["pk"]},
        old_image=EXPIRED,
        sequence_number=7,
        event_id="e7",
        ttl_expiry=True,
        approximate_creation_time=1_767_225_600,
    )


def test_archive_object_keeps_binary_as_base64_and_round_trips() -> None:
    record = expiry()
    key, body = ttl_archive.archive_object(record)

    document = json.loads(body)
    assert document["oldImage"]["receipt"] == {"B": "JVBERi0xLjf/"}
    assert document["keys"] == {"pk": {"B": "T1JERVIjAAE="}}
    assert "/pk=T1JERVIjAAE%3D/e7.json" in key
    assert ttl_archive.archived_item(body) == EXPIRED == Change.from_record(record).old_image


def test_an_expired_item_with_binary_is_archived_not_quarantined(
    resources: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    s3 = resources.endpoint.client("s3")
    s3.create_bucket(Bucket="archive")
    monkeypatch.setattr(ttl_archive, "_s3", s3)
    monkeypatch.setenv("ARCHIVE_BUCKET_NAME", "archive")
    processor = resources.processor("ttl-archive")
    processor.side_effect(ttl_archive.archive_expired_order)

    assert processor.handle(stream_event([expiry()]), FakeContext()) == {"batchItemFailures": []}

    assert resources.quarantined() == []
    (listed,) = s3.list_objects_v2(Bucket="archive")["Contents"]
    body = s3.get_object(Bucket="archive", Key=listed["Key"])["Body"].read()
    assert ttl_archive.archived_item(body) == EXPIRED
