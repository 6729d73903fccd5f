"""Invocations on several threads (cdc_local.function_room): one function's run at once, each
with its own output; another function's wait for the room; a cold start runs alone; a nested
invocation of another function beside other threads' is refused."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cdc_local.assembly import FunctionSpec
from cdc_local.functions import InvocationResult, LocalFunction

HANDLER = """
import time
def handler(event, context):
    event["log"].append(("in", event["who"]))
    print("printed by", event["who"])
    if "barrier" in event:
        event["barrier"].wait()
    if "nested" in event:
        event["nested"]()
    time.sleep(event.get("sleep", 0))
    event["log"].append(("out", event["who"]))
    return event["who"]
"""


def function(tmp_path: Path, name: str) -> LocalFunction:
    code = tmp_path / name
    code.mkdir()
    (code / "index.py").write_text(HANDLER)
    spec = FunctionSpec(
        logical_id=name,
        handler="index.handler",
        runtime="python3.12",
        asset_dir=code,
        timeout_seconds=30,
        memory_mb=128,
        environment={},
        layers=(),
    )
    arn = f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
    return LocalFunction(spec=spec, name=name, arn=arn, environment={}, capture_output=True)


def at_once(calls: list[Callable[[], InvocationResult]]) -> list[InvocationResult]:
    """``calls`` on a thread each, started together; their results in order."""
    results: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        results[index] = calls[index]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


def test_one_functions_invocations_on_two_threads_run_at_once_each_with_its_output(
    tmp_path: Path,
) -> None:
    """Both wait for each other inside the handler (they could not if invocations were
    serialized); what each printed is in its own output only."""
    fn, log = function(tmp_path, "shared"), []
    assert fn.invoke({"who": "warm-up", "log": log}).response == "warm-up"
    barrier = threading.Barrier(2, timeout=10)
    results = at_once(
        [lambda who=who: fn.invoke({"who": who, "log": log, "barrier": barrier}) for who in "ab"]
    )
    assert [r.response for r in results] == ["a", "b"], [r.error_message for r in results]
    assert "printed by a" in results[0].output and "printed by b" not in results[0].output
    assert "printed by b" in results[1].output and "printed by a" not in results[1].output
    assert fn.invocations == 3


def test_a_cold_start_runs_alone_and_another_function_waits_for_the_room(tmp_path: Path) -> None:
    cold, other, log = function(tmp_path, "cold"), function(tmp_path, "other"), []
    at_once([lambda who=who: cold.invoke({"who": who, "log": log, "sleep": 0.2}) for who in "ab"])
    assert [step for step, _ in log] == ["in", "out", "in", "out"]  # the first one alone
    log.clear()
    calls = [
        lambda: cold.invoke({"who": "cold", "log": log, "sleep": 0.3}),
        lambda: other.invoke({"who": "other", "log": log}),
    ]
    at_once(calls)
    assert [step for step, _ in log] == ["in", "out", "in", "out"]


def test_a_nested_invocation_of_another_function_beside_other_threads_is_refused(
    tmp_path: Path,
) -> None:
    """Swapping another function's modules in would take them from under the other thread."""
    outer, inner, log = function(tmp_path, "outer"), function(tmp_path, "inner"), []
    nested = {"nested": lambda: inner.invoke({"who": "inner", "log": log})}
    assert outer.invoke({"who": "alone", "log": log, **nested}).response == "alone"
    assert ("out", "inner") in log  # alone in the room, it may
    barrier = threading.Barrier(2, timeout=10)
    first, second = at_once(
        [
            lambda: outer.invoke({"who": "a", "log": log, "barrier": barrier, **nested}),
            lambda: outer.invoke({"who": "b", "log": log, "barrier": barrier, "sleep": 0.3}),
        ]
    )
    assert first.error_type == "LocalPipelineError", first
    assert "invoked inner in process while other invocations" in str(first.error_message)
    assert second.response == "b"
