"""Two deliveries of the same records at once, interleaved deterministically at each point where
the ledger can meet another writer (a failed head condition, a TransactionConflict, the
one-at-a-time fallback), and a change of bookkeeping under a running consumer (a window added or
removed, the parallelization factor raised). Each case applied some records twice before the
runtime checked, before every transaction, what the lane lists under the version it requires.

The projection appends each record's sequence number to its item's ``applied`` list, so a
record applied twice, lost, or applied after a newer change of its item shows in the list.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from cdc_consumer import StreamProcessor
from cdc_consumer.change import Change
from cdc_consumer.testing import FakeContext, TableStream, stream_event

from tests.cdc_consumer.fixtures import Resources, deliver, error_response

SHARD = "shardId-00000001700000000000-0a1b2c3d"
OK = {"batchItemFailures": [], "state": {}}


def appending(view_table: str) -> Any:
    """A projection appending the record's sequence number to its item's ``applied`` list."""

    def project(change: Change) -> list[dict[str, Any]]:
        return [
            {
                "Update": {
                    "TableName": view_table,
                    "Key": {"pk": {"S": str(change.keys["pk"])}},
                    "UpdateExpression": "SET #a = list_append(if_not_exists(#a, :none), :seq)",
                    "ExpressionAttributeNames": {"#a": "applied"},
                    "ExpressionAttributeValues": {
                        ":none": {"L": []},
                        ":seq": {"L": [{"N": change.sequence_number}]},
                    },
                }
            }
        ]

    return project


def handler(resources: Resources, client: Any = None, **options: Any) -> Any:
    """The consumer's handler, on its own DynamoDB client (another delivery's) when given."""
    if client is None:
        processor = resources.processor("view", **options)
    else:
        processor = StreamProcessor(
            "view",
            idempotency_table=resources.idempotency_table,
            quarantine_queue_url=resources.queue_url,
            dynamodb_client=client,
            sqs_client=resources.sqs,
            **options,
        )
    processor.projection(appending(resources.view_table))
    return processor.handle


def applied(resources: Resources) -> dict[str, list[int]]:
    return {pk: [int(n) for n in item.get("applied", [])] for pk, item in resources.view().items()}


def expected(records: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Each record once, in stream order per item."""
    per_item: dict[str, list[int]] = {}
    for record in records:
        pk = record["dynamodb"]["Keys"]["pk"]["S"]
        per_item.setdefault(pk, []).append(int(record["dynamodb"]["SequenceNumber"]))
    return per_item


def once_before(client: Any, operation: str, action: Any) -> None:
    """Run ``action`` once, just before ``client``'s first ``operation`` call."""
    done: list[bool] = []

    def hook(**_: Any) -> None:
        if not done:
            done.append(True)
            action()

    client.meta.events.register(f"before-call.dynamodb.{operation}", hook)


def test_the_issues_minimal_case_a_later_transaction_of_the_batch_is_checked_again(
    resources: Resources, ledger: str
) -> None:
    """A holds [r1(x) r2 r3 r4(x)]: two transactions, since x is in both. B commits [r0 r1 r2]
    and [r3 r4 r5] between A's lookup and A's first commit. A's first transaction meets the
    head and reads the lane again; its second, with r4, must not commit (it did: r4 twice)."""
    stream = TableStream()
    r0 = stream.put({"pk": "w"})
    r1 = stream.put({"pk": "x", "v": 1})
    r2, r3 = stream.put({"pk": "y"}), stream.put({"pk": "z"})
    r4 = stream.put({"pk": "x", "v": 2})
    r5 = stream.put({"pk": "v"})
    records = [r0, r1, r2, r3, r4, r5]
    other = resources.endpoint.client("dynamodb")
    b = handler(resources, other)

    def b_commits() -> None:
        for batch in ([r0, r1, r2], [r3, r4, r5]):
            assert b(stream_event(batch, shard_id=SHARD), FakeContext()) == OK

    once_before(resources.dynamodb, "TransactWriteItems", b_commits)
    assert deliver(handler(resources), [r1, r2, r3, r4], shard_id=SHARD) == [OK]
    assert applied(resources) == expected(records)


def test_the_one_at_a_time_fallback_checks_every_later_record_again(
    resources: Resources, ledger: str
) -> None:
    """DynamoDB refuses A's transaction without naming a record (a ValidationException), so A
    commits one record at a time; B commits the same records first. A's first single meets
    the head; the singles after it must find their records listed (they were committed: twice)."""
    stream = TableStream()
    records = [stream.put({"pk": f"k{i}"}) for i in range(4)]
    b = handler(resources, resources.endpoint.client("dynamodb"))
    refused: list[bool] = []

    def refuse_once(params: Any, **_: Any) -> Any:
        if refused:
            return None
        refused.append(True)
        assert b(stream_event(records, shard_id=SHARD), FakeContext()) == OK
        return error_response("ValidationException", "refused without a record named")

    resources.dynamodb.meta.events.register("before-call.dynamodb.TransactWriteItems", refuse_once)
    assert deliver(handler(resources), records, shard_id=SHARD) == [OK]
    assert applied(resources) == expected(records)


def conflicts_on_the_head(client: Any, times: int) -> Counter[str]:
    """Cancel ``client``'s transactions that update a lane's head with a TransactionConflict on
    it, ``times`` times; counts what was cancelled."""
    cancelled: Counter[str] = Counter()

    def hook(params: Any, **_: Any) -> Any:
        import json

        items = json.loads(params["body"])["TransactItems"]
        heads = [
            i
            for i, a in enumerate(items)
            if a.get("Update", {}).get("Key", {}).get("seq") == {"S": "~head"}
        ]
        if not heads or cancelled["head"] >= times:
            return None
        cancelled["head"] += 1
        reasons = [{"Code": "None"} for _ in items]
        reasons[heads[0]] = {"Code": "TransactionConflict", "Message": "in flight"}
        return error_response(
            "TransactionCanceledException", "cancelled", CancellationReasons=reasons
        )

    client.meta.events.register("before-call.dynamodb.TransactWriteItems", hook)
    return cancelled


def test_a_transaction_conflict_on_the_head_is_a_meeting_not_a_failed_batch(
    resources: Resources, ledger: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """DynamoDB answers two in-flight transactions on one item with TransactionConflict: the
    batch backs off, reads the lane again and commits, in the same invocation."""
    stream = TableStream()
    records = [stream.put({"pk": f"k{i}"}) for i in range(5)]
    waits: list[float] = []
    cancelled = conflicts_on_the_head(resources.dynamodb, times=3)
    assert deliver(handler(resources, sleep=waits.append), records, shard_id=SHARD) == [OK]
    assert cancelled["head"] == 3 and len(waits) == 3
    assert applied(resources) == expected(records)
    metrics = [line for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert '"TransactionConflicts":3' in metrics[-1] and '"ContentionFailures":0' in metrics[-1]


def test_contention_past_the_budget_stops_the_batch_and_is_counted(
    resources: Resources, ledger: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A conflict that never clears: the batch stops within the budget (a bounded time, not a
    spin), reports its first record, and counts a contention failure (alarmed)."""
    stream = TableStream()
    records = [stream.put({"pk": f"k{i}"}) for i in range(3)]
    now = [1_800_000_000.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    conflicts_on_the_head(resources.dynamodb, times=10_000)
    handle = handler(resources, sleep=sleep, clock=lambda: now[0])
    answer = handle(stream_event(records, shard_id=SHARD), FakeContext())
    assert answer["batchItemFailures"] == [
        {"itemIdentifier": records[0]["dynamodb"]["SequenceNumber"]}
    ]
    assert applied(resources) == {}
    metrics = [line for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert '"ContentionFailures":1' in metrics[-1]


# --- a change of bookkeeping under a running consumer -------------------------------------


def test_a_window_added_to_a_running_consumer_finds_what_markers_applied(
    resources: Resources, ledger: str
) -> None:
    """The mapping had no window (markers); a window is added while a batch is redelivered: the
    lane writer finds the markers (the horizon covers the records) and applies the rest once."""
    stream = TableStream()
    records = [stream.put({"pk": f"k{i}"}) for i in range(6)]
    assert deliver(handler(resources), records[:4]) == [{"batchItemFailures": []}]
    assert len(resources.markers()) == 4
    assert deliver(handler(resources), records, shard_id=SHARD) == [OK]
    assert applied(resources) == expected(records)


def test_a_window_removed_from_a_running_consumer_finds_what_the_lane_listed(
    resources: Resources, ledger: str
) -> None:
    """The window removed (to raise the parallelization factor above 1): the records the lane
    listed come again without a shard, are found through the lane registry, and are not
    applied again; the new ones get markers."""
    stream = TableStream()
    records = [stream.put({"pk": f"k{i}"}) for i in range(6)]
    assert deliver(handler(resources), records[:4], shard_id=SHARD) == [OK]
    assert deliver(handler(resources), records) == [{"batchItemFailures": []}]
    assert applied(resources) == expected(records)
    assert len(resources.markers()) == 2


def test_a_marker_writer_and_a_lane_writer_of_one_record_meet_on_the_marker(
    resources: Resources, ledger: str
) -> None:
    """Once a shard-less writer has raised the horizon, a lane writer of records it covers
    writes their markers too: a shard-less delivery committing them in between cancels the
    lane writer's transaction on the marker's condition, and they are duplicates."""
    stream = TableStream()
    records = [stream.put({"pk": f"k{i}"}) for i in range(4)]
    assert deliver(handler(resources), records[:1]) == [{"batchItemFailures": []}]  # horizon
    shardless = handler(resources, resources.endpoint.client("dynamodb"))

    def markers_commit() -> None:
        assert shardless(stream_event(records), FakeContext()) == {"batchItemFailures": []}

    once_before(resources.dynamodb, "TransactWriteItems", markers_commit)
    assert deliver(handler(resources), records, shard_id=SHARD) == [OK]
    assert applied(resources) == expected(records)
