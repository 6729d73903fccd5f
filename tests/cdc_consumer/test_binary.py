"""Binary attributes (B, BS): base64 text in Lambda's event, bytes in a Change, base64 again
wherever a record leaves the runtime. Samples: the DynamoDB Streams API Reference's binary
examples in the Lambda guide's record shape (tests/cdc_consumer/samples.py)."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest
from cdc_consumer import Change, PermanentError, UndecodableRecordError
from cdc_consumer.quarantine import quarantine_message
from cdc_consumer.testing import FakeContext, stream_event, stream_record
from cdc_consumer.wire import deserialize_image, to_wire

from tests.cdc_consumer.fixtures import Resources, mirror_projection
from tests.cdc_consumer.samples import BINARY_EVENT, BINARY_SET, BINARY_TEXT

TEXT = b"this text is base64-encoded"
WEATHER = {b"Sunny", b"Rainy", b"Snowy"}


def binary_record() -> dict[str, Any]:
    return copy.deepcopy(BINARY_EVENT["Records"][0])


def test_binary_values_decode_to_bytes_in_keys_both_images_and_nested() -> None:
    change = Change.from_record(binary_record())

    assert change.keys == {"Id": 101, "Blob": TEXT}
    assert type(change.keys["Blob"]) is bytes  # not boto3's Binary wrapper
    assert change.old_image == {"Id": 101, "Blob": TEXT, "Weather": {b"Sunny"}}
    assert change.new_image is not None
    assert change.new_image["Weather"] == WEATHER
    assert change.new_image["Nested"] == {"Data": TEXT, "History": [b"Sunny", {b"Rainy"}]}
    assert change.raw["dynamodb"]["Keys"]["Blob"] == {"B": BINARY_TEXT}  # wire form kept


@pytest.mark.parametrize(
    "value",
    [{"B": "not base64!"}, {"B": "YWJ"}, {"BS": ["U3Vubnk=", "???"]}, {"B": 7}, {"BS": "x"}],
)
def test_binary_that_is_not_base64_is_undecodable(value: dict[str, Any]) -> None:
    record = binary_record()
    record["dynamodb"]["NewImage"]["Bad"] = {"M": {"inner": value}}
    with pytest.raises(UndecodableRecordError, match=r"dynamodb\.NewImage holds"):
        Change.from_record(record).decode()


def test_a_record_with_binary_attributes_is_processed_not_quarantined(
    resources: Resources,
) -> None:
    processor = resources.processor()
    processor.projection(mirror_projection(resources.view_table))

    assert processor.handle(copy.deepcopy(BINARY_EVENT), FakeContext()) == {"batchItemFailures": []}
    assert resources.quarantined() == []
    (entry,) = resources.view().values()
    assert entry["applied"] == 1


def test_a_quarantined_binary_record_leaves_as_lambda_delivered_it(resources: Resources) -> None:
    processor = resources.processor()

    @processor.projection
    def refuse(change: Change) -> list[dict[str, Any]]:
        assert change.keys["Blob"] == TEXT
        raise PermanentError("refused")

    delivered = binary_record()
    assert processor.handle(stream_event([copy.deepcopy(delivered)]), FakeContext()) == {
        "batchItemFailures": []
    }
    (message,) = resources.quarantined()
    assert message["record"] == delivered  # base64 text, byte for byte the same record


def test_a_record_built_in_process_with_bytes_is_quarantined_as_base64() -> None:
    record = binary_record()
    record["dynamodb"]["NewImage"]["Raw"] = {"B": TEXT}  # as boto3's GetRecords holds it
    message = json.loads(json.dumps(quarantine_message("c", record, PermanentError("x"))))

    assert message["record"]["dynamodb"]["NewImage"]["Raw"] == {
        "B": base64.b64encode(TEXT).decode()
    }
    assert Change.from_record(message["record"]).new_image["Raw"] == TEXT  # type: ignore[index]


def test_testing_helpers_write_binary_as_lambda_delivers_it() -> None:
    record = stream_record(
        "INSERT",
        {"pk": b"\x00\x01"},
        new_image={"pk": b"\x00\x01", "tags": {b"a", b"b"}, "m": {"l": [b"\xff"]}},
        sequence_number=1,
    )
    json.dumps(record)  # JSON, as Lambda's event is

    assert record["dynamodb"]["Keys"] == {"pk": {"B": "AAE="}}
    change = Change.from_record(record)
    assert change.new_image == {"pk": b"\x00\x01", "tags": {b"a", b"b"}, "m": {"l": [b"\xff"]}}


def test_wire_form_round_trips() -> None:
    image = binary_record()["dynamodb"]["NewImage"]
    decoded = deserialize_image(image)
    assert deserialize_image(to_wire(decoded_to_dynamodb_json(decoded))) == decoded
    assert sorted(to_wire({b"Sunny", b"Rainy", b"Snowy"})) == sorted(BINARY_SET)


def decoded_to_dynamodb_json(image: dict[str, Any]) -> dict[str, Any]:
    from boto3.dynamodb.types import TypeSerializer

    serializer = TypeSerializer()
    return {name: serializer.serialize(value) for name, value in image.items()}
