"""Sample events from AWS's documentation, typed in from the pages named on each."""

from __future__ import annotations

from typing import Any

#: Lambda Developer Guide, "Using AWS Lambda with Amazon DynamoDB" (with-ddb.html), the
#: example DynamoDB stream event: an INSERT, a MODIFY and a REMOVE of item Id 101.
LAMBDA_DOCS_EVENT: dict[str, Any] = {
    "Records": [
        {
            "eventID": "1",
            "eventVersion": "1.0",
            "dynamodb": {
                "Keys": {"Id": {"N": "101"}},
                "NewImage": {"Message": {"S": "New item!"}, "Id": {"N": "101"}},
                "StreamViewType": "NEW_AND_OLD_IMAGES",
                "SequenceNumber": "111",
                "SizeBytes": 26,
            },
            "awsRegion": "us-west-2",
            "eventName": "INSERT",
            "eventSourceARN": "stream-ARN",
            "eventSource": "aws:dynamodb",
        },
        {
            "eventID": "2",
            "eventVersion": "1.0",
            "dynamodb": {
                "OldImage": {"Message": {"S": "New item!"}, "Id": {"N": "101"}},
                "SequenceNumber": "222",
                "Keys": {"Id": {"N": "101"}},
                "SizeBytes": 59,
                "NewImage": {"Message": {"S": "This item has changed"}, "Id": {"N": "101"}},
                "StreamViewType": "NEW_AND_OLD_IMAGES",
            },
            "awsRegion": "us-west-2",
            "eventName": "MODIFY",
            "eventSourceARN": "stream-ARN",
            "eventSource": "aws:dynamodb",
        },
        {
            "eventID": "3",
            "eventVersion": "1.0",
            "dynamodb": {
                "Keys": {"Id": {"N": "101"}},
                "SizeBytes": 38,
                "SequenceNumber": "333",
                "OldImage": {"Message": {"S": "This item has changed"}, "Id": {"N": "101"}},
                "StreamViewType": "NEW_AND_OLD_IMAGES",
            },
            "awsRegion": "us-west-2",
            "eventName": "REMOVE",
            "eventSourceARN": "stream-ARN",
            "eventSource": "aws:dynamodb",
        },
    ]
}

#: DynamoDB Developer Guide, "Tutorial #1: Using filters to process all events with Amazon
#: DynamoDB and AWS Lambda using the AWS CLI" (Streams.Lambda.Tutorial.html), step 4's test
#: payload: a NEW_IMAGE stream record of BarkTable.
DYNAMODB_STREAMS_TUTORIAL_EVENT: dict[str, Any] = {
    "Records": [
        {
            "eventID": "7de3041dd709b024af6f29e4fa13d34c",
            "eventName": "INSERT",
            "eventVersion": "1.1",
            "eventSource": "aws:dynamodb",
            "awsRegion": "region",
            "dynamodb": {
                "ApproximateCreationDateTime": 1479499740,
                "Keys": {
                    "Timestamp": {"S": "2016-11-18:12:09:36"},
                    "Username": {"S": "John Doe"},
                },
                "NewImage": {
                    "Timestamp": {"S": "2016-11-18:12:09:36"},
                    "Message": {"S": "This is a bark from the Woofer social network"},
                    "Username": {"S": "John Doe"},
                },
                "SequenceNumber": "13021600000000001596893679",
                "SizeBytes": 112,
                "StreamViewType": "NEW_IMAGE",
            },
            "eventSourceARN": (
                "arn:aws:dynamodb:region:123456789012:table/BarkTable/stream/2016-11-16T20:42:48.104"
            ),
        }
    ]
}

#: Lambda Developer Guide, "Implementing partial batch responses" / DynamoDB TTL docs: the
#: identity on a REMOVE record written by DynamoDB's TTL process.
TTL_USER_IDENTITY: dict[str, str] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}

#: The binary examples of the DynamoDB Streams API Reference, "AttributeValue"
#: (API_streams_AttributeValue.html): ``"B": "dGhpcyB0ZXh0IGlzIGJhc2U2NC1lbmNvZGVk"`` and
#: ``"BS": ["U3Vubnk=", "UmFpbnk=", "U25vd3k="]``, placed in the Lambda guide's sample record
#: above (with-ddb.html) as Lambda delivers them: base64 text, as a key, top-level attributes,
#: and nested in a map and a list of both images.
BINARY_TEXT = "dGhpcyB0ZXh0IGlzIGJhc2U2NC1lbmNvZGVk"  # "this text is base64-encoded"
BINARY_SET = ["U3Vubnk=", "UmFpbnk=", "U25vd3k="]  # "Sunny", "Rainy", "Snowy"
BINARY_EVENT: dict[str, Any] = {
    "Records": [
        {
            "eventID": "4",
            "eventVersion": "1.0",
            "dynamodb": {
                "Keys": {"Id": {"N": "101"}, "Blob": {"B": BINARY_TEXT}},
                "OldImage": {
                    "Id": {"N": "101"},
                    "Blob": {"B": BINARY_TEXT},
                    "Weather": {"BS": BINARY_SET[:1]},
                },
                "NewImage": {
                    "Id": {"N": "101"},
                    "Blob": {"B": BINARY_TEXT},
                    "Weather": {"BS": BINARY_SET},
                    "Nested": {
                        "M": {
                            "Data": {"B": BINARY_TEXT},
                            "History": {"L": [{"B": "U3Vubnk="}, {"BS": ["UmFpbnk="]}]},
                        }
                    },
                },
                "StreamViewType": "NEW_AND_OLD_IMAGES",
                "SequenceNumber": "444",
                "SizeBytes": 120,
            },
            "awsRegion": "us-west-2",
            "eventName": "MODIFY",
            "eventSourceARN": "stream-ARN",
            "eventSource": "aws:dynamodb",
        }
    ]
}
