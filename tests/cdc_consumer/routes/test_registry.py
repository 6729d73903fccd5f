"""The routes' registry (issue 39): each record goes to its route, which says what names it in
``batchItemFailures``, what a filter matches, what a quarantine pointer keeps, and whether the
ledger lists it; a record no route claims is read as a DynamoDB stream record. A route defined
outside the package registers (the engine's and the redrive's registry) and is asked first."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from cdc_consumer import UndecodableRecordError
from cdc_consumer.exceptions import ConfigurationError, RedriveSetupError
from cdc_consumer.routes import (
    DEFAULT_ROUTE,
    ROUTES,
    filter_view,
    item_identifier,
    register,
    replay,
    route_of,
    unregister,
)
from cdc_consumer.routes.dynamodb_stream.records import ROUTE as DYNAMODB_STREAM
from cdc_consumer.routes.kinesis.records import ROUTE as KINESIS
from cdc_consumer.routes.kinesis.testing import kinesis_data, kinesis_record
from cdc_consumer.snapshots import snapshot_record
from cdc_consumer.testing import DEFAULT_SOURCE_ARN, stream_record


def _stream_record() -> dict:
    return stream_record(
        "INSERT",
        {"pk": "a"},
        new_image={"pk": "a", "n": 1},
        sequence_number=123,
        approximate_creation_time=1_700_000_000.0,
    )


def test_each_record_goes_to_its_route_and_the_rest_to_the_stream_s() -> None:
    record = _stream_record()
    assert route_of(record) is DYNAMODB_STREAM
    assert route_of(kinesis_record(kinesis_data(record), sequence_number=9)) is KINESIS
    keys = {"pk": {"S": "a"}}
    snapshot = snapshot_record(
        keys, keys, backfill_id="b", horizon=1, sequence_number="0", stream_arn=None
    )
    assert route_of(snapshot) is DEFAULT_ROUTE is DYNAMODB_STREAM
    assert route_of("not a record") is DEFAULT_ROUTE
    assert route_of({"eventSource": ["not", "a", "source"]}) is DEFAULT_ROUTE
    assert route_of({"eventSource": None, "kinesis": {}}) is KINESIS
    assert {route.name for route in ROUTES} == {"dynamodb_stream", "kinesis"}
    assert len({route.event_source for route in ROUTES}) == len(ROUTES)


def test_a_record_is_named_by_its_route_s_sequence_number() -> None:
    record = _stream_record()
    assert item_identifier(record) == "123"
    assert item_identifier(kinesis_record(kinesis_data(record), sequence_number=9)) == "9"
    assert item_identifier({"dynamodb": {}}) is None
    assert item_identifier({"kinesis": {"sequenceNumber": ""}}) is None
    assert DYNAMODB_STREAM.identifier_field == "dynamodb.SequenceNumber"
    assert KINESIS.identifier_field == "kinesis.sequenceNumber"


def test_a_filter_matches_a_stream_record_whole_and_a_kinesis_record_s_fields() -> None:
    record = _stream_record()
    assert filter_view(record) is record
    view = filter_view(kinesis_record(kinesis_data(record), sequence_number=9))
    assert view["sequenceNumber"] == "9"
    assert view["data"]["eventName"] == "INSERT"
    not_json = kinesis_record(base64.b64encode(b"\xff").decode(), sequence_number=9)
    assert filter_view(not_json)["data"] == base64.b64encode(b"\xff").decode()


def test_an_edit_reaches_the_change_a_view_holds() -> None:
    record = _stream_record()

    def edit(change: dict) -> dict:
        return {**change, "edited": True}

    assert DYNAMODB_STREAM.filter_view(record, edit)["edited"] is True
    view = KINESIS.filter_view(kinesis_record(kinesis_data(record), sequence_number=9), edit)
    assert view["data"]["edited"] is True


def test_an_envelope_keeps_no_change() -> None:
    record = _stream_record()
    assert "dynamodb" not in DYNAMODB_STREAM.envelope(record)
    assert DYNAMODB_STREAM.envelope(record)["eventID"] == record["eventID"]
    kinesis = kinesis_record(kinesis_data(record), sequence_number=9)
    envelope = KINESIS.envelope(kinesis)
    assert "data" not in envelope["kinesis"]
    assert envelope["kinesis"]["sequenceNumber"] == "9"
    assert kinesis["kinesis"]["data"]  # the record itself is left whole


def test_only_a_stream_record_has_a_place_in_a_ledger_lane() -> None:
    record = _stream_record()
    assert DYNAMODB_STREAM.lane_position(record) == (DEFAULT_SOURCE_ARN, 123)
    assert DYNAMODB_STREAM.lane_position({**record, "eventSource": "aws:cdc-snapshot"}) is None
    assert DYNAMODB_STREAM.lane_position({**record, "dynamodb": {"SequenceNumber": "x1"}}) is None
    assert KINESIS.lane_position(kinesis_record(kinesis_data(record), sequence_number=9)) is None


@pytest.mark.parametrize(
    ("route", "value", "time_us"),
    [
        (DYNAMODB_STREAM, 1_700_000_000, 1_700_000_000_000_000),
        (DYNAMODB_STREAM, "1700000000.5", 1_700_000_000_500_000),
        (KINESIS, 1_700_000_000_123, 1_700_000_000_123_000),
        (KINESIS, 1_700_000_000_123_456, 1_700_000_000_123_456),
    ],
)
def test_each_route_reads_creation_times_in_its_unit(route, value, time_us: int) -> None:
    created_us, created = route.created({"ApproximateCreationDateTime": value}, "e1")
    assert created_us == time_us
    assert created is not None and created.timestamp() * 1_000_000 == pytest.approx(time_us)
    assert route.created({}, "e1") == (None, None)


def test_a_kinesis_record_without_a_sequence_number_holds_no_change() -> None:
    data = base64.b64encode(json.dumps({"eventID": "e"}).encode()).decode()
    with pytest.raises(UndecodableRecordError, match=r"kinesis\.sequenceNumber must be"):
        KINESIS.change_document({"kinesis": {"data": data}})


@dataclass(frozen=True)
class _Claiming:
    """A route from outside that claims every dict with an ``x`` (as the DynamoDB stream's
    would, were it asked first); only its name and its eventSource matter here."""

    name: str = "toy"
    event_source: str = "toy:changes"

    def recognises(self, record: Any) -> bool:
        return isinstance(record, dict) and "x" in record


@pytest.fixture
def toy() -> Iterator[Any]:
    route = _Claiming()
    register(route)  # type: ignore[arg-type]  # only what route_of asks
    yield route
    unregister(route)  # type: ignore[arg-type]
    assert route not in ROUTES and route_of({"eventSource": "toy:changes"}) is DEFAULT_ROUTE


def test_a_registered_route_is_found_by_its_event_source_and_asked_before_the_others(
    toy: Any,
) -> None:
    assert route_of({"eventSource": "toy:changes"}) is toy
    assert route_of({**_stream_record(), "eventSource": None, "x": 1}) is toy  # before the default
    assert route_of(_stream_record()) is DYNAMODB_STREAM  # the others still answer theirs


@pytest.mark.parametrize("twin", [_Claiming(event_source="other:source"), _Claiming(name="other")])
def test_a_route_is_registered_once_by_name_and_event_source(toy: Any, twin: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"route '\w+'.*already registered as 'toy'"):
        register(twin)
    assert ROUTES.count(toy) == 1 and twin not in ROUTES


@dataclass(frozen=True)
class _ToyReplay:
    """The redrive's side of the toy: a stream, a record and a raw record of its own."""

    name: str = "toy change log"

    def owns_stream(self, stream_arn: str) -> bool:
        return stream_arn.startswith("arn:aws:toy:")

    def owns_record(self, record: Any) -> bool:
        return isinstance(record, dict) and record.get("eventSource") == "toy:changes"

    def owns_raw(self, raw: Any) -> bool:
        return isinstance(raw, dict) and "toy" in raw


def test_a_registered_replay_route_is_found_first_and_registered_once() -> None:
    route = _ToyReplay()
    replay.register(route)  # type: ignore[arg-type]  # only what the lookups ask
    try:
        assert replay.ROUTES[0] is route
        assert replay.route_of_stream("arn:aws:toy:us-east-1:123456789012:log/a") is route
        assert replay.route_of_record({"eventSource": "toy:changes"}) is route
        assert replay.route_of_raw({"toy": 1}) is route
        with pytest.raises(RedriveSetupError, match="'toy change log' is already registered"):
            replay.register(_ToyReplay())  # type: ignore[arg-type]
    finally:
        replay.unregister(route)  # type: ignore[arg-type]
    assert route not in replay.ROUTES
    with pytest.raises(RedriveSetupError, match="is not a DynamoDB stream ARN"):
        replay.route_of_stream("arn:aws:toy:us-east-1:123456789012:log/a")
