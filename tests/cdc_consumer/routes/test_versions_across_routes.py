"""Versions of one item compare across routes (issue 29): a view fed first through the Kinesis
route (ApproximateCreationDateTime in microseconds) and then through the DynamoDB stream (whole
seconds, rounded down) keeps the newer change. A stream change stands at the last microsecond of
its second (cdc_consumer.versions)."""

from __future__ import annotations

from cdc_consumer import Change, LatestImage
from cdc_consumer.routes.kinesis.testing import kinesis_data, kinesis_event, kinesis_record
from cdc_consumer.testing import FakeContext, stream_event, stream_record
from cdc_consumer.versions import format_version, snapshot_version, stream_version

from tests.cdc_consumer.fixtures import Resources

SECOND = 1_700_000_000


def kinesis_change(at: float, status: str, sequence: int = 1) -> Change:
    record = stream_record(
        "MODIFY",
        {"pk": "ORDER#1"},
        new_image={"pk": "ORDER#1", "status": status},
        sequence_number="0",
        approximate_creation_time=at,
    )
    return Change.from_record(kinesis_record(kinesis_data(record), sequence_number=sequence))


def stream_change(at: float, status: str, sequence: int) -> Change:
    record = stream_record(
        "MODIFY",
        {"pk": "ORDER#1"},
        new_image={"pk": "ORDER#1", "status": status},
        sequence_number=sequence,
        approximate_creation_time=at,
    )
    return Change.from_record(record)


def test_a_stream_change_later_in_the_same_second_sorts_after_the_kinesis_one() -> None:
    # Kinesis saw the change made at .300 s; the stream carries a later one of the same second,
    # stamped with the second only.
    kinesis = kinesis_change(SECOND + 0.3, "paid")
    stream = stream_change(float(SECOND), "shipped", sequence=100)
    assert stream.version > kinesis.version


def test_a_kinesis_change_of_a_later_second_still_sorts_after_the_stream_one() -> None:
    stream = stream_change(float(SECOND), "paid", sequence=100)
    assert kinesis_change(SECOND + 1.0, "shipped").version > stream.version
    assert kinesis_change(SECOND - 0.5, "new").version < stream.version


def test_stream_changes_of_one_second_keep_their_sequence_order() -> None:
    first = stream_change(float(SECOND), "paid", sequence=99)
    second = stream_change(float(SECOND), "shipped", sequence=100)
    assert first.version < second.version
    assert second.version == stream_version(SECOND * 1_000_000, "100")


def test_a_snapshot_row_keeps_the_horizon_rule_against_stream_changes() -> None:
    """H whole seconds: a change of second H-1 loses to the row, one of second H wins."""
    row = snapshot_version(SECOND * 1_000_000)
    assert stream_change(float(SECOND - 1), "old", sequence=5).version < row
    assert stream_change(float(SECOND), "new", sequence=5).version > row
    assert format_version(SECOND * 1_000_000 - 2, "9") < row


def test_a_replica_fed_by_kinesis_then_by_the_stream_keeps_the_newer_change(
    resources: Resources,
) -> None:
    table = resources.new_table("replica")
    latest = LatestImage(table_name=table)
    processor = resources.processor()
    processor.projection(latest)
    older = stream_record(
        "MODIFY",
        {"pk": "ORDER#1"},
        new_image={"pk": "ORDER#1", "status": "paid"},
        sequence_number="0",
        approximate_creation_time=SECOND + 0.3,
    )
    kinesis = kinesis_record(kinesis_data(older), sequence_number=1)
    assert processor.handle(kinesis_event([kinesis]), FakeContext()) == {"batchItemFailures": []}
    newer = stream_record(
        "MODIFY",
        {"pk": "ORDER#1"},
        new_image={"pk": "ORDER#1", "status": "shipped"},
        sequence_number=100,
        approximate_creation_time=float(SECOND),  # .700 s, rounded down by DynamoDB
    )
    assert processor.handle(stream_event([newer]), FakeContext()) == {"batchItemFailures": []}
    (item,) = resources.scan(table)
    assert latest.image(item) == {"pk": "ORDER#1", "status": "shipped"}
