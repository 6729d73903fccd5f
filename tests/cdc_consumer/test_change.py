"""Change.from_record: AWS documentation samples decode; bad records are named as such."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from cdc_consumer import Change, UndecodableRecordError
from cdc_consumer.testing import stream_record

from tests.cdc_consumer.samples import (
    DYNAMODB_STREAMS_TUTORIAL_EVENT,
    LAMBDA_DOCS_EVENT,
    TTL_USER_IDENTITY,
)


def test_lambda_docs_sample_decodes_insert_modify_remove() -> None:
    insert, modify, remove = (Change.from_record(r) for r in LAMBDA_DOCS_EVENT["Records"])

    assert (insert.event_id, insert.event_name, insert.sequence_number) == ("1", "INSERT", "111")
    assert insert.keys == {"Id": Decimal(101)}
    assert insert.new_image == {"Message": "New item!", "Id": Decimal(101)}
    assert insert.old_image is None
    assert modify.old_image == {"Message": "New item!", "Id": Decimal(101)}
    assert modify.new_image == {"Message": "This item has changed", "Id": Decimal(101)}
    assert remove.new_image is None
    assert remove.old_image == {"Message": "This item has changed", "Id": Decimal(101)}
    assert remove.source_arn == "stream-ARN"
    assert not remove.is_ttl_expiry
    assert insert.approximate_creation_time is None  # the sample carries none
    assert remove.raw is LAMBDA_DOCS_EVENT["Records"][2]


def test_dynamodb_streams_tutorial_sample_decodes() -> None:
    (change,) = (Change.from_record(r) for r in DYNAMODB_STREAMS_TUTORIAL_EVENT["Records"])

    assert change.keys == {"Timestamp": "2016-11-18:12:09:36", "Username": "John Doe"}
    assert change.new_image is not None
    assert change.new_image["Message"] == "This is a bark from the Woofer social network"
    assert change.approximate_creation_time == datetime(2016, 11, 18, 20, 9, tzinfo=UTC)
    assert change.source_arn is not None and "BarkTable" in change.source_arn


def test_ttl_expiry_is_a_remove_by_the_dynamodb_service() -> None:
    record = copy.deepcopy(LAMBDA_DOCS_EVENT["Records"][2])
    record["userIdentity"] = TTL_USER_IDENTITY
    assert Change.from_record(record).is_ttl_expiry

    record["userIdentity"] = {"type": "Service", "principalId": "someone.else"}
    assert not Change.from_record(record).is_ttl_expiry


def test_testing_helper_builds_records_that_round_trip() -> None:
    record = stream_record(
        "MODIFY",
        {"pk": "ORDER#1"},
        new_image={"pk": "ORDER#1", "amount": 12.5, "tags": ["a"]},
        old_image={"pk": "ORDER#1", "amount": 10},
        sequence_number=5,
        event_id="e1",
    )
    change = Change.from_record(record)
    assert change.new_image == {"pk": "ORDER#1", "amount": Decimal("12.5"), "tags": ["a"]}
    assert change.old_image == {"pk": "ORDER#1", "amount": Decimal(10)}
    assert (change.event_id, change.sequence_number) == ("e1", "5")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.pop("eventID"), "eventID must be a non-empty string"),
        (lambda r: r.update(eventName="UPSERT"), "eventName must be one of"),
        (lambda r: r.pop("dynamodb"), "'dynamodb' must be an object"),
        (lambda r: r["dynamodb"].pop("Keys"), "dynamodb.Keys must be a non-empty object"),
        (lambda r: r["dynamodb"].update(NewImage={"a": {"Q": "1"}}), "dynamodb.NewImage holds"),
        (lambda r: r["dynamodb"].update(OldImage="x"), "dynamodb.OldImage must be an object"),
        # Numbers DynamoDB could not hold: boto3's decimal context raises ArithmeticError
        # subclasses (Overflow, Inexact), not ValueError.
        (lambda r: r["dynamodb"].update(NewImage={"a": {"N": "1e500"}}), "dynamodb.NewImage holds"),
        (
            lambda r: r["dynamodb"].update(OldImage={"a": {"N": "1." + "0" * 40 + "1"}}),
            "dynamodb.OldImage holds",
        ),
        (
            lambda r: r["dynamodb"].update(ApproximateCreationDateTime="soon"),
            "ApproximateCreationDateTime must be epoch seconds",
        ),
    ],
)
def test_undecodable_records_name_the_problem(mutate, message) -> None:  # type: ignore[no-untyped-def]
    record = copy.deepcopy(LAMBDA_DOCS_EVENT["Records"][1])
    mutate(record)
    with pytest.raises(UndecodableRecordError, match=message):
        Change.from_record(record).decode()


def test_images_are_decoded_on_first_use_and_once() -> None:
    record = copy.deepcopy(LAMBDA_DOCS_EVENT["Records"][1])
    record["dynamodb"]["OldImage"] = {"a": {"N": "1e500"}}  # not a number DynamoDB holds
    change = Change.from_record(record)  # not decoded yet: no error
    assert change.new_image == {"Message": "This item has changed", "Id": Decimal(101)}
    assert change.new_image is change.new_image  # decoded once
    with pytest.raises(UndecodableRecordError, match=r"dynamodb\.OldImage holds"):
        _ = change.old_image
    with pytest.raises(AttributeError, match="read-only"):
        change.event_id = "other"  # type: ignore[misc]
