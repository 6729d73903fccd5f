"""Running handlers in-process: isolation, environment, warm state, errors (no synth needed)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cdc_local.assembly import FunctionSpec
from cdc_local.exceptions import FunctionLoadError
from cdc_local.functions import LocalFunction

HANDLER = """
import os
CALLS = 0
def handler(event, context):
    global CALLS
    CALLS += 1
    if event.get("fail"):
        print("about to fail")
        raise RuntimeError("asked to fail")
    env = os.environ.get("ONLY_HERE")
    return {"who": WHO, "calls": CALLS, "env": env, "name": context.function_name}
"""


def function(tmp_path: Path, name: str, who: str, handler: str = "index.handler") -> LocalFunction:
    code = tmp_path / name
    code.mkdir()
    (code / "index.py").write_text(f"WHO = {who!r}\n" + HANDLER)
    spec = FunctionSpec(
        logical_id=name,
        handler=handler,
        runtime="python3.12",
        asset_dir=code,
        timeout_seconds=3,
        memory_mb=128,
        environment={},
        layers=(),
    )
    return LocalFunction(
        spec=spec,
        name=name,
        arn=f"arn:aws:lambda:us-east-1:123456789012:function:{name}",
        environment={"ONLY_HERE": who},
        capture_output=True,
    )


def test_each_function_runs_its_own_module_and_keeps_it_warm(tmp_path: Path) -> None:
    """Lambda keeps a function's module between invocations (a warm container); two functions
    whose handlers are both `index.handler` never share it."""
    first, second = function(tmp_path, "first", "one"), function(tmp_path, "second", "two")
    assert first.invoke({}).response == {"who": "one", "calls": 1, "env": "one", "name": "first"}
    assert second.invoke({}).response == {"who": "two", "calls": 1, "env": "two", "name": "second"}
    assert first.invoke({}).response["calls"] == 2
    assert "index" not in sys.modules
    assert "ONLY_HERE" not in os.environ


def test_a_handler_exception_is_a_failed_invocation_with_its_output(tmp_path: Path) -> None:
    fn = function(tmp_path, "failing", "x")
    result = fn.invoke({"fail": True})
    assert result.failed and result.error_type == "RuntimeError"
    assert result.error_message == "asked to fail"
    assert "about to fail" in result.output and "Traceback" in result.output
    assert fn.errors == 1


def test_a_handler_that_cannot_be_imported_is_an_error_naming_it(tmp_path: Path) -> None:
    fn = function(tmp_path, "missing", "x", handler="nowhere.handler")
    with pytest.raises(FunctionLoadError, match=r"cannot import handler module 'nowhere'"):
        fn.invoke({})
    fn = function(tmp_path, "noattr", "x", handler="index.absent")
    with pytest.raises(FunctionLoadError, match=r"has no callable 'absent'"):
        fn.invoke({})


def test_without_capture_a_handlers_output_goes_to_stderr_not_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Serve mode (cdc-local) keeps stdout for its own facts: what a handler prints is its log,
    on stderr, as CloudWatch Logs keeps it apart in AWS."""
    serving = function(tmp_path, "serving", "one")
    serving.capture_output = False
    assert serving.invoke({"fail": True}).failed
    out, err = capsys.readouterr()
    assert "about to fail" in err
    assert "about to fail" not in out
