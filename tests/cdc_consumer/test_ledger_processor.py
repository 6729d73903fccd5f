"""StreamProcessor with the ledger (CDC_LEDGER_TABLE_NAME): one entry per transaction instead of
a processed-marker per record, and the cases that are easy to get wrong, end to end."""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import pytest
from cdc_consumer import legacy_markers
from cdc_consumer.environment_variables import LEDGER_TABLE_ENV
from cdc_consumer.routes.kinesis.testing import kinesis_data, kinesis_record
from cdc_consumer.testing import FakeContext, TableStream, stream_event

from tests.cdc_consumer.fixtures import Resources, create_table, mirror_projection
from tests.cdc_consumer.fixtures import deliver as deliver_from

#: The shard the deliveries come from, as a mapping with a tumbling window names it: the ledger
#: keys its lanes by it (records without one keep markers: test_shardless.py).
SHARD = "shardId-00000001700000000000-0a1b2c3d"


#: The answer to a windowed event whose records all settled.
OK = {"batchItemFailures": [], "state": {}}


def deliver(handler: Any, records: list[dict[str, Any]], shard: str | None = SHARD) -> Any:
    return deliver_from(handler, records, shard_id=shard)


def processor(resources: Resources, name: str = "view", client: Any = None) -> Any:
    made = resources.processor(name) if client is None else _with_client(resources, name, client)
    made.projection(mirror_projection(resources.view_table))
    return made


def _with_client(resources: Resources, name: str, client: Any) -> Any:
    from cdc_consumer import StreamProcessor

    return StreamProcessor(
        name,
        idempotency_table=resources.idempotency_table,
        quarantine_queue_url=resources.queue_url,
        dynamodb_client=client,
        sqs_client=resources.sqs,
    )


def writes(count: int, stream: TableStream | None = None) -> list[dict[str, Any]]:
    stream = stream or TableStream()
    return [stream.put({"pk": f"k{i}", "n": i}) for i in range(count)]  # type: ignore[misc]


def applied_counts(resources: Resources) -> dict[str, int]:
    return {pk.removeprefix("pk="): int(item["applied"]) for pk, item in resources.view().items()}


def entries(resources: Resources, table: str) -> list[dict[str, Any]]:
    """The entries (not the heads, the registry, the horizons: their sort keys start with a
    digit, the sequence number's length)."""
    return [item for item in resources.scan(table) if item["seq"][:1].isdigit()]


def test_one_entry_per_transaction_and_no_marker(resources: Resources, ledger: str) -> None:
    records = writes(10)
    handler = processor(resources).handle
    assert deliver(handler, records)[-1] == OK
    assert resources.markers() == []
    [entry] = entries(resources, ledger)
    assert int(entry["count"]) == 10
    assert applied_counts(resources) == {f"k{i}": 1 for i in range(10)}


def _bookkeeping(capsys: pytest.CaptureFixture[str]) -> list[tuple[int, int, int]]:
    """(MarkersWritten, LedgerEntriesWritten, LedgerRecordsListed) of each EMF line printed."""
    lines = [json.loads(ln) for ln in capsys.readouterr().out.splitlines() if '"_aws"' in ln]
    names = ("MarkersWritten", "LedgerEntriesWritten", "LedgerRecordsListed")
    return [tuple(line[name] for name in names) for line in lines]  # type: ignore[misc]


def test_entries_and_the_records_they_list_are_counted_as_markers_are(
    resources: Resources, ledger: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The metrics count what a batch wrote to know what it applied: with the ledger, the
    entries and the records they list (a hundred records: two transactions, two entries)."""
    records = writes(100)
    handler = processor(resources).handle
    capsys.readouterr()
    deliver(handler, records)
    assert _bookkeeping(capsys) == [(0, 2, 100)]
    assert len(entries(resources, ledger)) == 2
    deliver(handler, records)  # a redelivery writes nothing
    assert _bookkeeping(capsys) == [(0, 0, 0)]


def test_markers_are_counted_where_they_stay(
    resources: Resources, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a ledger table (an idempotency table given as a plain ITable), each applied
    record writes its marker, and the metric says so."""
    capsys.readouterr()
    deliver(processor(resources).handle, writes(3))
    assert _bookkeeping(capsys) == [(3, 0, 0)]
    assert len(resources.markers()) == 3


def test_a_redelivery_after_the_commit_applies_nothing_again(
    resources: Resources, ledger: str, count_requests: Any
) -> None:
    records = writes(10)
    handler = processor(resources).handle
    deliver(handler, records)
    legacy_markers._SINCE[(ledger, "view")] = 0  # long after the upgrade: no old marker
    requests = count_requests(resources.dynamodb)
    deliver(handler, records)  # the response was lost: Lambda delivers the batch again
    # the head in one BatchGetItem, its entries in one Query; no write at all
    assert dict(requests.by_operation) == {"BatchGetItem": 1, "Query": 1}
    assert applied_counts(resources) == {f"k{i}": 1 for i in range(10)}


def test_a_hundred_records_cost_one_lookup_and_two_transactions(
    resources: Resources, ledger: str, count_requests: Any
) -> None:
    records = writes(100)
    handler = processor(resources).handle
    legacy_markers._SINCE[(ledger, "view")] = 0  # long after the upgrade: no old marker
    requests = count_requests(resources.dynamodb)
    deliver(handler, records)
    # a new lane: its head read (none: no Query), its registration, then 98 + 2 records
    assert dict(requests.by_operation) == {
        "BatchGetItem": 1,
        "UpdateItem": 1,
        "TransactWriteItems": 2,
    }


def test_records_the_mapping_discarded_are_applied_when_they_come_back(
    resources: Resources, ledger: str
) -> None:
    """Records 2 and 3 aged out of the mapping (the function never saw them); the entry of
    the batch around them spans them without listing them. The redrive applies them."""
    records = writes(6)
    handler = processor(resources).handle
    deliver(handler, [records[0], records[1], records[4], records[5]])
    deliver(handler, records[2:4])  # the redrive of the discarded batch
    deliver(handler, records)  # and everything once more
    assert applied_counts(resources) == {f"k{i}": 1 for i in range(6)}


def test_two_deliveries_cut_differently_at_once_apply_each_record_once(
    resources: Resources, ledger: str
) -> None:
    """A redrive and the live consumer deliver overlapping records at once, with different
    cuts: the second writer's transaction meets the first's commit in the lane's head, reads
    the lane again and writes only what is left."""
    records = writes(12)
    other = resources.endpoint.client("dynamodb")
    second = processor(resources, client=other).handle
    done = threading.Event()

    def first_commits_meet_the_second(params: Any, **_: Any) -> None:
        if not done.is_set():
            done.set()  # once: the second delivery (records 4..11) commits in between
            assert deliver(second, records[4:])[-1] == OK

    resources.dynamodb.meta.events.register(
        "before-call.dynamodb.TransactWriteItems", first_commits_meet_the_second
    )
    assert deliver(processor(resources).handle, records[:8])[-1] == OK
    assert applied_counts(resources) == {f"k{i}": 1 for i in range(12)}
    assert sorted(int(e["count"]) for e in entries(resources, ledger)) == [4, 8]


def test_consumer_group_members_keep_their_own_entries(resources: Resources, ledger: str) -> None:
    records = writes(3)
    deliver(processor(resources, "one").handle, records)
    deliver(processor(resources, "two").handle, records)
    assert applied_counts(resources) == {f"k{i}": 2 for i in range(3)}
    assert len(entries(resources, ledger)) == 2


def test_records_delivered_whole_then_in_interleaved_batches_without_a_shard_apply_once(
    resources: Resources, ledger: str
) -> None:
    """Records applied in one windowed batch, delivered again in two interleaved batches
    without a shard (the window removed to raise the parallelization factor, which cuts a
    shard so), then whole with the shard: the shard-less deliveries find the lane through the
    registry, so each record is applied once (markers alone never read the ledger: a factor
    that switched to them applied all five again)."""
    records = writes(5)
    deliver(processor(resources).handle, records)
    for batch, shard in ((records[0::2], None), (records[1::2], None), (records, SHARD)):
        deliver(processor(resources).handle, batch, shard)
    assert applied_counts(resources) == {f"k{n}": 1 for n in range(5)}
    assert resources.markers() == []
    assert len(entries(resources, ledger)) == 1


def test_the_kinesis_route_keeps_markers(resources: Resources, ledger: str) -> None:
    """One DynamoDB change can be in a Kinesis stream twice, under two sequence numbers: only
    its eventID (the marker's key) tells the copy from a new change."""
    change = writes(1)[0]
    copies = [kinesis_record(kinesis_data(change), sequence_number=str(n)) for n in (1, 2)]
    handler = processor(resources).handle
    assert handler(stream_event(copies), FakeContext()) == {"batchItemFailures": []}
    assert applied_counts(resources) == {"k0": 1}
    assert len(resources.markers()) == 1
    assert resources.scan(ledger) == []


def test_an_upgrade_from_markers_counts_the_old_markers(
    resources: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The consumer ran with markers; the same stack now has a ledger table: a record an old
    marker covers is a duplicate (one BatchGetItem for the batch), the others apply."""
    records = writes(6)
    deliver(processor(resources).handle, records[:4])  # markers
    assert len(resources.markers()) == 4
    table = f"ledger-{uuid.uuid4().hex[:8]}"
    create_table(resources.dynamodb, table, key="id", sort_key="seq")
    monkeypatch.setenv(LEDGER_TABLE_ENV, table)
    legacy_markers._SINCE.clear()
    deliver(processor(resources).handle, records)  # a redelivery across the upgrade
    assert applied_counts(resources) == {f"k{i}": 1 for i in range(6)}
    assert [int(e["count"]) for e in entries(resources, table)] == [2]


def test_an_entry_is_no_larger_than_a_kilobyte_for_a_full_transaction(
    resources: Resources, ledger: str
) -> None:
    records = writes(98)
    deliver(processor(resources).handle, records)
    [entry] = entries(resources, ledger)
    blob = entry.pop("records").value  # boto3's Binary
    size = len(blob) + sum(len(name) + len(str(value)) for name, value in entry.items())
    assert size < 1024
