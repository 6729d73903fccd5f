"""Writes that need no marker: a record whose every action is version-guarded (LatestImage's
put) is written without a processed-marker and without a transaction (a conditional PutItem,
1 write unit against 2), its write being idempotent by itself; a redelivery is a no-op, and a
record with any other action keeps its marker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc_consumer import LatestImage
from cdc_consumer.testing import FakeContext, TableStream, stream_event

from tests.cdc_consumer.fixtures import RequestCounter, Resources


def test_latest_image_records_carry_no_marker_and_redeliveries_are_no_ops(
    resources: Resources, count_requests: Callable[[Any], RequestCounter]
) -> None:
    table = resources.new_table("replica")
    latest = LatestImage(table_name=table)
    processor = resources.processor()
    processor.projection(latest)
    stream = TableStream(keys=("pk",))
    for n in range(10):
        stream.put({"pk": f"ORDER#{n % 4}", "amount": n})
    stream.delete(("ORDER#0",))
    batch = stream.records
    sent: list[dict[str, Any]] = []

    def remember(params: dict[str, Any], **_: Any) -> None:
        sent.append(params)

    resources.dynamodb.meta.events.register("provide-client-params.dynamodb.PutItem", remember)
    counter = count_requests(resources.dynamodb)

    assert processor.handle(stream_event(batch), FakeContext()) == {"batchItemFailures": []}
    first = dict(resources.scan(table)[0])
    # No markers, no transaction: each record's guarded put is one conditional PutItem (1 write
    # unit, not 2 in a transaction nor 4 with a marker).
    assert resources.markers() == []
    assert len(sent) == len(batch)
    assert all(put["TableName"] == table and put["ConditionExpression"] for put in sent)
    assert counter.by_operation.get("TransactWriteItems", 0) == 0
    assert {latest.image(i)["pk"] for i in resources.scan(table) if latest.image(i)} == {
        "ORDER#1",
        "ORDER#2",
        "ORDER#3",
    }

    # The whole batch again (a redelivery): every guarded put is stale, nothing changes.
    assert processor.handle(stream_event(batch), FakeContext()) == {"batchItemFailures": []}
    assert resources.markers() == []
    assert first in [dict(i) for i in resources.scan(table)]
