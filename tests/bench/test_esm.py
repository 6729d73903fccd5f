"""bench/esm.py: what a mapping with a tumbling window sends (no timing involved)."""

from __future__ import annotations

from typing import Any

from cdc_consumer.testing import stream_record

from bench.esm import DeliveryOptions, TumblingWindow, deliver


def _record(number: int, created: float) -> dict[str, Any]:
    return stream_record(
        "INSERT",
        {"pk": f"k{number}"},
        sequence_number=1000 + number,
        approximate_creation_time=created,
    )


def test_a_window_cuts_batches_passes_state_and_closes_with_a_final_invocation() -> None:
    # Three records in the window [900, 1800), two in [1800, 2700).
    records = [_record(n, t) for n, t in enumerate([1000.0, 1100.0, 1799.0, 1800.0, 1900.0])]
    events: list[dict[str, Any]] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        events.append(event)
        answer: dict[str, Any] = {"batchItemFailures": []}
        if len(events) != 2:  # the second answer forgets its state
            answer["state"] = {"seen": len(events)}
        return answer

    window = TumblingWindow("shardId-1", "arn:stream")
    delivery = deliver(handler, records, 2, DeliveryOptions(window=window))

    sizes = [(len(e["Records"]), e["isFinalInvokeForWindow"]) for e in events]
    assert sizes == [(2, False), (1, False), (0, True), (2, False), (0, True)]
    assert [e["window"]["start"] for e in events] == ["1970-01-01T00:15:00Z"] * 3 + [
        "1970-01-01T00:30:00Z"
    ] * 2
    assert [e["state"] for e in events] == [{}, {"seen": 1}, {"seen": 1}, {}, {"seen": 4}]
    assert all(e["shardId"] == "shardId-1" for e in events)
    assert window.answers_without_state == 1
    assert window.final_invocations == 2
    assert delivery.invocations == 5
