"""Redrive never acts on what is not its consumer's, never calls a failed run a success, and
answers an operator mistake with one line and exit status 2 (issue 11 §6).

Each test here failed on the redrive before this change: another consumer's quarantine message
was replayed and deleted when ``--consumer-name`` was left out; a record quarantined again during
the replay gave ``ok: true`` and exit 0; a wrong queue URL printed a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cdc_consumer.environment_variables import CONSUMER_GROUP_ENV
from cdc_consumer.redrive import (
    ForeignMessageError,
    Redrive,
    RedriveSetupError,
    Source,
    main,
    parse_on_failure_message,
    parse_quarantine_message,
    to_lambda_record,
)
from cdc_consumer.redrive_handler import _member_names

from tests.cdc_consumer.redrive_world import (
    OTHER_STREAM_ARN,
    Consumer,
    Stream,
    make_redrive,
    on_failure_message,
    quarantine_message,
    queue_bodies,
    send_failed_batch,
    session_for,
    write_handler_module,
)

LAMBDA_SRC = Path(__file__).resolve().parents[2] / "lambda_src"


@pytest.fixture
def quarantine_url(sqs: Any) -> str:
    return sqs.create_queue(QueueName="orders-quarantine")["QueueUrl"]


def lambda_record(stream: Stream, index: int = 0) -> dict[str, Any]:
    return to_lambda_record(stream.records()[index], stream.arn)


# --- Whose message is it -----------------------------------------------------------------------


def test_the_runtime_names_the_consumer_and_the_stream_in_each_quarantine_message() -> None:
    from cdc_consumer.quarantine import quarantine_message as runtime_message

    record = {"eventID": "1", "eventSourceARN": OTHER_STREAM_ARN, "dynamodb": {}}
    body = runtime_message("orders", record, ValueError("bad"))
    assert (body["consumer"], body["sourceArn"]) == ("orders", OTHER_STREAM_ARN)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"consumer": "billing"}, "is from consumer 'billing', not the configured consumer"),
        ({"consumer": None}, "names no consumer"),
        ({"sourceArn": OTHER_STREAM_ARN}, f"is for stream {OTHER_STREAM_ARN!r}"),
        ({"sourceArn": None, "record": {"eventSourceARN": None}}, "names no stream"),
        ({"record": {"eventSourceARN": OTHER_STREAM_ARN}}, f"is for stream {OTHER_STREAM_ARN!r}"),
    ],
)
def test_a_quarantine_message_not_shown_to_be_this_consumers_is_foreign(
    stream: Stream, change: dict[str, Any], reason: str
) -> None:
    stream.write(1)
    document = json.loads(quarantine_message(lambda_record(stream)))
    record_change = change.pop("record", {})
    document.update(change)
    document["record"].update(record_change)
    with pytest.raises(ForeignMessageError, match=reason):
        parse_quarantine_message(
            json.dumps(document), expected_stream_arn=stream.arn, expected_consumer="orders"
        )


def test_an_on_failure_record_of_another_functions_mapping_is_foreign(stream: Stream) -> None:
    sequence_numbers = stream.write(1)
    body = on_failure_message(stream, sequence_numbers[0], sequence_numbers[0])
    # The message's requestContext.functionArn names function "orders-consumer".
    assert parse_on_failure_message(body, stream.arn, "orders-consumer").shard_id
    arn = "arn:aws:lambda:us-east-1:123456789012:function:orders-consumer:live"
    assert parse_on_failure_message(body, stream.arn, arn).shard_id
    with pytest.raises(ForeignMessageError, match="from function 'orders-consumer'"):
        parse_on_failure_message(body, stream.arn, "billing-consumer")


def test_without_a_consumer_name_a_quarantine_redrive_does_not_start(
    stream: Stream, sqs: Any, quarantine_url: str
) -> None:
    stream.write(1)
    body = quarantine_message(lambda_record(stream), consumer="billing")
    sqs.send_message(QueueUrl=quarantine_url, MessageBody=body)
    consumer = Consumer()
    redrive = make_redrive(stream, consumer, consumer_name=None)

    with pytest.raises(RedriveSetupError, match="needs the consumer's name"):
        redrive.run(quarantine_url, Source.QUARANTINE)

    assert consumer.calls == 0
    assert queue_bodies(sqs, quarantine_url) == [body]


def test_cli_without_consumer_name_never_replays_another_consumers_message(
    stream: Stream,
    sqs: Any,
    quarantine_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Left out, --consumer-name comes from the consumer's environment; failing that the run
    does not start. Either way the other consumer's message stays and nothing is invoked."""
    stream.write(2)
    ours = quarantine_message(lambda_record(stream, 0), consumer="orders")
    theirs = quarantine_message(lambda_record(stream, 1), consumer="billing")
    for body in (ours, theirs):
        sqs.send_message(QueueUrl=quarantine_url, MessageBody=body)
    write_handler_module(tmp_path, "cli_consumer_whose")
    argv = ["--queue-url", quarantine_url, "--stream-arn", stream.arn, "--quarantine", "--json"]
    argv += ["--handler", "cli_consumer_whose:handler", "--path", str(tmp_path)]
    monkeypatch.delenv("CDC_CONSUMER_NAME", raising=False)

    assert main(argv, session=session_for(stream.aws)) == 2
    assert "needs the consumer's name" in capsys.readouterr().err
    assert sys.modules["cli_consumer_whose"].applied == []

    monkeypatch.setenv("CDC_CONSUMER_NAME", "orders")  # as in the consumer's environment
    status = main(argv, session=session_for(stream.aws))

    out, err = capsys.readouterr()
    assert status == 1
    assert sys.modules["cli_consumer_whose"].applied == [
        json.loads(ours)["record"]["dynamodb"]["SequenceNumber"]
    ]
    report = json.loads(out)
    assert report["ok"] is False
    assert report["messages_deleted"] == 1
    (kept,) = report["kept"]
    assert "is from consumer 'billing'" in kept["reason"]
    assert "KEPT" in err
    assert queue_bodies(sqs, quarantine_url) == [theirs]


def test_a_groups_redrive_replays_every_members_quarantine_messages_and_keeps_others(
    stream: Stream, sqs: Any, quarantine_url: str
) -> None:
    """Behind StreamConsumer(members=...), the members share one quarantine queue and one
    function: the redrive (CDC_CONSUMER_GROUP) replays each member's message through the
    group, and keeps a message of a consumer outside it."""
    stream.write(3)
    bodies = [
        quarantine_message(lambda_record(stream, index), consumer=name)
        for index, name in enumerate(("stats", "archive", "billing"))
    ]
    for body in bodies:
        sqs.send_message(QueueUrl=quarantine_url, MessageBody=body)
    consumer = Consumer()
    environ = {CONSUMER_GROUP_ENV: '[{"name":"stats"},{"name":"archive"}]'}
    redrive = make_redrive(
        stream,
        consumer,
        consumer_name="orders-group",
        member_names=_member_names(environ[CONSUMER_GROUP_ENV]),
    )

    report = redrive.run(quarantine_url, Source.QUARANTINE)

    replayed = [json.loads(b)["record"]["dynamodb"]["SequenceNumber"] for b in bodies[:2]]
    assert sorted(consumer.applied) == sorted(replayed)
    (kept,) = report.kept
    assert "is from consumer 'billing'" in kept.reason
    assert "['orders-group', 'stats', 'archive']" in kept.reason
    assert queue_bodies(sqs, quarantine_url) == [bodies[2]]


@pytest.mark.parametrize("declared", ["environment", "--member"])
def test_cli_redrives_a_consumer_groups_quarantine_as_the_redrive_function_does(
    stream: Stream,
    sqs: Any,
    quarantine_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    declared: str,
) -> None:
    """Run with the group function's environment (CDC_CONSUMER_GROUP) or --member, the command
    line replays every member's quarantine message through the group and exits 0; a consumer
    outside the group is still kept (issue 23 §4: it kept them all, "not the configured
    consumer", and exited 1)."""
    stream.write(3)
    bodies = [
        quarantine_message(lambda_record(stream, index), consumer=name)
        for index, name in enumerate(("stats", "archive", "billing"))
    ]
    for body in bodies[:2]:
        sqs.send_message(QueueUrl=quarantine_url, MessageBody=body)
    write_handler_module(tmp_path, f"cli_consumer_group_{declared.strip('-')}")
    argv = ["--queue-url", quarantine_url, "--stream-arn", stream.arn, "--quarantine", "--json"]
    argv += ["--handler", f"cli_consumer_group_{declared.strip('-')}:handler"]
    argv += ["--path", str(tmp_path), "--consumer-name", "orders-group"]
    if declared == "environment":
        monkeypatch.setenv(CONSUMER_GROUP_ENV, '[{"name":"stats"},{"name":"archive"}]')
    else:
        monkeypatch.delenv(CONSUMER_GROUP_ENV, raising=False)
        argv += ["--member", "stats", "--member", "archive"]

    status = main(argv, session=session_for(stream.aws))

    out, err = capsys.readouterr()
    assert status == 0, err
    replayed = [json.loads(b)["record"]["dynamodb"]["SequenceNumber"] for b in bodies[:2]]
    handler = sys.modules[f"cli_consumer_group_{declared.strip('-')}"]
    assert sorted(handler.applied) == sorted(replayed)
    assert json.loads(out)["messages_deleted"] == 2
    assert queue_bodies(sqs, quarantine_url) == []

    sqs.send_message(QueueUrl=quarantine_url, MessageBody=bodies[2])
    assert main(argv, session=session_for(stream.aws)) == 1  # billing is not in the group
    assert "is from consumer 'billing'" in capsys.readouterr().err
    assert queue_bodies(sqs, quarantine_url) == [bodies[2]]


def test_cli_an_on_failure_queue_without_its_consumer_function_is_refused(
    stream: Stream, sqs: Any, queue_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, body = send_failed_batch(sqs, queue_url, stream, 1)
    write_handler_module(tmp_path, "cli_consumer_unscoped")
    argv = ["--queue-url", queue_url, "--stream-arn", stream.arn]
    argv += ["--handler", "cli_consumer_unscoped:handler", "--path", str(tmp_path)]

    assert main(argv, session=session_for(stream.aws)) == 2

    assert "give --consumer-function NAME" in one_line_error(capsys)
    assert sys.modules["cli_consumer_unscoped"].applied == []
    assert queue_bodies(sqs, queue_url) == [body]


def test_redrive_function_keeps_another_functions_on_failure_records(
    stream: Stream, sqs: Any, queue_url: str
) -> None:
    _, body = send_failed_batch(sqs, queue_url, stream, 1)
    consumer = Consumer()

    report = make_redrive(stream, consumer, function_name="billing-consumer").run(queue_url)

    assert consumer.calls == 0
    assert not report.ok and "not the consumer 'billing-consumer''s" in report.kept[0].reason
    assert queue_bodies(sqs, queue_url) == [body]


# --- Quarantined again -------------------------------------------------------------------------


def poison_consumer(sqs: Any, quarantine_url: str) -> Any:
    """A consumer whose runtime quarantines every record again and reports success."""

    def still_poison(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for record in event["Records"]:
            sqs.send_message(QueueUrl=quarantine_url, MessageBody=quarantine_message(record))
        return {"batchItemFailures": []}

    return still_poison


def test_cli_a_record_quarantined_again_fails_the_run(
    stream: Stream,
    sqs: Any,
    quarantine_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stream.write(1)
    record = lambda_record(stream)
    sqs.send_message(QueueUrl=quarantine_url, MessageBody=quarantine_message(record))
    module = tmp_path / "cli_consumer_poison.py"
    module.write_text(
        "import json, os, boto3\n"
        "def handler(event, context):\n"
        "    sqs = boto3.client('sqs')\n"
        "    for record in event['Records']:\n"
        "        body = {'consumer': 'orders', 'sourceArn': record['eventSourceARN'],\n"
        "                'error': {'type': 'PermanentError', 'message': 'still bad'},\n"
        "                'record': record}\n"
        "        sqs.send_message(QueueUrl=os.environ['QUARANTINE_QUEUE_URL'],\n"
        "                         MessageBody=json.dumps(body))\n"
        "    return {'batchItemFailures': []}\n"
    )
    argv = ["--queue-url", quarantine_url, "--stream-arn", stream.arn, "--quarantine", "--json"]
    argv += ["--consumer-name", "orders", "--handler", "cli_consumer_poison:handler"]
    argv += ["--path", str(tmp_path)]
    environment = {**stream.aws.environment(), "QUARANTINE_QUEUE_URL": quarantine_url}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in environment.items():
            patch.setenv(name, value)
        status = main(argv, session=session_for(stream.aws))

    out, err = capsys.readouterr()
    assert status == 1, err
    report = json.loads(out)
    assert report["ok"] is False
    (again,) = report["requarantined"]
    assert again["sequence_number"] == record["dynamodb"]["SequenceNumber"]
    assert "PermanentError: still bad" in again["reason"]
    assert "re-quarantined 1 record(s)" in err and "NOT OK" in err


def test_an_on_failure_replay_that_quarantines_a_record_again_is_not_ok(
    stream: Stream, sqs: Any, queue_url: str, quarantine_url: str
) -> None:
    sequence_numbers, _ = send_failed_batch(sqs, queue_url, stream, 2)
    older = quarantine_message(lambda_record(stream, 0))  # from before the run: not counted
    sqs.send_message(QueueUrl=quarantine_url, MessageBody=older)
    redrive = make_redrive(
        stream, poison_consumer(sqs, quarantine_url), quarantine_queue_url=quarantine_url
    )

    report = redrive.run(queue_url)

    assert report.messages_deleted == 1  # the batch was delivered; its records are quarantined
    assert sorted(r.sequence_number for r in report.requarantined) == sequence_numbers
    assert not report.ok
    assert len(queue_bodies(sqs, quarantine_url)) == 3  # all made visible again


# --- Operator mistakes: one line, exit 2, nothing touched ---------------------------------------


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("cdc-redrive: error: ")
    return lines[0]


def test_cli_a_missing_queue_is_one_line_and_exit_2(
    stream: Stream, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_handler_module(tmp_path, "cli_consumer_noqueue")
    missing = f"{stream.aws.url}/123456789012/no-such-queue"
    argv = ["--queue-url", missing, "--stream-arn", stream.arn]
    argv += ["--handler", "cli_consumer_noqueue:handler", "--path", str(tmp_path)]
    argv += ["--consumer-function", "orders-consumer"]

    assert main(argv, session=session_for(stream.aws)) == 2
    line = one_line_error(capsys)
    assert f"cannot read queue {missing}" in line and "check --queue-url" in line


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"--stream-arn": "orders"}, "is not a DynamoDB stream ARN"),
        ({"--stream-arn": None}, "the following arguments are required: --stream-arn"),
        ({"--max-messages": "many"}, "argument --max-messages: invalid int value: 'many'"),
        ({"--max-messages": "0"}, "--max-messages is 0; expected 1 or more"),
        ({"--filter": '{"prefx": "x"}'}, "is not a filter pattern"),
        ({"--handler": "no_such_module_anywhere:handler"}, "cannot import no_such_module"),
        ({"--handler": "handler-without-colon"}, "is not module:function"),
    ],
)
def test_cli_unreadable_arguments_are_one_line_and_exit_2(
    stream: Stream,
    queue_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, str | None],
    expected: str,
) -> None:
    write_handler_module(tmp_path, "cli_consumer_args")
    options: dict[str, str | None] = {
        "--queue-url": queue_url,
        "--stream-arn": stream.arn,
        "--handler": "cli_consumer_args:handler",
        "--path": str(tmp_path),
        "--consumer-function": "orders-consumer",
    }
    options.update(change)
    argv = [part for name, value in options.items() if value is not None for part in (name, value)]

    assert main(argv, session=session_for(stream.aws)) == 2
    assert expected in one_line_error(capsys)


def test_the_command_without_credentials_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """In a real process, with no credentials anywhere boto3 looks."""
    write_handler_module(tmp_path, "cli_consumer_nocreds")
    stream_arn = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2024-01-01T00:00:00"
    command = [sys.executable, "-m", "cdc_consumer.redrive", "--stream-arn", stream_arn]
    command += ["--queue-url", "https://sqs.us-east-1.amazonaws.com/123456789012/q"]
    command += ["--handler", "cli_consumer_nocreds:handler", "--path", str(tmp_path)]
    command += ["--consumer-function", "orders-consumer"]
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(LAMBDA_SRC),
        "HOME": str(tmp_path),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    result = subprocess.run(
        command, capture_output=True, text=True, env=environment, timeout=60, check=False
    )

    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("cdc-redrive: error: no AWS credentials")


def test_redrive_refuses_a_stream_arn_that_is_not_one(stream: Stream, queue_url: str) -> None:
    redrive = Redrive(
        invoker=make_redrive(stream, Consumer()).invoker,
        stream_arn="table/orders",
        sqs_client=stream.aws.client("sqs"),
        streams_client=stream.streams,
    )
    with pytest.raises(RedriveSetupError, match="is not a DynamoDB stream ARN"):
        redrive.run(queue_url)
