"""TTL deletions on a table with replicas: the service identity is on the deleting region's record
only, so the runtime also tells an expiry by the item's own TTL attribute (cdc_consumer.expiry)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cdc_consumer import environment_variables
from cdc_consumer.change import Change
from cdc_consumer.consumer_group import ConsumerGroup, GroupMember
from cdc_consumer.expiry import ExpiryRule, expiry_view, keep_declared
from cdc_consumer.testing import stream_event, stream_record

NOW = 1_767_225_600.0  # the REMOVE records' creation time
REPLICATED = {
    environment_variables.REPLICATED_TABLE_ENV: "true",
    environment_variables.TTL_ATTRIBUTE_ENV: "expireAt",
}

# StreamFilters.ttl_deletions_only() and StreamFilters.exclude_ttl_deletions(), as synthesized.
TTL_DELETIONS = {
    "eventName": ["REMOVE"],
    "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
}
NOT_TTL_DELETIONS = {"userIdentity": {"type": [{"exists": False}]}}


def remove(pk: str, expire_at: Any = None, *, identity: bool = False, seq: int = 1) -> dict:
    """A REMOVE of an item whose TTL attribute is ``expire_at`` (None: the item has none)."""
    old = {"pk": pk, "status": "paid"}
    if expire_at is not None:
        old["expireAt"] = expire_at
    return stream_record(
        "REMOVE",
        {"pk": pk},
        old_image=old,
        sequence_number=seq,
        ttl_expiry=identity,
        approximate_creation_time=NOW,
    )


@pytest.fixture
def replicated(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in REPLICATED.items():
        monkeypatch.setenv(name, value)


@pytest.mark.usefixtures("replicated")
def test_a_replicated_ttl_deletion_is_an_expiry() -> None:
    """No identity (the deletion happened in another region), the TTL attribute past."""
    assert Change.from_record(remove("o1", int(NOW) - 3600)).is_ttl_expiry


@pytest.mark.usefixtures("replicated")
def test_a_user_delete_of_a_live_item_is_not_an_expiry() -> None:
    assert not Change.from_record(remove("o1", int(NOW) + 3600)).is_ttl_expiry
    assert not Change.from_record(remove("o2")).is_ttl_expiry  # no TTL attribute at all


@pytest.mark.usefixtures("replicated")
def test_a_user_delete_of_an_item_already_past_its_ttl_is_an_expiry_too() -> None:
    """Documented in docs/global-tables.md: the record cannot tell it from a replicated one."""
    assert Change.from_record(remove("o1", int(NOW))).is_ttl_expiry


@pytest.mark.usefixtures("replicated")
def test_a_ttl_more_than_five_years_old_is_not_an_expiry() -> None:
    """DynamoDB's TTL process skips such items: their deletion was a user's."""
    six_years = 6 * 365 * 86_400
    assert not Change.from_record(remove("o1", int(NOW) - six_years)).is_ttl_expiry


@pytest.mark.usefixtures("replicated")
def test_a_ttl_attribute_that_is_not_a_number_is_not_an_expiry() -> None:
    assert not Change.from_record(remove("o1", "soon")).is_ttl_expiry


def test_on_a_single_region_table_only_the_identity_tells_an_expiry() -> None:
    assert not Change.from_record(remove("o1", int(NOW) - 3600)).is_ttl_expiry
    assert Change.from_record(remove("o1", int(NOW) - 3600, identity=True)).is_ttl_expiry


def test_the_rule_follows_the_environment_it_is_read_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local pipeline runs several functions in one process, each with its environment."""
    record = remove("o1", int(NOW) - 1)
    assert not Change.from_record(record).is_ttl_expiry
    for name, value in REPLICATED.items():
        monkeypatch.setenv(name, value)
    assert Change.from_record(record).is_ttl_expiry
    monkeypatch.setenv(environment_variables.TTL_ATTRIBUTE_ENV, "otherAttribute")
    assert not Change.from_record(record).is_ttl_expiry


def test_expiry_view_gives_a_replicated_expiry_the_identity_filters_match() -> None:
    rule = ExpiryRule(attribute="expireAt", replicated=True)
    view = expiry_view(remove("o1", int(NOW) - 1), rule)
    assert view["userIdentity"] == {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    live = remove("o2", int(NOW) + 1)
    assert expiry_view(live, rule) is live
    assert "userIdentity" not in expiry_view(remove("o1", int(NOW) - 1), ExpiryRule())


def _declared(monkeypatch: pytest.MonkeyPatch, *patterns: dict) -> None:
    for name, value in REPLICATED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(environment_variables.RECORD_FILTERS_ENV, json.dumps(list(patterns)))


def test_an_archive_keeps_every_expiry_and_drops_user_deletes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The mapping's filter was widened (a filter cannot compare two values); the consumer's
    own filter, applied by the runtime, keeps local and replicated expiries only."""
    _declared(monkeypatch, TTL_DELETIONS)
    local = remove("local", int(NOW) - 5, identity=True, seq=1)
    replicated = remove("replicated", int(NOW) - 5, seq=2)
    user = remove("user", int(NOW) + 5, seq=3)
    kept = keep_declared(stream_event([local, replicated, user]))["Records"]
    assert [r["dynamodb"]["Keys"]["pk"]["S"] for r in kept] == ["local", "replicated"]


def test_a_consumer_excluding_ttl_deletions_drops_replicated_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _declared(monkeypatch, NOT_TTL_DELETIONS)
    replicated = remove("replicated", int(NOW) - 5, seq=1)
    user = remove("user", int(NOW) + 5, seq=2)
    kept = keep_declared(stream_event([replicated, user]))["Records"]
    assert [r["dynamodb"]["Keys"]["pk"]["S"] for r in kept] == ["user"]


def test_without_declared_filters_the_event_is_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in REPLICATED.items():
        monkeypatch.setenv(name, value)
    event = stream_event([remove("o1", int(NOW) - 5)])
    assert keep_declared(event) is event


class _Recorder:
    """A stand-in processor recording the keys it was handed."""

    def __init__(self, name: str) -> None:
        self.consumer_name = name
        self.seen: list[str] = []

    def handle(self, event: dict, context: Any = None, **_: Any) -> dict:
        self.seen += [r["dynamodb"]["Keys"]["pk"]["S"] for r in event["Records"]]
        return {"batchItemFailures": []}


@pytest.mark.usefixtures("replicated")
def test_a_consumer_group_dispatches_a_replicated_expiry_as_an_expiry() -> None:
    stats, archive = _Recorder("stats"), _Recorder("archive")
    group = ConsumerGroup(
        [
            GroupMember(stats, [NOT_TTL_DELETIONS]),  # type: ignore[arg-type]
            GroupMember(archive, [TTL_DELETIONS]),  # type: ignore[arg-type]
        ]
    )
    records = [
        remove("replicated", int(NOW) - 5, seq=1),
        remove("local", int(NOW) - 5, identity=True, seq=2),
        remove("user", int(NOW) + 5, seq=3),
    ]
    assert group.handle(stream_event(records)) == {"batchItemFailures": []}
    assert archive.seen == ["replicated", "local"]
    assert stats.seen == ["user"]


def _archive(view_table: str) -> Any:
    """A TTL archive: one item per expired order, counting the times it was archived."""

    def project(change: Change) -> list[dict[str, Any]]:
        assert change.is_ttl_expiry, "the archive's filter lets expiries through only"
        return [
            {
                "Update": {
                    "TableName": view_table,
                    "Key": {"pk": {"S": f"archived#{change.keys['pk']}"}},
                    "UpdateExpression": "ADD #n :one",
                    "ExpressionAttributeNames": {"#n": "n"},
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            }
        ]

    return project


def test_one_archive_archives_every_regions_expiries_exactly_once(
    monkeypatch: pytest.MonkeyPatch, resources: Any
) -> None:
    """us-east-1's archive reads its replica's stream: its own TTL deletions (identity) and the
    ones replicated from us-west-2 (none), among user deletes; the batch is delivered twice
    (at least once). Every expired order is archived once, no user delete is."""
    from tests.cdc_consumer.fixtures import deliver

    _declared(monkeypatch, TTL_DELETIONS)  # the filter as written; the mapping's was widened
    processor = resources.processor("ttl-archive")
    processor.projection(_archive(resources.view_table))
    records = [
        remove("expired-here", int(NOW) - 60, identity=True, seq=1),
        remove("expired-in-west", int(NOW) - 60, seq=2),  # replicated: no identity
        remove("deleted-by-a-user", int(NOW) + 3600, seq=3),
        remove("expired-in-west-too", int(NOW) - 1, seq=4),
    ]
    deliver(processor.handle, records)
    deliver(processor.handle, records)  # redelivered whole: markers make it a no-op
    archived = {k: v["n"] for k, v in resources.view().items()}
    assert archived == {
        "archived#expired-here": 1,
        "archived#expired-in-west": 1,
        "archived#expired-in-west-too": 1,
    }


# The Kinesis route: a replicated table's Kinesis stream carries the other regions' expiries
# without the identity too (DynamoDB writes ``userIdentity: null`` in the record's data), and the
# creation time is in milli- or microseconds (the destination's precision).
KINESIS_TTL_DELETIONS = {"data": TTL_DELETIONS}
KINESIS_NOT_TTL_DELETIONS = {"data": NOT_TTL_DELETIONS}


def _kinesis(record: dict, precision: str = "MICROSECOND") -> dict:
    from cdc_consumer.routes.kinesis.testing import kinesis_data, kinesis_record

    data = kinesis_data(record, precision=precision)
    return kinesis_record(data, sequence_number=record["dynamodb"]["SequenceNumber"])


def _kinesis_keys(event: dict) -> list[str]:
    from cdc_consumer.routes.kinesis.records import decode_data

    return [decode_data(r)["dynamodb"]["Keys"]["pk"]["S"] for r in event["Records"]]


@pytest.mark.usefixtures("replicated")
@pytest.mark.parametrize("precision", ["MICROSECOND", "MILLISECOND"])
def test_a_replicated_ttl_deletion_on_kinesis_is_an_expiry(precision: str) -> None:
    replicated = _kinesis(remove("o1", int(NOW) - 3600), precision)
    live = _kinesis(remove("o2", int(NOW) + 3600), precision)
    assert Change.from_record(replicated).is_ttl_expiry
    assert not Change.from_record(live).is_ttl_expiry


@pytest.mark.parametrize("precision", ["MICROSECOND", "MILLISECOND"])
def test_a_kinesis_archive_keeps_every_expiry_and_drops_user_deletes(
    monkeypatch: pytest.MonkeyPatch, precision: str
) -> None:
    """The Kinesis record's data has the creation time in milli- or microseconds and a null
    identity: a replicated expiry is still told by its TTL attribute."""
    _declared(monkeypatch, KINESIS_TTL_DELETIONS)
    records = [
        _kinesis(remove("local", int(NOW) - 5, identity=True, seq=1), precision),
        _kinesis(remove("replicated", int(NOW) - 5, seq=2), precision),
        _kinesis(remove("user", int(NOW) + 5, seq=3), precision),
    ]
    assert _kinesis_keys(keep_declared({"Records": records})) == ["local", "replicated"]


def test_a_kinesis_consumer_excluding_ttl_deletions_drops_replicated_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _declared(monkeypatch, KINESIS_NOT_TTL_DELETIONS)
    records = [
        _kinesis(remove("replicated", int(NOW) - 5, seq=1)),
        _kinesis(remove("user", int(NOW) + 5, seq=2)),
    ]
    assert _kinesis_keys(keep_declared({"Records": records})) == ["user"]
