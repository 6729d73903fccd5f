"""A marker records the stream it was written for; a "duplicate" whose marker came from another
stream is an error (issue 11 §2): the record is reported failed and ForeignMarkers counts it,
never a silent skip."""

from __future__ import annotations

import json
from typing import Any

from cdc_consumer import Change
from cdc_consumer.testing import FakeContext, stream_event, stream_record

from tests.cdc_consumer.fixtures import Resources, mirror_projection

STREAM_A = "arn:aws:dynamodb:us-east-1:123456789012:table/a/stream/2026-01-01T00:00:00.000"
STREAM_B = "arn:aws:dynamodb:us-east-1:123456789012:table/b/stream/2026-01-01T00:00:00.000"


def record(event_id: str, sequence: int, stream: str) -> dict[str, Any]:
    return stream_record(
        "INSERT",
        {"pk": event_id},
        new_image={"pk": event_id, "n": sequence},
        sequence_number=sequence,
        event_id=event_id,
        source_arn=stream,
    )


def emf(output: str) -> dict[str, Any]:
    (line,) = [json.loads(x) for x in output.splitlines() if x.startswith('{"_aws"')]
    return line


def logs(output: str, message: str) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in output.splitlines() if x.startswith('{"level"')]
    return [line for line in lines if line["message"] == message]


def test_a_marker_from_another_stream_fails_the_record_instead_of_skipping_it(
    resources: Resources, capsys
) -> None:
    first = resources.processor("shared-name")
    first.projection(mirror_projection(resources.view_table))
    assert first.handle(stream_event([record("e1", 1, STREAM_A)]), FakeContext()) == {
        "batchItemFailures": []
    }
    (marker,) = resources.markers()
    assert marker["stream"] == STREAM_A
    capsys.readouterr()

    second = resources.processor("shared-name")  # same name, same table, another stream
    second.projection(mirror_projection(resources.view_table))
    batch = [record("e0", 10, STREAM_B), record("e1", 11, STREAM_B), record("e2", 12, STREAM_B)]
    response = second.handle(stream_event(batch), FakeContext())

    assert response == {"batchItemFailures": [{"itemIdentifier": "11"}]}
    output = capsys.readouterr().out
    metrics = emf(output)
    assert (metrics["ForeignMarkers"], metrics["DuplicatesSkipped"]) == (1, 0)
    assert metrics["RecordsProcessed"] == 1  # e0, before it; nothing after it
    (failed,) = logs(output, "record failed")
    assert failed["reason"] == "foreign marker" and STREAM_A in failed["error"]["message"]
    assert set(resources.view()) == {"pk=e0", "pk=e1"}  # e1's entry is the first stream's
    assert resources.view()["pk=e1"]["applied"] == 1


def test_a_redelivery_from_the_same_stream_is_still_a_duplicate(
    resources: Resources, capsys
) -> None:
    processor = resources.processor("same")
    processor.projection(mirror_projection(resources.view_table))
    batch = [record("e1", 1, STREAM_A)]
    processor.handle(stream_event(batch), FakeContext())
    capsys.readouterr()

    assert processor.handle(stream_event(batch), FakeContext()) == {"batchItemFailures": []}
    metrics = emf(capsys.readouterr().out)
    assert (metrics["DuplicatesSkipped"], metrics["ForeignMarkers"]) == (1, 0)


def test_a_marker_written_before_streams_were_recorded_counts_as_this_streams(
    resources: Resources, capsys
) -> None:
    resources.dynamodb.put_item(
        TableName=resources.idempotency_table,
        Item={"id": {"S": "old#e1"}, "expiration": {"N": "4102444800"}},
    )
    processor = resources.processor("old")
    processor.projection(mirror_projection(resources.view_table))
    assert processor.handle(stream_event([record("e1", 1, STREAM_A)]), FakeContext()) == {
        "batchItemFailures": []
    }
    assert emf(capsys.readouterr().out)["DuplicatesSkipped"] == 1


def test_a_side_effect_completed_for_another_stream_fails_the_record(
    resources: Resources, capsys
) -> None:
    calls: list[str] = []

    def notify(change: Change) -> None:
        calls.append(f"{change.source_arn}:{change.event_id}")

    first = resources.processor("shared-name")
    first.side_effect(notify)
    first.handle(stream_event([record("e1", 1, STREAM_A)]), FakeContext())
    capsys.readouterr()

    second = resources.processor("shared-name")
    second.side_effect(notify)
    response = second.handle(stream_event([record("e1", 5, STREAM_B)]), FakeContext())

    assert response == {"batchItemFailures": [{"itemIdentifier": "5"}]}
    assert calls == [f"{STREAM_A}:e1"]
    assert emf(capsys.readouterr().out)["ForeignMarkers"] == 1
