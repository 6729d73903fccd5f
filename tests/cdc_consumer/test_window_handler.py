"""The window handler (cdc_consumer.window_handler): a function whose mapping has a tumbling
window answers every windowed event with ``state``, whatever its own handler returns, so Lambda
never counts an invocation of a hand-written handler as failed for the lack of it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from cdc_consumer import window_handler
from cdc_consumer.environment_variables import USER_HANDLER_ENV
from cdc_consumer.exceptions import ConfigurationError
from cdc_consumer.testing import DEFAULT_SHARD_ID, FakeContext, stream_event

OWN = """
def handler(event, context):
    return ANSWER
"""


@pytest.fixture
def own_handler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    def make(answer: str) -> None:
        name = f"own_{abs(hash(answer))}"
        (tmp_path / f"{name}.py").write_text(OWN.replace("ANSWER", answer))
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setenv(USER_HANDLER_ENV, f"{name}.handler")
        sys.modules.pop(name, None)

    return make


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("{}", {"state": {}}),
        ("None", {"batchItemFailures": [], "state": {}}),
        (
            '{"batchItemFailures": [{"itemIdentifier": "7"}]}',
            {"batchItemFailures": [{"itemIdentifier": "7"}], "state": {}},
        ),
        (
            '{"batchItemFailures": [], "state": {"n": 1}}',
            {"batchItemFailures": [], "state": {"n": 1}},
        ),
    ],
)
def test_a_windowed_answer_always_carries_state(
    own_handler: Any, answer: str, expected: Any
) -> None:
    own_handler(answer)
    event = stream_event([], shard_id=DEFAULT_SHARD_ID)
    assert window_handler.handler(event, FakeContext()) == expected


def test_an_event_without_a_window_gets_the_handlers_answer_as_it_is(own_handler: Any) -> None:
    own_handler("None")
    assert window_handler.handler(stream_event([]), FakeContext()) is None


def test_a_handler_name_that_names_nothing_is_refused_with_the_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(USER_HANDLER_ENV, "handler")
    with pytest.raises(ConfigurationError, match=r"module\.function"):
        window_handler.handler(stream_event([], shard_id=DEFAULT_SHARD_ID), FakeContext())
    monkeypatch.setenv(USER_HANDLER_ENV, "json.no_such_function")
    with pytest.raises(ConfigurationError, match="no callable 'no_such_function'"):
        window_handler.handler(stream_event([], shard_id=DEFAULT_SHARD_ID), FakeContext())
