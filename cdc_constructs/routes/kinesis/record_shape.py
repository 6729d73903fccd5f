"""The shape of a Kinesis record of a table's changes, as Lambda filters it: its metadata fields,
and ``data``, the change as DynamoDB writes it to Kinesis (decoded from base64 JSON by Lambda
before filtering). Sources: AWS Lambda developer guide, "Using event filtering with a Kinesis
event source"; DynamoDB developer guide, "Change data capture for Kinesis Data Streams".
"""

from __future__ import annotations

from typing import Final

from cdc_constructs.record_shape import (
    ATTRIBUTES,
    EVENT_NAME,
    EVENT_SOURCE,
    NUMBER,
    TEXT,
    UNCHECKED,
    USER_IDENTITY,
    VALUE,
    Fields,
    OneOf,
)

__all__ = ["KINESIS_CHANGE_RECORD", "KINESIS_RECORD"]

KINESIS_CHANGE_RECORD: Final = Fields(
    "a Kinesis record",
    {
        "approximateArrivalTimestamp": VALUE,
        "data": Fields(
            "data (a DynamoDB change in Kinesis)",
            {
                "awsRegion": VALUE,
                "dynamodb": Fields(
                    "data.dynamodb",
                    {
                        "ApproximateCreationDateTime": NUMBER,
                        "ApproximateCreationDateTimePrecision": OneOf(
                            "data.dynamodb.ApproximateCreationDateTimePrecision",
                            ("MILLISECOND", "MICROSECOND"),
                        ),
                        "Keys": ATTRIBUTES,
                        "NewImage": ATTRIBUTES,
                        "OldImage": ATTRIBUTES,
                        "SizeBytes": NUMBER,
                    },
                ),
                "eventID": TEXT,
                "eventName": EVENT_NAME,
                "eventSource": EVENT_SOURCE,
                "recordFormat": VALUE,
                "tableName": VALUE,
                "userIdentity": USER_IDENTITY,
            },
        ),
        "kinesisSchemaVersion": VALUE,
        "partitionKey": VALUE,
        "sequenceNumber": VALUE,
    },
    hint="the DynamoDB change is under 'data' (KinesisFilters.on_data)",
)
"""A record of a Kinesis stream a table streams its changes to, as Lambda filters it."""

KINESIS_RECORD: Final = Fields(
    "a Kinesis record",
    {**KINESIS_CHANGE_RECORD.fields, "data": UNCHECKED},
    hint="the payload is under 'data'",
)
"""A record of any Kinesis stream: its ``data`` may be anything (CdcChecks, where no table of
the template is known to stream into it)."""
