"""The redrive lease (cdc_consumer.redrive.lease) against moto's server: one redrive of a
consumer at a time, so none hides a quarantined change from another (docs/design.md §5).

The model-based test's failure this guards against is in tests/cdc_local/test_model.py
(``test_two_redrives_at_once_keep_an_items_order``); these tests show the lease itself: a run
that finds it held touches nothing and says who holds it, an expired lease is taken over, a run
gives back only its own, a run that lost it invokes nothing more, and the function and the
command line report a busy consumer as retry-later.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from cdc_consumer import redrive_handler
from cdc_consumer.redrive import Source, main, to_lambda_record
from cdc_consumer.redrive.cli import EXIT_BUSY
from cdc_consumer.redrive.lease import LeasedInvoker, RedriveLease
from cdc_consumer.redrive_shapes import redrive_lease_key

from tests.cdc_consumer.fixtures import create_table
from tests.cdc_consumer.redrive_world import (
    Consumer,
    Stream,
    make_redrive,
    quarantine_message,
    queue_bodies,
    send_failed_batch,
    session_for,
    write_handler_module,
)

TABLE = "orders-idempotency"


@pytest.fixture
def table(stream: Stream) -> str:
    create_table(stream.ddb, TABLE, key="id")
    return TABLE


def _lease(stream: Stream, clock: float = 1_000_000.0, owner: str = "other") -> RedriveLease:
    return RedriveLease(stream.ddb, TABLE, "orders", stream.arn, clock=lambda: clock, owner=owner)


def _quarantined(stream: Stream, sqs: Any) -> tuple[str, str]:
    stream.write(1)
    url = sqs.create_queue(QueueName="orders-quarantine")["QueueUrl"]
    body = quarantine_message(to_lambda_record(stream.records()[0], stream.arn))
    sqs.send_message(QueueUrl=url, MessageBody=body)
    return url, body


def test_a_run_that_finds_the_lease_held_touches_nothing_and_says_who_holds_it(
    stream: Stream, sqs: Any, table: str
) -> None:
    url, body = _quarantined(stream, sqs)
    holder = RedriveLease(stream.ddb, table, "orders", stream.arn, owner="cli-on-laptop")
    assert holder.take() is None
    consumer = Consumer()

    report = make_redrive(stream, consumer, lease_table=table, dynamodb_client=stream.ddb).run(
        url, Source.QUARANTINE
    )

    assert report.busy is not None and report.busy.owner == "cli-on-laptop"
    assert not report.ok
    assert "another redrive of consumer orders holds the lease until" in report.summary()
    assert (report.messages_received, consumer.calls) == (0, 0)
    assert queue_bodies(sqs, url) == [body]
    # The holder's lease is untouched by the refused run: still its own.
    item = stream.ddb.get_item(
        TableName=table, Key={"id": {"S": redrive_lease_key("orders", stream.arn)}}
    )["Item"]
    assert item["owner"]["S"] == "cli-on-laptop"


def test_a_run_takes_the_lease_replays_and_gives_it_back(
    stream: Stream, sqs: Any, table: str
) -> None:
    url, _ = _quarantined(stream, sqs)
    consumer = Consumer()

    report = make_redrive(stream, consumer, lease_table=table, dynamodb_client=stream.ddb).run(
        url, Source.QUARANTINE
    )

    assert report.ok, report.summary()
    assert report.busy is None and len(consumer.applied) == 1
    assert stream.ddb.scan(TableName=table)["Items"] == []  # released


def test_an_expired_lease_is_taken_over_and_only_the_holder_gives_it_back(
    stream: Stream, table: str
) -> None:
    crashed = _lease(stream, clock=1_000_000.0, owner="crashed")
    assert crashed.take() is None
    early = _lease(stream, clock=1_000_000.0 + crashed.duration_seconds - 1, owner="early")
    held = early.take()
    assert held is not None and held.owner == "crashed"
    assert held.expires_at == 1_000_000 + crashed.duration_seconds
    late = _lease(stream, clock=1_000_000.0 + crashed.duration_seconds + 1, owner="late")
    assert late.take() is None

    crashed.release()  # no longer its own: nothing happens
    key = {"id": {"S": redrive_lease_key("orders", stream.arn)}}
    assert stream.ddb.get_item(TableName=table, Key=key)["Item"]["owner"]["S"] == "late"
    late.release()
    assert "Item" not in stream.ddb.get_item(TableName=table, Key=key)


def test_a_run_that_lost_its_lease_invokes_nothing_more(stream: Stream, table: str) -> None:
    ours = _lease(stream, clock=1_000_000.0, owner="ours")
    assert ours.take() is None
    theirs = _lease(stream, clock=1_000_000.0 + ours.duration_seconds + 1, owner="theirs")
    assert theirs.take() is None  # ours ran past its lease
    consumer = Consumer()
    invoker = LeasedInvoker(make_redrive(stream, consumer).invoker, ours)

    with pytest.raises(Exception, match="lease lost: another redrive of consumer orders"):
        invoker.invoke({"Records": []})

    assert consumer.calls == 0


def test_the_redrive_function_reports_a_busy_consumer_as_retry_later(
    stream: Stream, sqs: Any, queue_url: str, table: str
) -> None:
    send_failed_batch(sqs, queue_url, stream, 1)
    url, _ = _quarantined(stream, sqs)
    assert _lease(stream, clock=4_000_000_000.0).take() is None
    consumer = Consumer()
    environ = {
        "ON_FAILURE_QUEUE_URL": queue_url,
        "QUARANTINE_QUEUE_URL": url,
        "CDC_CONSUMER_NAME": "orders",
    }
    redrive = make_redrive(stream, consumer, lease_table=table, dynamodb_client=stream.ddb)

    result = redrive_handler.handler({}, None, redrive=redrive, environ=environ)

    assert (result["ok"], result["retryLater"]) == (False, True)
    assert "another redrive of consumer orders holds the lease" in result["busy"]
    assert len(result["reports"]) == 1  # no further round: each would find the lease held
    assert consumer.calls == 0


def test_the_cli_exits_busy_when_the_lease_stays_held(
    stream: Stream,
    sqs: Any,
    queue_url: str,
    table: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, body = send_failed_batch(sqs, queue_url, stream, 1)
    assert _lease(stream, clock=4_000_000_000.0).take() is None
    write_handler_module(tmp_path, "cli_consumer_busy")
    argv = ["--queue-url", queue_url, "--stream-arn", stream.arn, "--idempotency-table", table]
    argv += ["--handler", "cli_consumer_busy:handler", "--path", str(tmp_path)]
    argv += ["--consumer-function", "orders-consumer", "--consumer-name", "orders"]
    argv += ["--lease-wait-seconds", "0"]

    status = main(argv, session=session_for(stream.aws))

    assert status == EXIT_BUSY
    assert "BUSY another redrive of consumer orders holds the lease" in capsys.readouterr().err
    assert sys.modules["cli_consumer_busy"].applied == []
    assert queue_bodies(sqs, queue_url) == [body]


def test_a_negative_lease_wait_is_an_operator_mistake(
    stream: Stream, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--queue-url", "q", "--stream-arn", stream.arn, "--function-name", "f"]
    assert main([*argv, "--lease-wait-seconds", "-1"], session=session_for(stream.aws)) == 2
    assert "--lease-wait-seconds is -1; expected 0 or more" in capsys.readouterr().err
