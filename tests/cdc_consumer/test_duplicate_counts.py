"""A redelivery counts as a duplicate (``DuplicatesSkipped``), not as processed, whatever
guards the sink: a marker, a ledger entry, a version-guarded write found stale, or a
contribution already at the change's version (the sink returns ``AlreadyApplied``)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from cdc_consumer import Change, Contributions, LatestImage
from cdc_consumer.sinks import ActionKind, AlreadyApplied, OnConditionFailed
from cdc_consumer.sinks.guarded import guard
from cdc_consumer.testing import FakeContext, TableStream, stream_event

from tests.cdc_consumer.fixtures import Resources


def counts(output: str) -> list[tuple[int, int]]:
    """(RecordsProcessed, DuplicatesSkipped) of each invocation's metrics line."""
    lines = [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]
    return [(m["RecordsProcessed"], m["DuplicatesSkipped"]) for m in lines]


def shares(image: dict[str, Any] | None) -> list[tuple[str, dict[str, str], Any]]:
    if not image:
        return []
    return [("view", {"pk": f"CUSTOMER#{image['customer']}"}, {"total": image["amount"]})]


def test_a_redelivered_batch_of_contributions_counts_as_duplicates(
    resources: Resources, capsys: Any
) -> None:
    processor = resources.processor("totals")
    view = resources.view_table

    def to_view(image: dict[str, Any] | None) -> list[tuple[str, dict[str, str], Any]]:
        return [(view, key, values) for _, key, values in shares(image)]

    processor.projection(Contributions("totals", to_view, table_name=resources.idempotency_table))
    stream = TableStream(keys=("pk",))
    for n in range(6):
        stream.put({"pk": f"ORDER#{n}", "customer": f"c{n % 2}", "amount": Decimal(n + 1)})
    event = stream_event(stream.records)

    for _ in range(2):
        assert processor.handle(event, FakeContext()) == {"batchItemFailures": []}

    assert counts(capsys.readouterr().out) == [(6, 0), (0, 6)]
    totals = {item["pk"]: item["total"] for item in resources.scan(view)}
    assert totals == {"CUSTOMER#c0": 9, "CUSTOMER#c1": 12}


def test_a_redelivered_latest_image_batch_counts_as_duplicates(
    resources: Resources, capsys: Any
) -> None:
    processor = resources.processor("replica")
    processor.projection(LatestImage(table_name=resources.new_table("replica")))
    stream = TableStream(keys=("pk",))
    for n in range(5):
        stream.put({"pk": f"ORDER#{n}", "amount": n})
    event = stream_event(stream.records)

    for _ in range(2):
        assert processor.handle(event, FakeContext()) == {"batchItemFailures": []}

    assert counts(capsys.readouterr().out) == [(5, 0), (0, 5)]


def test_already_applied_is_an_empty_list() -> None:
    """A sink's caller that reads its result as a list sees nothing to write."""
    assert AlreadyApplied() == [] and isinstance(AlreadyApplied(), list)


#: A sink's own kind: guarded by a version like LatestImage's writes, but always written in a
#: transaction (not alone), so a redelivery's stale writes are dropped from the transaction.
GUARDED_IN_TRANSACTION = ActionKind(
    "guarded-in-transaction", guards_itself=True, on_condition_failed=OnConditionFailed.STALE
)


class InTransaction(dict):  # type: ignore[type-arg]
    sink_kind = GUARDED_IN_TRANSACTION
    item_key: dict[str, Any] | None = None


def test_a_record_whose_every_guarded_write_is_stale_in_a_transaction_is_a_duplicate(
    resources: Resources, capsys: Any
) -> None:
    table = resources.new_table("search")

    def search_document(change: Change) -> list[dict[str, Any]]:
        stream = change.raw["dynamodb"]
        put = guard({"Put": {"TableName": table, "Item": stream["NewImage"]}}, change.version)
        action = InTransaction(put)
        action.item_key = stream["Keys"]
        return [action]

    processor = resources.processor("search")
    processor.projection(search_document)
    stream = TableStream(keys=("pk",))
    for n in range(4):
        stream.put({"pk": f"ORDER#{n}", "amount": n})
    event = stream_event(stream.records)

    for _ in range(2):
        assert processor.handle(event, FakeContext()) == {"batchItemFailures": []}

    assert counts(capsys.readouterr().out) == [(4, 0), (0, 4)]
    assert len(resources.scan(table)) == 4


def test_a_poison_record_is_quarantined_per_delivery_and_distinct_once(
    resources: Resources,
) -> None:
    """Documented (docs/runtime.md, "Quarantined once per delivery"): a poison record commits
    nothing, so a redelivered batch quarantines it again; the testing helper gives the records."""
    from cdc_consumer import PermanentError
    from cdc_consumer.testing import distinct_quarantined

    processor = resources.processor("orders")

    @processor.projection
    def refuse_the_poison(change: Change) -> list[dict[str, Any]]:
        if change.new_image and change.new_image.get("poison"):
            raise PermanentError("poison")
        return []

    stream = TableStream(keys=("pk",))
    batch = [stream.put({"pk": "a"}), stream.put({"pk": "b", "poison": True})]
    for _ in range(2):  # a batch delivered twice (a retry after a timeout, say)
        assert processor.handle(stream_event(batch), FakeContext()) == {"batchItemFailures": []}

    messages = resources.quarantined()
    assert len(messages) == 2
    (distinct,) = distinct_quarantined(messages)
    assert distinct["record"]["eventID"] == batch[1]["eventID"]
