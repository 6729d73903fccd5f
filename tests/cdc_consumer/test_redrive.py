"""Redrive against moto's server: real tables, streams and queues over HTTP.

The consumer here is a test handler that is idempotent by eventID (the runtime's markers play
that part in production), so these tests show the redrive side: order, deletion only after
success, nothing lost silently, and a second run that finds nothing to do.

moto's DynamoDB Streams answers a trimmed sequence number or an unknown shard with HTTP 500
(an assertion in moto), where DynamoDB raises TrimmedDataAccessException and
ResourceNotFoundException. Those two cases inject DynamoDB's errors with a botocore
``before-call`` hook (:func:`inject_stream_error`) instead of relying on moto's answer.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cdc_consumer import redrive_handler
from cdc_consumer.redrive import (
    CallableInvoker,
    InvocationError,
    LambdaInvoker,
    Redrive,
    RedriveReport,
    Source,
    main,
    parse_on_failure_message,
    to_lambda_record,
)

from tests.cdc_consumer.redrive_world import (
    OTHER_STREAM_ARN,
    Consumer,
    Stream,
    inject_stream_error,
    make_redrive,
    on_failure_message,
    quarantine_message,
    queue_bodies,
    send_failed_batch,
    send_on_failure,
    session_for,
    write_handler_module,
)

# --- On-failure messages -----------------------------------------------------------------------


def test_replays_the_range_in_order_resends_from_the_failed_record_then_deletes(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    sequence_numbers = stream.write(5)
    send_on_failure(sqs, queue_url, stream, sequence_numbers[1], sequence_numbers[3], 3)
    consumer = Consumer(fail={sequence_numbers[2]: 1})

    report = make_redrive(stream, consumer).run(queue_url, Source.ON_FAILURE)

    assert consumer.applied == sequence_numbers[1:4]
    assert report.ok, report.summary()
    assert (report.messages_received, report.messages_deleted) == (1, 1)
    assert report.records_replayed == 3
    assert report.invocations == 2  # [1, 2, 3] fails at 2; then [2, 3]
    assert queue_bodies(sqs, queue_url) == []

    again = make_redrive(stream, consumer).run(queue_url, Source.ON_FAILURE)
    assert (again.messages_received, again.records_replayed, again.invocations) == (0, 0, 0)
    assert consumer.applied == sequence_numbers[1:4]


def test_a_message_delivered_twice_is_replayed_twice_and_changes_nothing_the_second_time(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    sequence_numbers = stream.write(3)
    body = on_failure_message(stream, sequence_numbers[0], sequence_numbers[2], 3)
    sqs.send_message(QueueUrl=queue_url, MessageBody=body)
    sqs.send_message(QueueUrl=queue_url, MessageBody=body)
    consumer = Consumer()

    report = make_redrive(stream, consumer).run(queue_url)

    assert report.messages_deleted == 2
    assert consumer.applied == sequence_numbers
    assert consumer.duplicates == 3
    assert queue_bodies(sqs, queue_url) == []


def test_messages_are_redriven_in_stream_order_whatever_order_the_queue_returns(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    sequence_numbers = stream.write(4)
    for first, last in ((2, 3), (0, 1)):  # the newer batch is queued first
        send_on_failure(sqs, queue_url, stream, sequence_numbers[first], sequence_numbers[last], 2)
    consumer = Consumer()

    report = make_redrive(stream, consumer).run(queue_url)

    assert report.messages_deleted == 2
    assert consumer.applied == sequence_numbers


def test_records_delivered_as_lambda_delivers_them(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    send_failed_batch(sqs, queue_url, stream, 1)
    events: list[dict[str, Any]] = []

    def consumer(event: dict[str, Any], context: Any) -> None:
        events.append(event)

    assert make_redrive(stream, consumer).run(queue_url).ok
    (record,) = events[0]["Records"]
    assert record["eventSourceARN"] == stream.arn
    assert record["eventName"] == "INSERT"
    assert record["dynamodb"]["NewImage"] == {"pk": {"S": "order-0"}, "total": {"N": "0"}}
    assert isinstance(record["dynamodb"]["ApproximateCreationDateTime"], int)


def test_a_consumer_that_keeps_failing_keeps_the_message_after_bounded_attempts(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    sequence_numbers, body = send_failed_batch(sqs, queue_url, stream, 3)
    consumer = Consumer(fail={sequence_numbers[1]: 100})

    report = make_redrive(stream, consumer, max_attempts=3).run(queue_url)

    assert not report.ok
    (failed,) = report.failed
    assert f"record {sequence_numbers[1]} still failed after 3 attempt(s)" in failed.reason
    assert "1 of 3 record(s) were replayed" in failed.reason
    assert consumer.calls == 3
    assert report.messages_deleted == 0
    assert queue_bodies(sqs, queue_url) == [body]


def test_a_function_error_fails_the_whole_batch_and_keeps_the_message(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    _, body = send_failed_batch(sqs, queue_url, stream, 2)

    report = make_redrive(stream, Consumer(raises=True), max_attempts=2).run(queue_url)

    (failed,) = report.failed
    assert "raised ValueError: total must not be negative" in failed.reason
    assert report.invocations == 2
    assert queue_bodies(sqs, queue_url) == [body]


def test_a_failure_naming_no_record_of_the_batch_fails_the_whole_batch(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    send_failed_batch(sqs, queue_url, stream, 2)

    def consumer(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"batchItemFailures": [{"itemIdentifier": "not-a-sequence-number"}]}

    report = make_redrive(stream, consumer, max_attempts=1).run(queue_url)

    (failed,) = report.failed
    assert "names 'not-a-sequence-number', no record of the batch" in failed.reason
    assert report.records_replayed == 0


def test_long_ranges_are_replayed_in_invocations_of_bounded_size_in_order(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    sequence_numbers, _ = send_failed_batch(sqs, queue_url, stream, 5)
    sizes: list[int] = []
    consumer = Consumer()

    def recording(event: dict[str, Any], context: Any) -> dict[str, Any]:
        sizes.append(len(event["Records"]))
        return consumer(event, context)

    report = make_redrive(stream, recording, invoke_max_records=2).run(queue_url)

    assert report.ok
    assert sizes == [2, 2, 1]
    assert consumer.applied == sequence_numbers


def test_records_the_mappings_filters_exclude_are_not_replayed(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    stream.write(2)
    stream.ddb.put_item(TableName="orders", Item={"pk": {"S": "order-0"}, "total": {"N": "5"}})
    sequence_numbers = [r["dynamodb"]["SequenceNumber"] for r in stream.records()]
    send_on_failure(sqs, queue_url, stream, sequence_numbers[0], sequence_numbers[2], 1)
    consumer = Consumer()

    report = make_redrive(stream, consumer, filters=[{"eventName": ["MODIFY"]}]).run(queue_url)

    assert report.ok
    assert consumer.applied == [sequence_numbers[2]]
    assert (report.records_replayed, report.records_filtered) == (1, 2)
    assert report.messages_deleted == 1


def test_a_filter_operator_redrive_cannot_match_is_refused() -> None:
    with pytest.raises(ValueError, match=r"filters\[0\]\.eventName has matcher \{'wildcard'"):
        Redrive(
            invoker=CallableInvoker(Consumer()),
            stream_arn="arn",
            sqs_client=object(),
            streams_client=object(),
            filters=[{"eventName": [{"wildcard": "MOD*"}]}],
        )


# --- Lost records ------------------------------------------------------------------------------


def test_trimmed_records_are_reported_lost_by_sequence_number_and_the_message_kept(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    sequence_numbers = stream.write(3)
    # DynamoDB trimmed everything before the third record (24 h retention).
    inject_stream_error(
        stream.streams,
        "GetShardIterator",
        "TrimmedDataAccessException",
        lambda request: int(request.get("SequenceNumber", 0)) < int(sequence_numbers[2]),
    )
    body = send_on_failure(sqs, queue_url, stream, sequence_numbers[0], sequence_numbers[1], 2)
    consumer = Consumer()

    report = make_redrive(stream, consumer).run(queue_url)

    (lost,) = report.lost
    assert (lost.first_sequence_number, lost.last_sequence_number) == tuple(sequence_numbers[:2])
    assert lost.shard_id == stream.shard_id
    assert "TrimmedDataAccessException" in lost.reason
    assert report.lost_record_count == 2
    assert not report.ok
    assert consumer.calls == 0
    assert queue_bodies(sqs, queue_url) == [body]


def test_a_shard_that_no_longer_exists_is_reported_lost(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    sequence_numbers = stream.write(1)
    gone = "shardId-00000001000000000000-0000dead"
    inject_stream_error(
        stream.streams,
        "GetShardIterator",
        "ResourceNotFoundException",
        lambda request: request["ShardId"] == gone,
    )
    body = send_on_failure(
        sqs, queue_url, stream, sequence_numbers[0], sequence_numbers[0], shardId=gone
    )

    report = make_redrive(stream, Consumer()).run(queue_url)

    (lost,) = report.lost
    assert lost.shard_id == gone
    assert "ResourceNotFoundException" in lost.reason
    assert queue_bodies(sqs, queue_url) == [body]


def test_sequence_numbers_the_stream_never_returns_are_reported_lost(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    sequence_numbers = stream.write(2)
    beyond = [str(int(sequence_numbers[-1]) + n) for n in (5, 9)]
    start_missing = on_failure_message(stream, beyond[0], beyond[1], 2)
    end_missing = on_failure_message(stream, sequence_numbers[0], beyond[1], 3)
    sqs.send_message(QueueUrl=queue_url, MessageBody=start_missing)
    sqs.send_message(QueueUrl=queue_url, MessageBody=end_missing)
    consumer = Consumer()

    report = make_redrive(stream, consumer, max_empty_pages=2).run(queue_url)

    reasons = sorted(lost.reason for lost in report.lost)
    assert len(reasons) == 2
    assert f"the end sequence number {beyond[1]} is not in the shard" in reasons[0]
    assert f"the start sequence number {beyond[0]} is not in the shard" in reasons[1]
    assert report.lost_record_count == 5
    assert consumer.calls == 0  # nothing of a message with a gap is replayed
    assert sorted(queue_bodies(sqs, queue_url)) == sorted([start_missing, end_missing])


# --- Malformed messages ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("this is not json", "on-failure message body is not JSON"),
        ('["a", "list"]', "body is JSON list, not an object"),
        ('{"requestContext": {}}', "has no DDBStreamBatchInfo object"),
        (
            '{"DDBStreamBatchInfo": {"shardId": "s", "startSequenceNumber": "1"}}',
            "lacks DDBStreamBatchInfo.endSequenceNumber, DDBStreamBatchInfo.streamArn",
        ),
    ],
)
def test_unusable_messages_are_refused_with_what_was_wrong(body: str, expected: str) -> None:
    from cdc_consumer.redrive import MalformedMessageError

    with pytest.raises(MalformedMessageError, match=expected.replace(".", r"\.")):
        parse_on_failure_message(body, OTHER_STREAM_ARN)


def test_malformed_and_foreign_messages_are_left_in_the_queue_with_a_clear_error(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    sequence_numbers = stream.write(2)
    bodies = {
        "not json": "{oops",
        "missing": json.dumps({"DDBStreamBatchInfo": {"shardId": stream.shard_id}}),
        "foreign": on_failure_message(
            stream, sequence_numbers[0], sequence_numbers[1], streamArn=OTHER_STREAM_ARN
        ),
        "backwards": on_failure_message(stream, sequence_numbers[1], sequence_numbers[0]),
    }
    for body in bodies.values():
        sqs.send_message(QueueUrl=queue_url, MessageBody=body)
    consumer = Consumer()

    report = make_redrive(stream, consumer).run(queue_url)

    reasons = " | ".join(f.reason for f in report.failed)
    assert len(report.failed) == 3
    assert "on-failure message body is not JSON" in reasons
    assert "lacks DDBStreamBatchInfo.startSequenceNumber" in reasons
    (kept,) = report.kept  # another stream's: kept, not "failed"
    assert (
        f"is for stream {OTHER_STREAM_ARN!r}, not the configured stream {stream.arn!r}"
        in kept.reason
    )
    assert not report.ok
    assert f"startSequenceNumber {sequence_numbers[1]} after endSequenceNumber" in reasons
    assert consumer.calls == 0
    assert report.messages_deleted == 0
    assert sorted(queue_bodies(sqs, queue_url)) == sorted(bodies.values())


# --- Quarantine --------------------------------------------------------------------------------


def test_a_quarantined_record_is_replayed_once_the_handler_is_fixed(
    stream: Stream, sqs: Any
) -> None:
    stream.write(2)
    quarantine_url = sqs.create_queue(QueueName="orders-quarantine")["QueueUrl"]
    record = to_lambda_record(stream.records()[1], stream.arn)
    body = quarantine_message(record)
    sqs.send_message(QueueUrl=quarantine_url, MessageBody=body)

    broken = make_redrive(stream, Consumer(raises=True), max_attempts=1).run(
        quarantine_url, Source.QUARANTINE
    )
    assert "raised ValueError" in broken.failed[0].reason
    assert queue_bodies(sqs, quarantine_url) == [body]

    fixed = Consumer()
    report = make_redrive(stream, fixed).run(quarantine_url, Source.QUARANTINE)

    assert report.ok, report.summary()
    assert fixed.applied == [record["dynamodb"]["SequenceNumber"]]
    assert report.messages_deleted == 1
    assert queue_bodies(sqs, quarantine_url) == []
    assert make_redrive(stream, fixed).run(quarantine_url, Source.QUARANTINE).invocations == 0


def test_quarantine_messages_of_another_consumer_or_without_a_record_are_kept(
    stream: Stream, sqs: Any
) -> None:
    stream.write(1)
    quarantine_url = sqs.create_queue(QueueName="orders-quarantine")["QueueUrl"]
    record = to_lambda_record(stream.records()[0], stream.arn)
    bodies = [quarantine_message(record, consumer="billing"), json.dumps({"version": "1"})]
    for body in bodies:
        sqs.send_message(QueueUrl=quarantine_url, MessageBody=body)

    report = make_redrive(stream, Consumer()).run(quarantine_url, Source.QUARANTINE)

    assert "is from consumer 'billing', not the configured consumer 'orders'" in (
        report.kept[0].reason
    )
    assert "has no 'record' object" in report.failed[0].reason
    assert not report.ok
    assert sorted(queue_bodies(sqs, quarantine_url)) == sorted(bodies)


def test_records_quarantined_again_during_a_run_are_left_for_the_next_run(
    stream: Stream, sqs: Any
) -> None:
    stream.write(1)
    quarantine_url = sqs.create_queue(QueueName="orders-quarantine")["QueueUrl"]
    record = to_lambda_record(stream.records()[0], stream.arn)
    sqs.send_message(QueueUrl=quarantine_url, MessageBody=quarantine_message(record))

    def still_poison(event: dict[str, Any], context: Any) -> dict[str, Any]:
        # The runtime quarantines a poison record again and reports success.
        for poison in event["Records"]:
            sqs.send_message(QueueUrl=quarantine_url, MessageBody=quarantine_message(poison))
        return {"batchItemFailures": []}

    report = make_redrive(stream, still_poison).run(quarantine_url, Source.QUARANTINE)

    assert (report.messages_received, report.messages_deleted) == (1, 1)
    assert report.messages_deferred == 1
    assert len(queue_bodies(sqs, quarantine_url)) == 1
    (again,) = report.requarantined  # still poison: reported, and the run is not ok
    assert again.sequence_number == record["dynamodb"]["SequenceNumber"]
    assert not report.ok
    assert f"REQUARANTINED record {again.sequence_number}" in report.summary()


# --- Dry run -----------------------------------------------------------------------------------


def test_dry_run_lists_what_would_be_replayed_without_invoking_or_deleting(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    sequence_numbers = stream.write(4)
    body = on_failure_message(stream, sequence_numbers[1], sequence_numbers[3], 3)
    message_id = sqs.send_message(QueueUrl=queue_url, MessageBody=body)["MessageId"]
    consumer = Consumer()

    report = make_redrive(stream, consumer).run(queue_url, dry_run=True)

    (planned,) = report.planned
    assert planned.message_id == message_id
    assert planned.shard_id == stream.shard_id
    assert (planned.first_sequence_number, planned.last_sequence_number) == (
        sequence_numbers[1],
        sequence_numbers[3],
    )
    assert planned.record_count == 3
    assert consumer.calls == 0
    assert report.messages_deleted == 0
    assert queue_bodies(sqs, queue_url) == [body]
    assert f"{sequence_numbers[1]}..{sequence_numbers[3]}, 3 record(s)" in report.summary()


# --- Command line ------------------------------------------------------------------------------


def test_cli_replays_through_an_in_process_handler_and_exits_zero(
    stream: Stream, sqs: Any, queue_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sequence_numbers, _ = send_failed_batch(sqs, queue_url, stream, 3)
    write_handler_module(tmp_path, "cli_consumer_ok")
    argv = ["--queue-url", queue_url, "--stream-arn", stream.arn, "--json"]
    argv += ["--handler", "cli_consumer_ok:handler", "--path", str(tmp_path)]
    argv += ["--consumer-function", "orders-consumer"]

    status = main(argv, session=session_for(stream.aws))

    out, err = capsys.readouterr()
    assert status == 0, err
    assert sys.modules["cli_consumer_ok"].applied == sequence_numbers
    assert "[##############################] 1/~1" in err
    assert "replayed 3 record(s)" in err
    assert json.loads(out)["messages_deleted"] == 1
    assert queue_bodies(sqs, queue_url) == []


def test_cli_exits_non_zero_and_names_the_lost_sequence_numbers(
    stream: Stream, sqs: Any, queue_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sequence_numbers, body = send_failed_batch(sqs, queue_url, stream, 2)
    session = session_for(stream.aws)
    inject_stream_error(
        session, "GetShardIterator", "TrimmedDataAccessException", lambda request: True
    )
    write_handler_module(tmp_path, "cli_consumer_lost")
    argv = ["--queue-url", queue_url, "--stream-arn", stream.arn]
    argv += ["--handler", "cli_consumer_lost:handler", "--path", str(tmp_path)]
    argv += ["--consumer-function", "orders-consumer"]

    status = main(argv, session=session)

    err = capsys.readouterr().err
    assert status == 1
    assert "LOST" in err
    assert f"sequence numbers {sequence_numbers[0]}..{sequence_numbers[1]}" in err
    assert "TrimmedDataAccessException" in err
    assert sys.modules["cli_consumer_lost"].applied == []
    assert queue_bodies(sqs, queue_url) == [body]


def test_cli_dry_run_lists_and_exits_zero_without_invoking(
    stream: Stream, sqs: Any, queue_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sequence_numbers = stream.write(2)
    body = on_failure_message(stream, sequence_numbers[0], sequence_numbers[1], 2)
    message_id = sqs.send_message(QueueUrl=queue_url, MessageBody=body)["MessageId"]
    write_handler_module(tmp_path, "cli_consumer_dry")
    argv = ["--queue-url", queue_url, "--stream-arn", stream.arn, "--dry-run"]
    argv += ["--handler", "cli_consumer_dry:handler", "--path", str(tmp_path)]
    argv += ["--consumer-function", "orders-consumer"]

    status = main(argv, session=session_for(stream.aws))

    err = capsys.readouterr().err
    assert status == 0
    assert f"planned {message_id}: shard {stream.shard_id}" in err
    assert f"{sequence_numbers[0]}..{sequence_numbers[1]}, 2 record(s)" in err
    assert sys.modules["cli_consumer_dry"].applied == []
    assert queue_bodies(sqs, queue_url) == [body]


def test_cli_quarantine_flag_and_malformed_message_exit_non_zero(
    stream: Stream, sqs: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quarantine_url = sqs.create_queue(QueueName="orders-quarantine")["QueueUrl"]
    sqs.send_message(QueueUrl=quarantine_url, MessageBody="not json")
    write_handler_module(tmp_path, "cli_consumer_q")
    argv = ["--queue-url", quarantine_url, "--stream-arn", stream.arn, "--quarantine"]
    argv += ["--consumer-name", "orders"]
    argv += ["--handler", "cli_consumer_q:handler", "--path", str(tmp_path)]

    status = main(argv, session=session_for(stream.aws))

    assert status == 1
    assert "FAILED" in capsys.readouterr().err
    assert queue_bodies(sqs, quarantine_url) == ["not json"]


def test_the_module_runs_as_a_command() -> None:
    import subprocess

    lambda_src = Path(__file__).resolve().parents[2] / "lambda_src"
    result = subprocess.run(
        [sys.executable, "-m", "cdc_consumer.redrive", "--help"],
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(lambda_src), "PATH": ""},
    )
    assert result.returncode == 0, result.stderr
    assert "--dry-run" in result.stdout


# --- The Lambda entry point --------------------------------------------------------------------


@dataclass
class FakeContext:
    remaining_ms: int

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def test_redrive_function_drains_both_queues_and_emits_lost_records_as_a_metric(
    stream: Stream, sqs: Any, queue_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sequence_numbers = stream.write(3)
    inject_stream_error(
        stream.streams,
        "GetShardIterator",
        "TrimmedDataAccessException",
        lambda request: request.get("SequenceNumber") == sequence_numbers[0],
    )
    send_on_failure(sqs, queue_url, stream, sequence_numbers[0], sequence_numbers[0])
    send_on_failure(sqs, queue_url, stream, sequence_numbers[1], sequence_numbers[2], 2)
    quarantine_url = sqs.create_queue(QueueName="orders-quarantine")["QueueUrl"]
    record = to_lambda_record(stream.records()[0], stream.arn)
    sqs.send_message(QueueUrl=quarantine_url, MessageBody=quarantine_message(record))
    environ = {
        "ON_FAILURE_QUEUE_URL": queue_url,
        "QUARANTINE_QUEUE_URL": quarantine_url,
        "CDC_CONSUMER_NAME": "orders",
        "CONSUMER_FUNCTION_NAME": "orders-consumer",
        "STREAM_ARN": stream.arn,
    }
    consumer = Consumer()

    result = redrive_handler.handler(
        {}, FakeContext(600_000), redrive=make_redrive(stream, consumer), environ=environ
    )

    assert not result["ok"]
    assert result["lostRecords"] == 1
    assert consumer.applied == [sequence_numbers[1], sequence_numbers[2], sequence_numbers[0]]
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    (emf,) = [line for line in lines if "_aws" in line]
    assert emf["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "CdcConstructs"
    assert emf["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Consumer"]]
    assert (emf["Consumer"], emf["RedriveLostRecords"], emf["RedriveRecordsReplayed"]) == (
        "orders",
        1,
        3,
    )
    assert [line["source"] for line in lines if line.get("event") == "redrive"] == [
        "on-failure",
        "quarantine",
    ]


def test_redrive_function_is_configured_from_its_environment(
    stream: Stream, sqs: Any, queue_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    stream.write(2)
    stream.ddb.put_item(TableName="orders", Item={"pk": {"S": "order-0"}, "total": {"N": "5"}})
    sequence_numbers = [r["dynamodb"]["SequenceNumber"] for r in stream.records()]
    send_on_failure(sqs, queue_url, stream, sequence_numbers[0], sequence_numbers[2], 1)
    environ = {
        "CONSUMER_FUNCTION_NAME": "orders-consumer",
        "STREAM_ARN": stream.arn,
        "ON_FAILURE_QUEUE_URL": queue_url,
        "CDC_CONSUMER_NAME": "orders",
        "CONSUMER_FILTERS": json.dumps([{"eventName": ["MODIFY"]}]),
    }

    # A dry run reads the stream and the queue through the function's own clients (pointed at
    # the local endpoint by AWS_ENDPOINT_URL) and invokes nothing.
    result = redrive_handler.handler({"dryRun": True}, FakeContext(600_000), environ=environ)

    (report,) = result["reports"]
    assert result["ok"]
    (planned,) = report["planned"]
    assert (planned["first_sequence_number"], planned["record_count"]) == (sequence_numbers[0], 1)
    assert report["records_filtered"] == 2
    assert len(queue_bodies(sqs, queue_url)) == 1


def test_redrive_function_starts_nothing_near_its_deadline(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    _, body = send_failed_batch(sqs, queue_url, stream, 1)
    environ = {"ON_FAILURE_QUEUE_URL": queue_url, "CDC_CONSUMER_NAME": "orders"}
    consumer = Consumer()

    result = redrive_handler.handler(
        {"source": "on-failure"},
        FakeContext(30_000),
        redrive=make_redrive(stream, consumer),
        environ=environ,
    )

    assert result["ok"]
    assert consumer.calls == 0
    assert queue_bodies(sqs, queue_url) == [body]


def test_redrive_function_refuses_an_unknown_source() -> None:
    with pytest.raises(ValueError, match="event source is 'dlq'; expected 'on-failure'"):
        redrive_handler.handler(
            {"source": "dlq"},
            None,
            redrive=Redrive(
                invoker=CallableInvoker(Consumer()),
                stream_arn="arn",
                sqs_client=1,
                streams_client=1,
            ),
            environ={"CDC_CONSUMER_NAME": "orders"},
        )


# --- Pieces ------------------------------------------------------------------------------------


class FakeLambda:
    """Lambda's Invoke response, as botocore returns it (moto runs functions only in Docker)."""

    def __init__(self, payload: bytes, function_error: str | None = None) -> None:
        self.payload, self.function_error = payload, function_error
        self.requests: list[dict[str, Any]] = []

    def invoke(self, **request: Any) -> dict[str, Any]:
        import io

        self.requests.append(request)
        response: dict[str, Any] = {"StatusCode": 200, "Payload": io.BytesIO(self.payload)}
        if self.function_error:
            response["FunctionError"] = self.function_error
        return response


def test_lambda_invoker_invokes_synchronously_and_returns_the_response() -> None:
    client = FakeLambda(b'{"batchItemFailures": [{"itemIdentifier": "7"}]}')

    response = LambdaInvoker("orders-consumer", client).invoke({"Records": []})

    assert response == {"batchItemFailures": [{"itemIdentifier": "7"}]}
    (request,) = client.requests
    assert request["InvocationType"] == "RequestResponse"
    assert request["FunctionName"] == "orders-consumer"
    assert json.loads(request["Payload"]) == {"Records": []}


def test_lambda_invoker_raises_on_a_function_error() -> None:
    client = FakeLambda(
        b'{"errorType": "Sandbox.Timedout", "errorMessage": "timed out"}', "Unhandled"
    )

    with pytest.raises(
        InvocationError, match=r"orders-consumer failed \(Unhandled\): Sandbox\.Timedout"
    ):
        LambdaInvoker("orders-consumer", client).invoke({"Records": []})


def test_to_lambda_record_gives_ttl_deletions_lambdas_user_identity() -> None:
    import datetime

    record = {
        "eventID": "e1",
        "eventName": "REMOVE",
        "dynamodb": {
            "ApproximateCreationDateTime": datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC),
            "SequenceNumber": "100",
        },
        "userIdentity": {"Type": "Service", "PrincipalId": "dynamodb.amazonaws.com"},
    }

    converted = to_lambda_record(record, "arn:stream")

    assert converted["userIdentity"] == {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    assert converted["dynamodb"]["ApproximateCreationDateTime"] == 1704067200
    assert converted["eventSourceARN"] == "arn:stream"
    assert record["dynamodb"]["ApproximateCreationDateTime"] != 1704067200  # input untouched


def test_report_is_ok_only_when_nothing_was_lost_or_failed() -> None:
    assert RedriveReport(source="on-failure", queue_url="q").ok
