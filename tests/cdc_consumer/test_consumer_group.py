"""ConsumerGroup: several consumers behind one mapping, each exactly once, each its own poison."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest
from cdc_consumer import Change, ConfigurationError, PermanentError
from cdc_consumer.consumer_group import ConsumerGroup, GroupMember
from cdc_consumer.environment_variables import CONSUMER_GROUP_ENV
from cdc_consumer.group_member_spec import GroupMemberSpec
from cdc_consumer.routes.kinesis.testing import kinesis_data, kinesis_event, kinesis_record
from cdc_consumer.testing import FakeContext, TableStream, redelivery, stream_event

from tests.cdc_consumer.fixtures import Resources, deliver

# StreamFilters.ttl_deletions_only() and StreamFilters.exclude_ttl_deletions(), as synthesized.
TTL_DELETIONS = {
    "eventName": ["REMOVE"],
    "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
}
NOT_TTL_DELETIONS = {"userIdentity": {"type": [{"exists": False}]}}


def counter(view_table: str, member: str, poison: str | None = None):
    """A projection adding 1 to ``<member>#<key>`` per record; PermanentError on ``poison``."""

    def project(change: Change) -> list[dict[str, Any]]:
        if poison is not None and change.keys["pk"] == poison:
            raise PermanentError(f"{member} cannot read {poison}")
        return [
            {
                "Update": {
                    "TableName": view_table,
                    "Key": {"pk": {"S": f"{member}#{change.keys['pk']}"}},
                    "UpdateExpression": "ADD #n :one",
                    "ExpressionAttributeNames": {"#n": "n"},
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            }
        ]

    return project


def group(
    resources: Resources, poison: dict[str, str] | None = None, *, kinesis: bool = False
) -> ConsumerGroup:
    """``stats`` counts every change but TTL deletions, ``archive`` only TTL deletions, and
    ``audit`` every change: three consumers, one mapping (a Kinesis one: filters on ``data``)."""
    poison = poison or {}
    members = []
    for name, filters in (
        ("stats", [NOT_TTL_DELETIONS]),
        ("archive", [TTL_DELETIONS]),
        ("audit", []),
    ):
        processor = resources.processor(name)
        processor.projection(counter(resources.view_table, name, poison.get(name)))
        patterns = [{"data": pattern} for pattern in filters] if kinesis else filters
        members.append(GroupMember(processor, patterns))
    return ConsumerGroup(members)


def changes() -> list[dict[str, Any]]:
    stream = TableStream(keys=("pk",))
    for n in range(6):
        stream.put({"pk": f"o{n}", "status": "new"})
    stream.update(("o1",), status="paid")
    stream.delete(("o2",), ttl_expiry=True)
    stream.delete(("o3",))
    stream.delete(("o4",), ttl_expiry=True)
    return stream.records


def expected() -> dict[str, dict[str, Any]]:
    counts: Counter[str] = Counter()
    for n in range(6):
        counts[f"stats#o{n}"] += 1
        counts[f"audit#o{n}"] += 1
    counts.update({"stats#o1": 1, "audit#o1": 1, "archive#o2": 1, "audit#o2": 1})
    counts.update({"stats#o3": 1, "audit#o3": 1, "archive#o4": 1, "audit#o4": 1})
    return {pk: {"n": n} for pk, n in counts.items()}


def test_each_member_applies_its_records_once_under_redelivery(resources: Resources) -> None:
    handler = group(resources).handle
    records = changes()
    assert handler(stream_event(records), FakeContext()) == {"batchItemFailures": []}
    # Lambda delivers the batch again (at least once): nothing is applied twice.
    assert handler(stream_event(records), FakeContext()) == {"batchItemFailures": []}
    assert resources.view() == expected()
    namespaces = Counter(marker["id"].split("#")[0] for marker in resources.markers())
    assert namespaces == {"stats": 8, "archive": 2, "audit": 10}


def test_a_poison_record_is_quarantined_for_its_member_alone(resources: Resources) -> None:
    handler = group(resources, poison={"stats": "o5"}).handle
    assert handler(stream_event(changes()), FakeContext()) == {"batchItemFailures": []}
    (message,) = resources.quarantined()
    assert message["consumer"] == "stats"
    assert message["record"]["dynamodb"]["Keys"] == {"pk": {"S": "o5"}}
    view = resources.view()
    assert "stats#o5" not in view
    assert view["audit#o5"] == {"n": 1}  # the others applied it
    assert {pk: v for pk, v in view.items() if pk != "stats#o5"} == {
        pk: v for pk, v in expected().items() if pk != "stats#o5"
    }


def test_a_failing_member_holds_the_batch_and_every_member_ends_exactly_once(
    resources: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``archive`` fails transiently on its first record (o2's TTL deletion); the group reports
    that record, ``audit`` (after it) stops before it, and the redelivery completes all three."""
    consumer_group = group(resources)
    archive = consumer_group.members[1].processor
    project = archive.projections[0]
    failures = iter([True])

    def flaky(change: Change) -> list[dict[str, Any]]:
        if next(failures, False):
            raise ConnectionError("throttled")
        return project(change)

    monkeypatch.setattr(archive, "projections", [flaky])
    records = changes()
    responses = deliver(consumer_group.handle, records)
    ttl_deletion = records[7]["dynamodb"]["SequenceNumber"]
    assert responses[0] == {"batchItemFailures": [{"itemIdentifier": ttl_deletion}]}
    assert responses[1:] == [{"batchItemFailures": []}]
    assert resources.view() == expected()


def test_members_need_distinct_names() -> None:
    with pytest.raises(ConfigurationError, match="distinct, explicit consumer names"):
        ConsumerGroup([GroupMember(_processor("a")), GroupMember(_processor("a"))])


def _processor(name: str) -> Any:
    from cdc_consumer import StreamProcessor

    return StreamProcessor(name)


def test_from_environment_takes_the_declared_order_and_filters(resources: Resources) -> None:
    """The StreamConsumer declares the members (CDC_CONSUMER_GROUP); the handler gives one
    processor per member, in any order, and the group dispatches as declared."""
    declared = GroupMemberSpec.encode(
        [
            GroupMemberSpec("stats", (NOT_TTL_DELETIONS,)),
            GroupMemberSpec("archive", (TTL_DELETIONS,)),
            GroupMemberSpec("audit"),
        ]
    )
    processors = []
    for name in ("audit", "archive", "stats"):
        processor = resources.processor(name)
        processor.projection(counter(resources.view_table, name))
        processors.append(processor)
    consumer_group = ConsumerGroup.from_environment(processors, {CONSUMER_GROUP_ENV: declared})
    assert consumer_group.names == ["stats", "archive", "audit"]
    assert consumer_group.handle(stream_event(changes()), FakeContext()) == {
        "batchItemFailures": []
    }
    assert resources.view() == expected()


@pytest.mark.parametrize(
    ("value", "names", "message"),
    [
        (None, ["a"], "CDC_CONSUMER_GROUP is not set: give the StreamConsumer members"),
        ("[", ["a"], "CDC_CONSUMER_GROUP is not JSON"),
        ('[{"name": "a"}, {"filters": []}]', ["a"], "a consumer group member is"),
        ('[{"name": "a"}, {"name": "b"}]', ["a"], "declares the members ['a', 'b']"),
        ('[{"name": "a"}]', ["a", "b"], "processors named ['a', 'b']"),
        ('[{"name": "a"}]', ["a", "a"], "processors named ['a', 'a']"),
    ],
)
def test_from_environment_refuses_a_mismatch(
    value: str | None, names: list[str], message: str
) -> None:
    environ = {} if value is None else {CONSUMER_GROUP_ENV: value}
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        ConsumerGroup.from_environment([_processor(name) for name in names], environ)


# --- the edges: Kinesis batches, deadlines shared by the members (issue 23 §5) ---------------


def kinesis_changes() -> list[dict[str, Any]]:
    """:func:`changes` as a Kinesis stream delivers them (sequence numbers 4960...)."""
    return [
        kinesis_record(kinesis_data(record), sequence_number=4960 + n)
        for n, record in enumerate(changes())
    ]


def test_a_kinesis_batch_is_dispatched_like_a_stream_batch(resources: Resources) -> None:
    """A group behind a Kinesis mapping: members filter on ``data`` (the decoded change), as
    Lambda's filters do, and each applies its records once under redelivery."""
    handler = group(resources, kinesis=True).handle
    records = kinesis_changes()
    assert handler(kinesis_event(records), FakeContext()) == {"batchItemFailures": []}
    assert handler(kinesis_event(records), FakeContext()) == {"batchItemFailures": []}
    assert resources.view() == expected()


def test_a_kinesis_failure_is_reported_by_its_kinesis_sequence_number(
    resources: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    consumer_group = group(resources, kinesis=True)
    archive = consumer_group.members[1].processor
    project = archive.projections[0]
    failures = iter([True])

    def flaky(change: Change) -> list[dict[str, Any]]:
        if next(failures, False):
            raise ConnectionError("throttled")
        return project(change)

    monkeypatch.setattr(archive, "projections", [flaky])
    records = kinesis_changes()
    response = consumer_group.handle(kinesis_event(records), FakeContext())
    assert response == {"batchItemFailures": [{"itemIdentifier": "4967"}]}  # o2's TTL deletion
    assert consumer_group.handle(kinesis_event(records[7:]), FakeContext()) == {
        "batchItemFailures": []
    }
    assert resources.view() == expected()


def test_a_member_after_one_stopped_at_the_deadline_reports_where_the_group_stopped(
    resources: Resources,
) -> None:
    """``stats`` stops at its safety margin part way; ``audit`` then has less than the margin
    left at its first record: the group reports the lowest stop point (a DeadlineError would
    fail the whole invocation and waste the progress), and redeliveries finish the batch with
    every member exactly once."""
    consumer_group = group(resources)
    stats = consumer_group.members[0].processor
    count = stats.projections[0]
    left = {"ms": 0}
    applied: set[str] = set()

    def slow(change: Change) -> list[dict[str, Any]]:  # 0.6 s per record stats has not seen
        if change.event_id not in applied:
            applied.add(change.event_id)
            left["ms"] -= 600
        return count(change)

    stats.projections[:] = [slow]
    records, response = changes(), None
    numbers = [record["dynamodb"]["SequenceNumber"] for record in records]
    invocations = 0
    while records and invocations < len(numbers):
        left["ms"] = 3_000  # a 3 s timeout: a margin of 0.6 s
        response = consumer_group.handle(stream_event(records), FakeContext(lambda: left["ms"]))
        invocations += 1
        if invocations == 1:
            (failure,) = response["batchItemFailures"]
            assert failure["itemIdentifier"] in numbers
        records = redelivery(records, response)
    assert invocations == 2  # stats stops after 5 of its 8 records, then all finish
    assert resources.view() == expected()


def test_every_member_keeps_the_margin_of_the_function_s_timeout(resources: Resources) -> None:
    """The margin follows the function's timeout, which a later member cannot read from the
    time left when its turn comes: with a 10 s timeout (a margin of 2 s) and ``stats`` using
    most of it, ``audit`` stops with 2 s left, not with a fifth of what it found."""
    consumer_group = group(resources)
    left = {"ms": 10_000}
    seen: list[int] = []
    stats, _, audit = (member.processor for member in consumer_group.members)
    count_stats, count_audit = stats.projections[0], audit.projections[0]

    def slow_stats(change: Change) -> list[dict[str, Any]]:
        left["ms"] -= 1_000
        return count_stats(change)

    def timed_audit(change: Change) -> list[dict[str, Any]]:
        seen.append(left["ms"])
        left["ms"] -= 100
        return count_audit(change)

    stats.projections[:] = [slow_stats]
    audit.projections[:] = [timed_audit]
    response = consumer_group.handle(stream_event(changes()), FakeContext(lambda: left["ms"]))
    assert response["batchItemFailures"]
    assert seen and min(seen) >= 2_000
