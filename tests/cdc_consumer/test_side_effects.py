"""Side-effect mode: Powertools-compatible claims, no double run while in progress, re-run after
a crashed invocation's claim expires."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from cdc_consumer import Change, PermanentError, StreamProcessor
from cdc_consumer.defaults import marker_ttl_seconds
from cdc_consumer.testing import FakeContext, TableStream, stream_event

from tests.cdc_consumer.fixtures import Resources, mirror_projection

OK: dict[str, Any] = {"batchItemFailures": []}
T0 = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


class Crash(BaseException):
    """The invocation dies mid-call (not an Exception: nothing in the runtime catches it)."""


def failure(record: dict[str, Any]) -> dict[str, Any]:
    return {"batchItemFailures": [{"itemIdentifier": record["dynamodb"]["SequenceNumber"]}]}


def one_record() -> list[dict[str, Any]]:
    record = TableStream().put({"pk": "ORDER#1", "status": "paid"})
    assert record is not None
    return [record]


def failing_once(
    processor: StreamProcessor,
    error: BaseException,
    note: Callable[[Change], Any] = lambda change: change.event_id,
    **options: Any,
) -> list[Any]:
    """Register the side effect ``notify`` (``options``: as for ``processor.side_effect``): it
    notes each call, ``note(change)``, and raises ``error`` on the first. Returns the notes."""
    calls: list[Any] = []

    def notify(change: Change) -> None:
        calls.append(note(change))
        if len(calls) == 1:
            raise error

    processor.side_effect(notify, **options)
    return calls


def emf(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]


def test_a_completed_side_effect_leaves_a_powertools_shaped_record_and_is_not_repeated(
    resources: Resources, capsys
) -> None:
    clock = Clock()
    processor = resources.processor(clock=clock)
    calls: list[str] = []

    @processor.side_effect
    def notify(change: Change) -> None:
        calls.append(change.event_id)

    records = one_record()
    assert processor.handle(stream_event(records), FakeContext(remaining_ms=30_000)) == OK
    assert processor.handle(stream_event(records), FakeContext(remaining_ms=30_000)) == OK

    assert calls == [records[0]["eventID"]]
    (claim,) = resources.markers()
    assert claim == {
        "id": f"test-consumer#{records[0]['eventID']}#notify",
        "status": "COMPLETED",
        # No CDC_MARKER_TTL_SECONDS: the rule for the longest windows the runtime can assume.
        "expiration": int(T0) + marker_ttl_seconds(),
        # The side-effect timeout: a quarter of the 30 s the invocation had (at most 10 s).
        "in_progress_expiration": int(T0 * 1000) + 7_500,
        "stream": records[0]["eventSourceARN"],  # the stream it was claimed for
    }
    assert [
        (m["RecordsProcessed"], m["DuplicatesSkipped"]) for m in emf(capsys.readouterr().out)
    ] == [
        (1, 0),
        (0, 1),
    ]


def test_attribute_names_are_those_of_powertools_idempotency(resources: Resources) -> None:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
    from cdc_consumer import defaults

    layer = DynamoDBPersistenceLayer(table_name=resources.idempotency_table)
    assert (
        layer.key_attr,
        layer.expiry_attr,
        layer.in_progress_expiry_attr,
        layer.status_attr,
    ) == (
        defaults.ID_ATTRIBUTE,
        defaults.EXPIRATION_ATTRIBUTE,
        defaults.IN_PROGRESS_EXPIRATION_ATTRIBUTE,
        defaults.STATUS_ATTRIBUTE,
    )


def test_a_duplicate_delivery_while_in_progress_does_not_run_it_twice(
    resources: Resources,
) -> None:
    processor = resources.processor()
    records = one_record()
    calls: list[str] = []
    concurrent: list[dict[str, Any]] = []

    @processor.side_effect
    def notify(change: Change) -> None:
        calls.append(change.event_id)
        if len(calls) == 1:  # meanwhile, another invocation (without time to wait) receives it
            concurrent.append(
                processor.handle(stream_event(records), FakeContext(remaining_ms=5_000))
            )

    assert processor.handle(stream_event(records), FakeContext()) == OK

    assert len(calls) == 1
    assert concurrent == [failure(records[0])]  # reported, to be retried later
    assert processor.handle(stream_event(records), FakeContext()) == OK  # now a duplicate
    assert len(calls) == 1


def test_after_a_crash_mid_call_the_claim_expires_and_the_call_runs_again(
    resources: Resources,
) -> None:
    clock = Clock()
    processor = resources.processor(clock=clock, side_effect_timeout_ms=8_000)
    records = one_record()
    calls = failing_once(processor, Crash("the function timed out mid-call"), lambda _: clock.now)

    with pytest.raises(Crash):
        processor.handle(stream_event(records), FakeContext(remaining_ms=30_000))

    clock.now = T0 + 5  # the claim (T0 + 8 s) holds, and this retry has no time to wait
    assert processor.handle(stream_event(records), FakeContext(remaining_ms=4_000)) == failure(
        records[0]
    )
    assert len(calls) == 1

    clock.now = T0 + 9  # it expired
    assert processor.handle(stream_event(records), FakeContext()) == OK
    assert calls == [T0, T0 + 9]
    (claim,) = resources.markers()
    assert claim["status"] == "COMPLETED"


def test_a_retry_waits_for_a_crashed_claim_and_takes_it_over(resources: Resources, capsys) -> None:
    """Issue 11 §8: one crash between the claim and its completion does not by itself fail
    the retries: the retry that meets the claim waits for it (billed time, at most one
    side-effect timeout) and runs the call."""
    clock = Clock()
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.now += seconds

    processor = resources.processor(clock=clock, sleep=sleep)
    records = one_record()
    crash = Crash("the process died between the claim and its completion")
    calls = failing_once(processor, crash, lambda _: clock.now)

    with pytest.raises(Crash):
        processor.handle(stream_event(records), FakeContext(remaining_ms=60_000))
    (claim,) = resources.markers()
    assert claim["in_progress_expiration"] == int(T0 * 1000) + 10_000  # not the 60 s left

    clock.now = T0 + 1  # the mapping retries at once
    assert processor.handle(stream_event(records), FakeContext(remaining_ms=60_000)) == OK

    assert slept == [pytest.approx(9.1)]  # until the claim expired, plus the takeover slack
    assert calls == [T0, pytest.approx(T0 + 10.1)]
    (claim,) = resources.markers()
    assert claim["status"] == "COMPLETED"
    waits = [
        json.loads(line)
        for line in capsys.readouterr().out.splitlines()
        if '"waiting for a side effect claim to expire"' in line
    ]
    assert [w["waitMs"] for w in waits] == [9_100]


def test_a_side_effect_timeout_that_is_not_a_positive_number_is_refused(
    resources: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cdc_consumer import ConfigurationError

    with pytest.raises(ConfigurationError, match="side_effect_timeout_ms"):
        resources.processor(side_effect_timeout_ms=0)
    monkeypatch.setenv("CDC_SIDE_EFFECT_TIMEOUT_MS", "soon")
    with pytest.raises(ConfigurationError, match="CDC_SIDE_EFFECT_TIMEOUT_MS"):
        resources.processor()
    monkeypatch.setenv("CDC_SIDE_EFFECT_TIMEOUT_MS", "2500")
    assert resources.processor().side_effect_timeout_ms == 2_500


def test_a_failed_call_releases_its_claim_so_the_retry_runs_it(resources: Resources) -> None:
    processor = resources.processor()
    records = one_record()
    calls = failing_once(processor, ConnectionError("webhook unreachable"))

    assert processor.handle(stream_event(records), FakeContext()) == failure(records[0])
    assert resources.markers() == []  # released
    assert processor.handle(stream_event(records), FakeContext()) == OK
    assert len(calls) == 2


def test_a_permanent_error_in_a_side_effect_quarantines_the_record(resources: Resources) -> None:
    processor = resources.processor()
    records = one_record()

    @processor.side_effect
    def notify(change: Change) -> None:
        raise PermanentError("the webhook rejects this payload (HTTP 422)")

    assert processor.handle(stream_event(records), FakeContext()) == OK
    (message,) = resources.quarantined()
    assert message["record"] == records[0]
    assert message["error"] == {
        "type": "PermanentError",
        "message": "the webhook rejects this payload (HTTP 422)",
    }
    assert resources.markers() == []


def test_projection_and_side_effect_together_retry_only_what_is_missing(
    resources: Resources,
) -> None:
    processor = resources.processor()
    processor.projection(mirror_projection(resources.view_table))
    records = one_record()
    calls = failing_once(processor, TimeoutError("webhook timed out"), name="notify-v1")

    assert processor.handle(stream_event(records), FakeContext()) == failure(records[0])
    assert processor.handle(stream_event(records), FakeContext()) == OK

    assert len(calls) == 2
    assert resources.view()["pk=ORDER#1"]["applied"] == 1  # the projection ran once
    ids = sorted(m["id"] for m in resources.markers())
    event_id = records[0]["eventID"]
    assert ids == [f"test-consumer#{event_id}", f"test-consumer#{event_id}#notify-v1"]
