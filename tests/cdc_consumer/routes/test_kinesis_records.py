"""The Kinesis route in the runtime: AWS's Kinesis-for-DynamoDB records decoded into the same
Change, with a version; bad data is poison; the item identifier is the Kinesis sequence number."""

from __future__ import annotations

import base64
import json
from decimal import Decimal
from typing import Any

import pytest
from cdc_consumer import Change, LatestImage, MissingVersionError, UndecodableRecordError
from cdc_consumer.routes import item_identifier
from cdc_consumer.routes.kinesis.records import kinesis_time_to_us
from cdc_consumer.routes.kinesis.testing import kinesis_data, kinesis_event, kinesis_record
from cdc_consumer.sinks.guarded import guard, is_guarded
from cdc_consumer.testing import FakeContext, stream_record
from cdc_consumer.versions import format_version

from tests.cdc_consumer.fixtures import Resources, error_response, mirror_projection

#: A record as AWS documents Kinesis Data Streams for DynamoDB records (the Lambda event's
#: Kinesis envelope; the data is the base64 of the DynamoDB change below).
AWS_DATA = {
    "awsRegion": "us-east-1",
    "eventID": "0e0a2a8a-8ea8-4e2d-9c5b-6f4d5a8c7e11",
    "eventName": "MODIFY",
    "userIdentity": None,
    "recordFormat": "application/json",
    "tableName": "orders",
    "dynamodb": {
        "ApproximateCreationDateTime": 1_700_000_000_123_456,
        "Keys": {"pk": {"S": "ORDER#1"}},
        "NewImage": {
            "pk": {"S": "ORDER#1"},
            "customerId": {"S": "c1"},
            "status": {"S": "paid"},
            "amount": {"N": "42.5"},
        },
        "OldImage": {
            "pk": {"S": "ORDER#1"},
            "customerId": {"S": "c1"},
            "status": {"S": "pending"},
            "amount": {"N": "42.5"},
        },
        "SizeBytes": 120,
    },
    "eventSource": "aws:dynamodb",
}
SEQUENCE = "49590338271490256608559692538361571095921575989136588898"


def test_aws_record_decodes_into_the_same_change() -> None:
    record = kinesis_record(AWS_DATA, sequence_number=SEQUENCE)
    change = Change.from_record(record)
    assert change.event_id == AWS_DATA["eventID"]  # the DynamoDB change's: duplicates share it
    assert change.event_name == "MODIFY"
    assert change.keys == {"pk": "ORDER#1"}
    assert change.new_image == {
        "pk": "ORDER#1",
        "customerId": "c1",
        "status": "paid",
        "amount": Decimal("42.5"),
    }
    assert change.old_image is not None and change.old_image["status"] == "pending"
    assert change.sequence_number == SEQUENCE
    assert change.creation_time_us == 1_700_000_000_123_456
    assert change.approximate_creation_time is not None
    assert change.approximate_creation_time.microsecond == 123_456
    assert change.source_arn == record["eventSourceARN"]
    assert change.raw is record
    assert not change.is_ttl_expiry
    assert item_identifier(record) == SEQUENCE
    assert change.version == format_version(1_700_000_000_123_456, SEQUENCE)


def test_milliseconds_and_microseconds_are_both_read() -> None:
    millis = {
        **AWS_DATA,
        "dynamodb": {**AWS_DATA["dynamodb"], "ApproximateCreationDateTime": 1_700_000_000_123},
    }
    change = Change.from_record(kinesis_record(millis, sequence_number="1"))
    assert change.creation_time_us == 1_700_000_000_123_000
    assert kinesis_time_to_us(1_700_000_000_123_456) == 1_700_000_000_123_456
    with pytest.raises(ValueError, match="seconds"):
        kinesis_time_to_us(1_700_000_000)


def test_ttl_deletion_through_kinesis() -> None:
    data = {
        **AWS_DATA,
        "eventName": "REMOVE",
        "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
        "dynamodb": {k: v for k, v in AWS_DATA["dynamodb"].items() if k != "NewImage"},
    }
    change = Change.from_record(kinesis_record(data, sequence_number="7"))
    assert change.is_ttl_expiry and change.new_image is None


def test_version_orders_by_time_then_sequence_number() -> None:
    versions = [
        format_version(5, "99"),
        format_version(5, "100"),  # longer sequence number: numerically larger
        format_version(6, "1"),
        format_version(10**16, "1"),
    ]
    assert versions == sorted(versions)
    assert format_version(5, "100") > format_version(5, "99")


def test_stream_records_have_versions_too() -> None:
    record = stream_record(
        "INSERT",
        {"pk": "a"},
        new_image={"pk": "a"},
        sequence_number=123,
        approximate_creation_time=1_700_000_000.0,
    )
    change = Change.from_record(record)
    # Whole seconds, rounded down by DynamoDB: the change stands at its second's last microsecond.
    assert change.version == format_version(1_700_000_000_999_999, "123")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("%%% not base64 %%%", "not base64"),
        (base64.b64encode(b"\xff\xfe").decode(), "not base64 of UTF-8 JSON"),
        (base64.b64encode(b'{"order": 1}').decode(), "not a DynamoDB change"),
        (base64.b64encode(b"[1, 2]").decode(), "list JSON"),
        (
            base64.b64encode(json.dumps({**AWS_DATA, "eventSource": "aws:s3"}).encode()).decode(),
            "not a DynamoDB change",
        ),
    ],
)
def test_data_that_is_not_a_dynamodb_change_is_undecodable(data: str, message: str) -> None:
    with pytest.raises(UndecodableRecordError, match=message):
        Change.from_record(kinesis_record(data, sequence_number="1"))


def test_a_projection_reading_a_missing_version_fails_clearly() -> None:
    data = {
        **AWS_DATA,
        "dynamodb": {
            k: v for k, v in AWS_DATA["dynamodb"].items() if k != "ApproximateCreationDateTime"
        },
    }
    change = Change.from_record(kinesis_record(data, sequence_number="8"))
    assert change.approximate_creation_time is None
    with pytest.raises(MissingVersionError, match=r"no dynamodb\.ApproximateCreationDateTime"):
        LatestImage(table_name="replica")(change)


def test_guard_adds_the_condition_to_puts_and_updates() -> None:
    put = guard({"Put": {"TableName": "t", "Item": {"pk": {"S": "a"}}}}, "v1")
    assert put["Put"]["Item"]["cdc_version"] == {"S": "v1"}
    assert "attribute_not_exists(#cdcVersion)" in put["Put"]["ConditionExpression"]
    update = guard(
        {
            "Update": {
                "TableName": "t",
                "Key": {"pk": {"S": "a"}},
                "UpdateExpression": "ADD #n :one",
                "ConditionExpression": "attribute_exists(pk)",
                "ExpressionAttributeNames": {"#n": "n"},
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
        },
        "v2",
    )
    body = update["Update"]
    assert body["UpdateExpression"] == "SET #cdcVersion = :cdcVersion ADD #n :one"
    assert body["ConditionExpression"].startswith("(attribute_exists(pk)) AND (")
    assert is_guarded(update) and is_guarded(put)
    assert not is_guarded({"Put": {"TableName": "t", "Item": {}}})


# --- through the processor, on the local endpoint -------------------------------------------


def _change(seq: int, **overrides: Any) -> dict[str, Any]:
    dynamodb = {**AWS_DATA["dynamodb"], "ApproximateCreationDateTime": 1_700_000_000_000_000 + seq}
    return {**AWS_DATA, "eventID": f"event-{seq}", "dynamodb": dynamodb, **overrides}


def test_bad_data_is_quarantined_with_its_payload_and_processing_goes_on(
    resources: Resources,
) -> None:
    processor = resources.processor()
    processor.projection(mirror_projection(resources.view_table))
    bad = kinesis_record("not//base64!", sequence_number="2")
    other_json = kinesis_record(
        base64.b64encode(b'{"hello": "world"}').decode(), sequence_number="3"
    )
    records = [
        kinesis_record(_change(1), sequence_number="1"),
        bad,
        other_json,
        kinesis_record(_change(4), sequence_number="4"),
    ]
    response = processor.handle(kinesis_event(records), FakeContext())
    assert response == {"batchItemFailures": []}
    messages = resources.quarantined()
    assert [m["record"] for m in messages] == [bad, other_json]  # whole, as delivered
    assert all(m["error"]["type"] == "UndecodableRecordError" for m in messages)
    assert all(m["sourceArn"] == bad["eventSourceARN"] for m in messages)
    assert resources.view()["pk=ORDER#1"]["applied"] == 2


def test_a_transient_failure_reports_the_kinesis_sequence_number(
    resources: Resources, faults: Any
) -> None:
    processor = resources.processor()
    processor.projection(mirror_projection(resources.view_table))
    records = [kinesis_record(_change(n), sequence_number=str(1000 + n)) for n in range(3)]
    faults(resources.dynamodb).on(
        "TransactWriteItems",
        lambda body: error_response("ThrottlingException", "slow down"),
    )
    response = processor.handle(kinesis_event(records), FakeContext())
    assert response == {"batchItemFailures": [{"itemIdentifier": "1000"}]}


def test_duplicates_of_one_change_share_the_marker(resources: Resources) -> None:
    """A Kinesis duplicate is a new Kinesis record (another sequence number) holding the same
    DynamoDB change: the marker (keyed on the change's eventID) makes it a no-op."""
    processor = resources.processor()
    processor.projection(mirror_projection(resources.view_table))
    data = kinesis_data(
        stream_record(
            "INSERT",
            {"pk": "x"},
            new_image={"pk": "x", "n": 1},
            sequence_number=1,
            approximate_creation_time=1_700_000_000.5,
        )
    )
    records = [kinesis_record(data, sequence_number=str(n)) for n in (10, 11, 12)]
    processor.handle(kinesis_event(records[:2]), FakeContext())
    processor.handle(kinesis_event(records[2:]), FakeContext())
    assert resources.view()["pk=x"]["applied"] == 1
