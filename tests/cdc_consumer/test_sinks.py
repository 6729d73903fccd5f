"""Sinks the engine does not name (issue 29): a sink defined here, outside
``cdc_consumer.sinks``, runs through StreamProcessor by the protocol alone: one module, no engine
edit. Two kinds of action: a self-guarding high-water mark (written alone, a failed condition a
no-op) and a mergeable maximum (in the transaction, one action per item for the whole batch)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from cdc_consumer import Change, MissingImageError
from cdc_consumer.sinks import ActionKind, OnConditionFailed
from cdc_consumer.testing import FakeContext, TableStream, stream_event

from tests.cdc_consumer.fixtures import RequestCounter, Resources
from tests.cdc_consumer.test_view_types import as_view

#: A write that carries its own order (the amount only grows): idempotent by itself.
HIGH_WATER = ActionKind(
    "high-water mark",
    guards_itself=True,
    writes_alone=True,
    on_condition_failed=OnConditionFailed.STALE,
)


class HighWaterAction(dict):  # type: ignore[type-arg]
    sink_kind = HIGH_WATER
    item_key: Mapping[str, Any] | None = None


class HighWater:
    """Keeps, per customer, the largest amount seen: ``SET top = :n IF top < :n``."""

    takes_snapshots = True

    def __init__(self, table: str) -> None:
        self.table = table
        self.__name__ = "high_water"

    def __call__(self, change: Change) -> list[dict[str, Any]]:
        image = change.new_image
        if image is None:
            return []
        key = {"pk": {"S": image["customer"]}}
        action = HighWaterAction(
            {
                "Update": {
                    "TableName": self.table,
                    "Key": key,
                    "UpdateExpression": "SET #top = :n",
                    "ConditionExpression": "attribute_not_exists(#top) OR #top < :n",
                    "ExpressionAttributeNames": {"#top": "top"},
                    "ExpressionAttributeValues": {":n": {"N": str(image["amount"])}},
                }
            }
        )
        action.item_key = key
        return [action]


def _amount(action: Any) -> int:
    return int(action["Update"]["ExpressionAttributeValues"][":n"]["N"])


def _larger(earlier: Any, later: Any) -> Any:
    return max(
        earlier, later, key=lambda a: int(a["Update"]["ExpressionAttributeValues"][":n"]["N"])
    )


#: A maximum that is not idempotent by itself (a plain SET): it needs the record's marker, and
#: two of one item merge into the larger one.
MAXIMUM = ActionKind("maximum", merge=_larger)


class MaximumAction(dict):  # type: ignore[type-arg]
    sink_kind = MAXIMUM


def maximum(table: str) -> Callable[[Change], list[dict[str, Any]]]:
    def project(change: Change) -> list[dict[str, Any]]:
        image = change.new_image or {}
        body = {
            "TableName": table,
            "Key": {"pk": {"S": "ALL"}},
            "UpdateExpression": "SET #top = :n",
            "ExpressionAttributeNames": {"#top": "top"},
            "ExpressionAttributeValues": {":n": {"N": str(image.get("amount", 0))}},
        }
        return [MaximumAction({"Update": body})]

    return project


def orders(stream: TableStream, amounts: list[int]) -> list[dict[str, Any]]:
    for number, amount in enumerate(amounts):
        stream.put({"pk": f"ORDER#{number}", "customer": f"C{number % 3}", "amount": amount})
    return stream.records


def test_a_sink_defined_outside_the_package_runs_through_the_processor(
    resources: Resources, count_requests: Callable[[Any], RequestCounter]
) -> None:
    table = resources.new_table("high-water")
    processor = resources.processor()
    processor.projection(HighWater(table))
    batch = orders(TableStream(keys=("pk",)), [5, 7, 3, 9, 1, 4, 8])
    counter = count_requests(resources.dynamodb)

    assert processor.handle(stream_event(batch), FakeContext()) == {"batchItemFailures": []}

    tops = {item["pk"]: item["top"] for item in resources.scan(table)}
    assert tops == {"C0": 9, "C1": 7, "C2": 4}
    # Self-guarding: written alone (UpdateItem), no marker, no transaction.
    assert counter.by_operation["UpdateItem"] == len(batch)
    assert counter.by_operation.get("TransactWriteItems", 0) == 0
    assert resources.markers() == []
    # A redelivery: every condition fails, each record a no-op (a duplicate), nothing changes.
    assert processor.handle(stream_event(batch), FakeContext()) == {"batchItemFailures": []}
    assert {item["pk"]: item["top"] for item in resources.scan(table)} == tops


def test_a_mergeable_kind_travels_as_one_action_per_item_beside_each_records_marker(
    resources: Resources,
) -> None:
    table = resources.new_table("maximum")
    processor = resources.processor()
    processor.projection(maximum(table))
    batch = orders(TableStream(keys=("pk",)), [5, 7, 3, 9, 1])
    sent: list[list[dict[str, Any]]] = []
    resources.dynamodb.meta.events.register(
        "provide-client-params.dynamodb.TransactWriteItems",
        lambda params, **_: sent.append(params["TransactItems"]),
    )

    assert processor.handle(stream_event(batch), FakeContext()) == {"batchItemFailures": []}

    assert [item["top"] for item in resources.scan(table)] == [9]
    (request,) = sent  # one transaction: five markers and one merged update
    assert sum("Update" in item for item in request) == 1
    assert len(resources.markers()) == len(batch)


class OldImageAudit:
    """A sink that declares the image it reads on itself, as the protocol says a sink may."""

    reads = ("OldImage",)
    __name__ = "old_image_audit"

    def __call__(self, change: Change) -> list[dict[str, Any]]:
        return []  # writes nothing for an INSERT: only the declaration can catch the stream


def test_the_images_a_sink_declares_on_itself_are_checked_before_it_runs(
    resources: Resources,
) -> None:
    """``reads`` on the sink counts as ``reads=`` at registration (it was ignored: a stream
    without old images ran the sink silently until a change it read came)."""
    processor = resources.processor()
    processor.projection(OldImageAudit())
    assert processor.reads == [("projection 'old_image_audit'", frozenset({"OldImage"}))]
    record = as_view(TableStream(keys=("pk",)).put({"pk": "A", "amount": 1}), "NEW_IMAGE")

    with pytest.raises(MissingImageError, match="OldImage"):
        processor.handle(stream_event([record]), FakeContext())
    # reads= at registration wins over the attribute.
    other = resources.processor()
    other.projection(OldImageAudit(), reads=["NewImage"])
    assert other.reads == [("projection 'old_image_audit'", frozenset({"NewImage"}))]
