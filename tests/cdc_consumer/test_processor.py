"""StreamProcessor semantics against the local endpoint: order, failures, duplicates, poison,
deadline. Faults are injected with botocore hooks (see fixtures.Faults)."""

from __future__ import annotations

import copy
import json
from collections import Counter
from typing import Any

import pytest
from cdc_consumer import (
    AccessDeniedError,
    Change,
    ConfigurationError,
    DeadlineError,
    MalformedBatchError,
    PermanentError,
)
from cdc_consumer.testing import FakeContext, TableStream, redelivery, stream_event

from tests.cdc_consumer.fixtures import (
    Resources,
    create_table,
    deliver,
    error_response,
    mirror_projection,
    view_key,
)
from tests.cdc_consumer.samples import DYNAMODB_STREAMS_TUTORIAL_EVENT, LAMBDA_DOCS_EVENT


def seq(record: dict[str, Any]) -> str:
    return record["dynamodb"]["SequenceNumber"]


def failure(record: dict[str, Any]) -> dict[str, list[dict[str, str]]]:
    return {"batchItemFailures": [{"itemIdentifier": seq(record)}]}


OK: dict[str, list[dict[str, str]]] = {"batchItemFailures": []}


def expected_view(stream: TableStream, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The mirror view after one in-order pass over ``records``."""
    view: dict[str, dict[str, Any]] = {}
    for record in records:
        change = Change.from_record(record)
        entry = view.setdefault(view_key(change.keys), {"applied": 0})
        entry["applied"] += 1
        if change.new_image is None:
            entry.pop("image", None)
        else:
            entry["image"] = json.dumps(change.new_image, default=str, sort_keys=True)
    return view


def emf_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]


def log_lines(output: str, message: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in output.splitlines() if line.startswith('{"level"')]
    return [line for line in lines if line["message"] == message]


@pytest.fixture
def mirrored(resources: Resources):  # type: ignore[no-untyped-def]
    processor = resources.processor()
    processor.projection(mirror_projection(resources.view_table))
    return processor


def orders(count: int, keys: int | None = None) -> tuple[TableStream, list[dict[str, Any]]]:
    """``count`` writes spread over ``keys`` items (distinct items when None)."""
    stream = TableStream()
    records = []
    for index in range(count):
        key = f"K{index if keys is None else index % keys}"
        record = stream.put({"pk": key, "n": index})
        assert record is not None
        records.append(record)
    return stream, records


# --- AWS documentation samples -------------------------------------------------------------


def test_aws_documentation_sample_events_are_processed(resources: Resources, mirrored) -> None:
    assert mirrored.handle(LAMBDA_DOCS_EVENT, FakeContext()) == OK
    assert mirrored.handle(DYNAMODB_STREAMS_TUTORIAL_EVENT, FakeContext()) == OK

    view = resources.view()
    assert view["Id=101"] == {"applied": 3}  # INSERT, MODIFY, REMOVE: image gone
    bark = view["Timestamp=2016-11-18:12:09:36,Username=John Doe"]
    assert json.loads(bark["image"])["Message"] == "This is a bark from the Woofer social network"
    assert sorted(m["id"] for m in resources.markers()) == [
        "test-consumer#1",
        "test-consumer#2",
        "test-consumer#3",
        "test-consumer#7de3041dd709b024af6f29e4fa13d34c",
    ]


# --- stop at the first failure -------------------------------------------------------------


@pytest.mark.parametrize("fault", ["throttled on its marker", "projection raises"])
def test_ok_transient_ok_reports_the_second_and_applies_nothing_after_it(
    resources: Resources, mirrored, faults, fault: str
) -> None:
    stream, records = orders(3)
    first, second, _ = records
    if fault == "projection raises":
        failed_once: list[str] = []

        @mirrored.projection
        def flaky(change: Change) -> list[dict[str, Any]]:
            if change.event_id == second["eventID"] and not failed_once:
                failed_once.append(change.event_id)
                raise TimeoutError("simulated network timeout")
            return []
    else:
        faults(resources.dynamodb).cancel_on(Counter({second["eventID"]: 1}))

    response = mirrored.handle(stream_event(records), FakeContext())

    assert response == failure(second)
    assert resources.view() == expected_view(stream, [first])  # the third is not applied
    assert {m["id"] for m in resources.markers()} == {f"test-consumer#{first['eventID']}"}

    assert mirrored.handle(stream_event(redelivery(records, response)), FakeContext()) == OK
    assert resources.view() == expected_view(stream, records)


def test_two_modifies_first_failing_once_ends_with_the_newest_image(
    resources: Resources, mirrored, faults
) -> None:
    stream = TableStream()
    insert = stream.put({"pk": "A", "v": 1})
    assert mirrored.handle(stream_event([insert]), FakeContext()) == OK
    older = stream.put({"pk": "A", "v": 2})
    newer = stream.put({"pk": "A", "v": 3})
    faults(resources.dynamodb).cancel_on(Counter({older["eventID"]: 1}))

    responses = deliver(mirrored.handle, [older, newer])

    assert responses == [failure(older), OK]
    assert resources.view() == {"pk=A": {"applied": 3, "image": '{"pk": "A", "v": "3"}'}}


def test_the_same_batch_three_times_applies_each_effect_once_and_counts_duplicates(
    resources: Resources, mirrored, capsys
) -> None:
    stream, records = orders(12, keys=4)

    for _ in range(3):
        assert mirrored.handle(stream_event(records), FakeContext()) == OK

    assert resources.view() == expected_view(stream, records)
    metrics = emf_lines(capsys.readouterr().out)
    assert [(m["RecordsProcessed"], m["DuplicatesSkipped"]) for m in metrics] == [
        (12, 0),
        (0, 12),
        (0, 12),
    ]


def test_duplicates_inside_a_transaction_are_dropped_and_the_rest_committed(
    resources: Resources, mirrored, count_requests
) -> None:
    stream, records = orders(4)
    assert mirrored.handle(stream_event(records[:2]), FakeContext()) == OK
    requests = count_requests(resources.dynamodb)

    assert mirrored.handle(stream_event(records), FakeContext()) == OK

    # one cancelled transaction names the two duplicates; the retry commits the other two
    assert requests.by_operation == Counter({"TransactWriteItems": 2})
    assert resources.view() == expected_view(stream, records)


# --- failing transactions ------------------------------------------------------------------


def test_a_failing_transaction_leaves_neither_marker_nor_effect(
    resources: Resources, mirrored
) -> None:
    stream, records = orders(3)
    resources.dynamodb.delete_table(TableName=resources.view_table)

    response = mirrored.handle(stream_event(records), FakeContext())

    assert response == failure(records[0])  # the whole transaction failed: its first record
    assert resources.markers() == []

    create_table(resources.dynamodb, resources.view_table)
    assert deliver(mirrored.handle, records)[-1] == OK
    assert resources.view() == expected_view(stream, records)


def test_a_record_whose_own_condition_fails_is_quarantined_without_marker_or_effect(
    resources: Resources, mirrored
) -> None:
    stream, records = orders(3)
    doomed = records[1]

    @mirrored.projection
    def require_missing_item(change: Change) -> list[dict[str, Any]]:
        if change.event_id != doomed["eventID"]:
            return []
        return [
            {
                "ConditionCheck": {
                    "TableName": resources.view_table,
                    "Key": {"pk": {"S": "no-such-item"}},
                    "ConditionExpression": "attribute_exists(pk)",
                }
            }
        ]

    assert mirrored.handle(stream_event(records), FakeContext()) == OK

    assert resources.view() == expected_view(stream, [records[0], records[2]])
    assert f"test-consumer#{doomed['eventID']}" not in {m["id"] for m in resources.markers()}
    (message,) = resources.quarantined()
    assert message["record"] == doomed
    assert message["error"]["type"] == "RejectedByDynamoDBError"
    assert "ConditionalCheckFailed" in message["error"]["message"]


# --- poison --------------------------------------------------------------------------------


def test_permanent_error_and_undecodable_record_are_quarantined_whole_and_the_rest_applied(
    resources: Resources, mirrored, capsys
) -> None:
    stream, records = orders(5)
    undecodable = copy.deepcopy(records[3])
    undecodable["eventName"] = "UPSERT"
    batch = [*records[:3], undecodable, records[4]]
    rejected = records[1]

    @mirrored.projection
    def reject(change: Change) -> list[dict[str, Any]]:
        if change.event_id == rejected["eventID"]:
            raise PermanentError("order K1 has no customerId")
        return []

    assert mirrored.handle(stream_event(batch), FakeContext()) == OK

    assert resources.view() == expected_view(stream, [records[0], records[2], records[4]])
    messages = sorted(resources.quarantined(), key=lambda m: m["record"]["eventID"])
    expected = sorted(
        [
            (rejected, "PermanentError", "order K1 has no customerId"),
            (undecodable, "UndecodableRecordError", "eventName must be one of"),
        ],
        key=lambda e: e[0]["eventID"],
    )
    for message, (record, error_type, text) in zip(messages, expected, strict=True):
        assert message["record"] == record  # the full record, exactly as delivered
        assert message["error"]["type"] == error_type
        assert text in message["error"]["message"]
        assert message["version"] == "1"
        assert message["consumer"] == "test-consumer"
        assert message["sourceArn"] == record["eventSourceARN"]
        assert message["quarantinedAt"].endswith("+00:00")
    output = capsys.readouterr().out
    assert emf_lines(output)[-1]["RecordsQuarantined"] == 2
    assert len(log_lines(output, "record quarantined")) == 2


def test_a_number_dynamodb_cannot_hold_is_quarantined_not_raised(
    resources: Resources, mirrored
) -> None:
    stream, records = orders(3)
    huge = copy.deepcopy(records[1])
    huge["dynamodb"]["NewImage"]["n"] = {"N": "1e500"}
    batch = [records[0], huge, records[2]]

    assert mirrored.handle(stream_event(batch), FakeContext()) == OK

    assert resources.view() == expected_view(stream, [records[0], records[2]])
    (message,) = resources.quarantined()
    assert message["record"] == huge
    assert message["error"]["type"] == "UndecodableRecordError"


def test_invalid_actions_are_poison(resources: Resources, mirrored) -> None:
    _, records = orders(2)

    @mirrored.projection
    def broken(change: Change) -> Any:
        return {"Put": {}} if change.event_id == records[0]["eventID"] else []

    assert mirrored.handle(stream_event(records), FakeContext()) == OK
    (message,) = resources.quarantined()
    assert message["error"]["type"] == "InvalidActionError"
    assert (
        "must return a list of TransactWriteItems actions, got dict" in message["error"]["message"]
    )


def test_a_bug_in_the_projection_is_transient_not_poison(resources: Resources, mirrored) -> None:
    _, records = orders(2)

    @mirrored.projection
    def buggy(change: Change) -> list[dict[str, Any]]:
        raise KeyError("customerId")

    assert mirrored.handle(stream_event(records), FakeContext()) == failure(records[0])
    assert resources.quarantined() == []


def test_a_failed_quarantine_send_stops_the_batch_at_the_poison_record(
    resources: Resources, mirrored, faults
) -> None:
    stream, records = orders(3)

    @mirrored.projection
    def reject(change: Change) -> list[dict[str, Any]]:
        if change.event_id == records[1]["eventID"]:
            raise PermanentError("bad order")
        return []

    faults(resources.sqs).on(
        "SendMessage", lambda body: error_response("ServiceUnavailable", "try later")
    )

    assert mirrored.handle(stream_event(records), FakeContext()) == failure(records[1])
    assert resources.view() == expected_view(stream, records[:1])


def access_denied(action: str) -> Any:
    return error_response(
        "AccessDeniedException",
        f"User: arn:aws:sts::123456789012:assumed-role/consumer/fn is not authorized to perform: "
        f"{action}",
    )


def test_a_denied_quarantine_send_fails_the_invocation_not_the_record(
    resources: Resources, mirrored, faults
) -> None:
    """A role without sqs:SendMessage: the poison record cannot be quarantined. Retrying the
    record cannot grant the permission, so it is not reported as one failed record (a partial
    batch response raises no Errors metric): the records before it are committed, then handle
    raises AccessDeniedError, a function error, naming the call."""
    stream, records = orders(3)

    @mirrored.projection
    def reject(change: Change) -> list[dict[str, Any]]:
        if change.event_id == records[1]["eventID"]:
            raise PermanentError("bad order")
        return []

    faults(resources.sqs).on("SendMessage", lambda body: access_denied("sqs:SendMessage"))

    with pytest.raises(AccessDeniedError, match="sqs:SendMessage") as denied:
        mirrored.handle(stream_event(records), FakeContext())
    assert seq(records[1]) in str(denied.value)
    assert resources.view() == expected_view(stream, records[:1])


def test_a_denied_transaction_fails_the_invocation_after_the_records_before_it(
    resources: Resources, mirrored, faults
) -> None:
    """A role without the view's write actions: TransactWriteItems is refused (AccessDenied),
    which no retry fixes; handle raises AccessDeniedError instead of reporting the record."""
    _, records = orders(2)
    faults(resources.dynamodb).on(
        "TransactWriteItems", lambda body: access_denied("dynamodb:UpdateItem")
    )

    with pytest.raises(AccessDeniedError, match="dynamodb:UpdateItem"):
        mirrored.handle(stream_event(records), FakeContext())
    assert resources.markers() == []


def test_a_throttled_quarantine_send_is_still_one_failed_record(
    resources: Resources, mirrored, faults
) -> None:
    """The counterpart: a transient refusal (throttling) stops at the record and reports it,
    as before."""
    _, records = orders(2)

    @mirrored.projection
    def reject(change: Change) -> list[dict[str, Any]]:
        raise PermanentError("bad order")

    faults(resources.sqs).on(
        "SendMessage", lambda body: error_response("ThrottlingException", "slow down")
    )

    assert mirrored.handle(stream_event(records), FakeContext()) == failure(records[0])


# --- poison with compensating actions ------------------------------------------------------


def compensation(view_table: str, record: dict[str, Any]) -> list[dict[str, Any]]:
    """Counts, on the view item ``compensated``, how often ``record``'s compensation landed."""
    return [
        {
            "Update": {
                "TableName": view_table,
                "Key": {"pk": {"S": "compensated"}},
                "UpdateExpression": "ADD #n :one",
                "ExpressionAttributeNames": {"#n": record["eventID"]},
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
        }
    ]


@pytest.fixture
def compensating(resources: Resources):  # type: ignore[no-untyped-def]
    """A mirror processor whose second projection rejects K1, with a compensation."""
    processor = resources.processor()
    processor.projection(mirror_projection(resources.view_table))
    stream, records = orders(3)
    poison = records[1]

    @processor.projection
    def reject(change: Change) -> list[dict[str, Any]]:
        if change.event_id == poison["eventID"]:
            raise PermanentError(
                "order K1 is unreadable", actions=compensation(resources.view_table, poison)
            )
        return []

    return processor, stream, records


def test_a_permanent_error_with_actions_is_quarantined_and_its_actions_committed_once(
    resources: Resources, compensating, capsys
) -> None:
    processor, stream, records = compensating
    poison = records[1]

    for _ in range(2):
        assert processor.handle(stream_event(records), FakeContext()) == OK

    # Only the compensation of the quarantined record is applied (not the mirror's actions
    # for it), once, although the batch was delivered twice.
    assert resources.view() == {
        **expected_view(stream, [records[0], records[2]]),
        "compensated": {poison["eventID"]: 1},
    }
    messages = resources.quarantined()  # at least once: one per delivery
    assert [message["record"] for message in messages] == [poison, poison]
    assert messages[0]["error"] == {"type": "PermanentError", "message": "order K1 is unreadable"}
    output = capsys.readouterr().out
    assert [
        (m["RecordsProcessed"], m["DuplicatesSkipped"], m["RecordsQuarantined"])
        for m in emf_lines(output)
    ] == [(2, 0, 1), (0, 2, 1)]
    assert len(log_lines(output, "record quarantined")) == 2


def test_a_failed_quarantine_send_commits_no_compensation(
    resources: Resources, compensating, faults
) -> None:
    processor, stream, records = compensating
    poison = records[1]
    failing = faults(resources.sqs)
    failing.on("SendMessage", lambda body: error_response("ServiceUnavailable", "try later"))

    assert processor.handle(stream_event(records), FakeContext()) == failure(poison)

    assert resources.view() == expected_view(stream, records[:1])
    assert f"test-consumer#{poison['eventID']}" not in {m["id"] for m in resources.markers()}
    failing.clear()
    assert processor.handle(stream_event(records[1:]), FakeContext()) == OK
    assert resources.view()["compensated"] == {poison["eventID"]: 1}


def test_the_quarantine_message_is_sent_before_the_compensation_commits(
    resources: Resources, compensating, faults
) -> None:
    processor, stream, records = compensating
    poison = records[1]
    faults(resources.dynamodb).cancel_on(Counter({poison["eventID"]: 1}))

    assert deliver(processor.handle, records) == [failure(poison), OK]

    assert resources.view() == {
        **expected_view(stream, [records[0], records[2]]),
        "compensated": {poison["eventID"]: 1},
    }
    # The first attempt's message was sent before its transaction failed; the retry sends
    # another (at least once) and commits the compensation.
    assert [message["record"] for message in resources.quarantined()] == [poison, poison]


def test_invalid_compensating_actions_are_quarantined_without_effect(
    resources: Resources, mirrored
) -> None:
    stream, records = orders(2)

    @mirrored.projection
    def reject(change: Change) -> list[dict[str, Any]]:
        if change.event_id == records[0]["eventID"]:
            raise PermanentError("order K0 is unreadable", actions=[{"Put": {}}])
        return []

    assert mirrored.handle(stream_event(records), FakeContext()) == OK

    assert resources.view() == expected_view(stream, records[1:])
    (message,) = resources.quarantined()
    assert message["record"] == records[0]
    assert message["error"]["type"] == "InvalidActionError"
    assert (
        "order K0 is unreadable; and its compensating actions are invalid: action 0 (Put)"
        in (message["error"]["message"])
    )


# --- deadline ------------------------------------------------------------------------------


def test_below_the_safety_margin_it_stops_and_reports_the_next_record(
    resources: Resources, mirrored, capsys
) -> None:
    stream, records = orders(5)
    remaining = iter([60_000, 60_000, 4_999, 4_999])
    context = FakeContext(remaining_ms=lambda: next(remaining, 4_999))

    response = mirrored.handle(stream_event(records), context)

    assert response == failure(records[2])
    assert resources.view() == expected_view(stream, records[:2])
    (line,) = log_lines(capsys.readouterr().out, "record failed")
    assert line["reason"] == "deadline"
    assert line["sequenceNumber"] == seq(records[2])


def test_without_time_for_one_record_the_invocation_fails(
    resources: Resources, mirrored, capsys
) -> None:
    """Issue 11 §4: a function error (the Errors alarm fires), not a quiet partial failure."""
    _, records = orders(2)
    with pytest.raises(DeadlineError, match=r"could take no record.* at least 2 s"):
        mirrored.handle(stream_event(records), FakeContext(remaining_ms=100))
    assert resources.view() == {}
    output = capsys.readouterr().out
    assert log_lines(output, "batch failed")[0]["error"]["type"] == "DeadlineError"
    assert emf_lines(output)[-1]["BatchFailures"] == 1


def test_the_safety_margin_follows_the_function_timeout(resources: Resources, mirrored) -> None:
    """Issue 11 §4: with Lambda's default 3 s timeout the margin is 0.6 s, not 5 s, so records
    are taken (the fixed 5 s margin reported the first record as failed on every invocation)."""
    stream, records = orders(3)
    remaining = iter([3_000, 2_900, 2_800])
    response = mirrored.handle(
        stream_event(records), FakeContext(remaining_ms=lambda: next(remaining, 500))
    )
    assert response == OK
    assert resources.view() == expected_view(stream, records)


def test_the_margin_rule() -> None:
    from cdc_consumer import defaults

    assert [defaults.safety_margin_ms(t) for t in (1_000, 3_000, 10_000, 60_000, 900_000)] == [
        500,
        600,
        2_000,
        5_000,
        5_000,
    ]
    assert not defaults.fits_one_record(1_000) and defaults.fits_one_record(2_000)
    assert defaults.MIN_FUNCTION_TIMEOUT_SECONDS == 2


# --- malformed batches and configuration ---------------------------------------------------


def test_a_record_without_a_sequence_number_fails_the_whole_batch(
    resources: Resources, mirrored, capsys
) -> None:
    _, records = orders(3)
    del records[2]["dynamodb"]["SequenceNumber"]

    with pytest.raises(MalformedBatchError, match=r"record 2 .* has no dynamodb\.SequenceNumber"):
        mirrored.handle(stream_event(records), FakeContext())

    assert resources.view() == {}  # nothing applied, so the retry is a clean replay
    output = capsys.readouterr().out
    assert log_lines(output, "batch rejected")
    assert emf_lines(output)[-1]["BatchFailures"] == 1


def test_an_event_without_records_is_malformed(mirrored) -> None:
    with pytest.raises(MalformedBatchError, match="Records"):
        mirrored.handle({"records": []}, FakeContext())


def test_missing_names_are_reported_together(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from cdc_consumer import StreamProcessor

    for name in ("CDC_CONSUMER_NAME", "IDEMPOTENCY_TABLE_NAME", "QUARANTINE_QUEUE_URL"):
        monkeypatch.delenv(name, raising=False)
    processor = StreamProcessor()
    processor.projection(lambda change: [])
    with pytest.raises(ConfigurationError) as raised:
        processor.handle(stream_event([]), FakeContext())
    for variable in ("CDC_CONSUMER_NAME", "IDEMPOTENCY_TABLE_NAME", "QUARANTINE_QUEUE_URL"):
        assert variable in str(raised.value)


def test_names_come_from_the_environment(resources: Resources, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from cdc_consumer import StreamProcessor

    monkeypatch.setenv("CDC_CONSUMER_NAME", "from-env")
    monkeypatch.setenv("IDEMPOTENCY_TABLE_NAME", resources.idempotency_table)
    monkeypatch.setenv("QUARANTINE_QUEUE_URL", resources.queue_url)
    processor = StreamProcessor()  # plain boto3 clients, pointed at moto by AWS_ENDPOINT_URL
    processor.projection(mirror_projection(resources.view_table))
    _, records = orders(1)

    assert processor.handle(stream_event(records), FakeContext()) == OK
    assert [m["id"] for m in resources.markers()] == [f"from-env#{records[0]['eventID']}"]
