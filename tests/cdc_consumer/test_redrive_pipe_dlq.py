"""The fan-out pipe's dead-letter queue redrive (``cdc-redrive --pipe-dlq-queue-url``): records
read back from the stream and put on the pipe's bus as the pipe sends them, on moto's server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cdc_consumer.redrive import PipeDlqRedrive
from cdc_consumer.redrive.cli import build_parser, main
from cdc_consumer.redrive.pipe_events import EventShape, put_events

from cdc_constructs.fan_out import ChangeEvents
from cdc_local.endpoint import LocalEndpoint
from tests.cdc_consumer.redrive_world import (
    Stream,
    inject_stream_error,
    on_failure_message,
    queue_bodies,
    send_on_failure,
    session_for,
)

# What a StreamFanOut(key_attributes={"pk": "S"}, new_image_attributes={"total": "N"}) pipe sends.
EVENTS = ChangeEvents(
    detail_type="OrderChanged", key_attributes={"pk": "S"}, new_image_attributes={"total": "N"}
)


@pytest.fixture
def dlq_url(sqs: Any) -> str:
    return sqs.create_queue(QueueName="orders-fan-out-dlq")["QueueUrl"]


@pytest.fixture
def bus_queue_url(aws: LocalEndpoint, sqs: Any) -> str:
    """A queue a rule on the bus ``orders-events`` sends every event of ``com.example`` to."""
    events = aws.client("events")
    events.create_event_bus(Name="orders-events")
    url = sqs.create_queue(QueueName="bus-copy")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    events.put_rule(
        Name="all",
        EventBusName="orders-events",
        EventPattern=json.dumps({"source": ["com.example"]}),
    )
    events.put_targets(
        Rule="all", EventBusName="orders-events", Targets=[{"Id": "q", "Arn": arn["QueueArn"]}]
    )
    return url


def _argv(stream: Stream, dlq_url: str, *extra: str) -> list[str]:
    return [
        "--pipe-dlq-queue-url", dlq_url, "--stream-arn", stream.arn,
        "--event-bus-name", "orders-events", "--event-source", "com.example",
        "--detail-type", EVENTS.event_detail_type, "--input-template", EVENTS.input_template,
        "--resource", "arn:aws:dynamodb:us-east-1:123456789012:table/orders", *extra,
    ]  # fmt: skip


def _pipe_message(stream: Stream, start: str, end: str) -> str:
    """A pipe's dead-letter record: ``DDBStreamBatchInfo`` as Lambda's, no function named."""
    document = json.loads(on_failure_message(stream, start, end, 12))
    del document["requestContext"], document["responseContext"]
    return json.dumps(document)


def _bus_events(sqs: Any, url: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    while True:
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return found
        found += [json.loads(m["Body"]) for m in messages]
        for message in messages:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def test_records_still_in_the_stream_are_put_on_the_bus_and_the_message_deleted(
    stream: Stream, sqs: Any, dlq_url: str, bus_queue_url: str, capsys: Any
) -> None:
    sequence_numbers = stream.write(12)
    sqs.send_message(
        QueueUrl=dlq_url,
        MessageBody=_pipe_message(stream, sequence_numbers[0], sequence_numbers[-1]),
    )

    status = main(_argv(stream, dlq_url, "--json"), session=session_for(stream.aws))

    report = json.loads(capsys.readouterr().out)
    assert status == 0, report
    assert (report["records_replayed"], report["messages_deleted"]) == (12, 1)
    assert report["invocations"] == 2  # 12 entries: PutEvents takes 10 a call
    assert queue_bodies(sqs, dlq_url) == []
    events = _bus_events(sqs, bus_queue_url)
    assert sorted(e["detail"]["sequenceNumber"] for e in events) == sorted(sequence_numbers)
    event = next(e for e in events if e["detail"]["sequenceNumber"] == sequence_numbers[3])
    assert (event["source"], event["detail-type"]) == ("com.example", "OrderChanged")
    assert event["detail"]["keys"] == {"pk": "order-3"}
    assert event["detail"]["newImage"] == {"total": "30"}  # numbers stay decimal strings
    assert event["detail"]["eventName"] == "INSERT"
    assert isinstance(event["detail"]["approximateCreationDateTime"], int)


def test_trimmed_records_are_reported_lost_by_sequence_number_and_the_message_kept(
    stream: Stream, sqs: Any, dlq_url: str, bus_queue_url: str, capsys: Any
) -> None:
    sequence_numbers = stream.write(2)
    body = send_on_failure(sqs, dlq_url, stream, sequence_numbers[0], sequence_numbers[1], 2)
    session = session_for(stream.aws)
    trimmed = "TrimmedDataAccessException"
    inject_stream_error(session, "GetShardIterator", trimmed, lambda _: True)

    status = main(_argv(stream, dlq_url), session=session)

    err = capsys.readouterr().err
    assert status == 1
    assert "LOST" in err
    first, last = sequence_numbers
    assert f"sequence numbers {first}..{last}" in err
    assert "TrimmedDataAccessException" in err
    assert queue_bodies(sqs, dlq_url) == [body]
    assert _bus_events(sqs, bus_queue_url) == []


def test_a_malformed_message_is_kept_with_the_reason(
    stream: Stream, sqs: Any, dlq_url: str, bus_queue_url: str, capsys: Any
) -> None:
    sqs.send_message(QueueUrl=dlq_url, MessageBody='{"not": "a dead-letter record"}')

    status = main(_argv(stream, dlq_url), session=session_for(stream.aws))

    err = capsys.readouterr().err
    assert status == 1
    assert "FAILED" in err and "DDBStreamBatchInfo" in err
    assert queue_bodies(sqs, dlq_url) == ['{"not": "a dead-letter record"}']


def test_dry_run_lists_without_putting_or_deleting(
    stream: Stream, sqs: Any, dlq_url: str, bus_queue_url: str, capsys: Any
) -> None:
    sequence_numbers = stream.write(3)
    body = send_on_failure(sqs, dlq_url, stream, sequence_numbers[0], sequence_numbers[-1], 3)

    status = main(_argv(stream, dlq_url, "--dry-run"), session=session_for(stream.aws))

    assert status == 0
    assert "3 record(s)" in capsys.readouterr().err
    assert queue_bodies(sqs, dlq_url) == [body]
    assert _bus_events(sqs, bus_queue_url) == []


class _FlakyBus:
    """PutEvents that fails the first entry of the first call, then takes everything."""

    def __init__(self) -> None:
        self.calls: list[list[dict[str, Any]]] = []

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls.append(Entries)
        results: list[dict[str, Any]] = [{"EventId": "e"} for _ in Entries]
        if len(self.calls) == 1:
            results[0] = {"ErrorCode": "ThrottlingException", "ErrorMessage": "slow down"}
        return {"FailedEntryCount": 1 if len(self.calls) == 1 else 0, "Entries": results}


def test_put_events_keeps_the_limits_and_resends_failed_entries() -> None:
    shape = EventShape("bus", "com.example", "T")
    big = {"dynamodb": {"SequenceNumber": "1"}, "pad": "x" * 100_000}
    entries = [shape.entry(big) for _ in range(3)] + [shape.entry({"a": 1}) for _ in range(11)]
    bus = _FlakyBus()

    outcome = put_events(bus, entries, sleep=lambda _: None)

    assert outcome.failed_entry_count == 0 and outcome.delivered == 14
    assert all(len(call) <= 10 for call in bus.calls)
    assert all(sum(len(e["Detail"]) for e in call) <= 256 * 1024 for call in bus.calls)
    assert bus.calls[-1] == [entries[0]]  # the failed entry, sent again alone


def test_help_names_every_option() -> None:
    text = build_parser().format_help()
    for option in (
        "--pipe-dlq-queue-url",
        "--event-bus-name",
        "--input-template",
        "--endpoint-url",
    ):
        assert option in text


def test_a_consumer_option_in_the_pipe_mode_is_an_operator_mistake(
    stream: Stream, dlq_url: str, capsys: Any
) -> None:
    status = main(
        [*_argv(stream, dlq_url), "--function-name", "orders"], session=session_for(stream.aws)
    )

    assert status == 2
    assert "--function-name" in capsys.readouterr().err


class _RefusingBus:
    """PutEvents that fails every entry (a bus policy that refuses the pipe's role)."""

    def __init__(self) -> None:
        self.calls = 0

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls += 1
        failure = {"ErrorCode": "AccessDeniedException", "ErrorMessage": "not allowed"}
        return {"FailedEntryCount": len(Entries), "Entries": [failure for _ in Entries]}


def test_entries_the_bus_keeps_refusing_keep_the_message_with_the_failed_entry_count(
    stream: Stream, sqs: Any, dlq_url: str
) -> None:
    sequence_numbers = stream.write(2)
    body = send_on_failure(sqs, dlq_url, stream, sequence_numbers[0], sequence_numbers[1], 2)
    bus = _RefusingBus()
    redrive = PipeDlqRedrive(
        sqs_client=sqs,
        streams_client=stream.streams,
        events_client=bus,
        stream_arn=stream.arn,
        shape=EventShape("orders-events", "com.example", "OrderChanged", EVENTS.input_template),
        receive_wait_seconds=0,
        sleep=lambda _: None,
    )

    report = redrive.run(dlq_url)

    (failed,) = report.failed
    assert "FailedEntryCount 2 of 2" in failed.reason and "AccessDeniedException" in failed.reason
    assert bus.calls == 3  # the default rounds
    assert not report.ok and report.messages_deleted == 0
    assert queue_bodies(sqs, dlq_url) == [body]
