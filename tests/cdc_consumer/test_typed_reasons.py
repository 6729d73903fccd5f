"""Decisions are taken on typed reasons from the contract, never by matching an error's or a
report's text (issue 30): rewording a sentence changes no behaviour."""

from __future__ import annotations

from typing import Any

import pytest
from cdc_consumer import redrive_handler
from cdc_consumer.backfill.shapes import BackfillRefusal
from cdc_consumer.exceptions import BackfillRefusedError, InvocationError, SnapshotRefusedError
from cdc_consumer.redrive import CallableInvoker, Source
from cdc_consumer.redrive.report import FailedMessage, RedriveReport
from cdc_consumer.redrive_shapes import RedriveCause


def report(source: Source, **counts: Any) -> RedriveReport:
    found = RedriveReport(source=source.value, queue_url="q")
    for name, value in counts.items():
        setattr(found, name, value)
    return found


def test_the_second_on_failure_round_is_decided_by_the_held_objects_cause() -> None:
    """Whatever the sentence says, an object held for the quarantine's earlier change earns a
    second round once the quarantine replayed something; any other hold does not."""
    reworded = FailedMessage(
        "k", "wait for the poison queue", RedriveCause.EARLIER_CHANGE_IN_QUARANTINE
    )
    other = FailedMessage(
        "k", "the quarantine queue holds ...", RedriveCause.EARLIER_BATCH_OF_SHARD
    )
    quarantine = report(Source.QUARANTINE, messages_deleted=1)

    assert redrive_handler._worth_another_round(
        {
            Source.ON_FAILURE: report(Source.ON_FAILURE, held=[reworded]),
            Source.QUARANTINE: quarantine,
        }
    )
    assert not redrive_handler._worth_another_round(
        {Source.ON_FAILURE: report(Source.ON_FAILURE, held=[other]), Source.QUARANTINE: quarantine}
    )


def test_an_invocation_error_carries_the_functions_error_type() -> None:
    def refuses(event: Any, context: Any) -> Any:
        raise SnapshotRefusedError("it cannot take snapshot rows")

    with pytest.raises(InvocationError) as raised:
        CallableInvoker(refuses).invoke({"Records": []})

    assert raised.value.error_type == "SnapshotRefusedError"


def test_a_backfill_refusal_says_its_reason_as_a_type() -> None:
    assert BackfillRefusedError("x").refusal is BackfillRefusal.OTHER
    refused = BackfillRefusedError("y", BackfillRefusal.NO_PROGRESS)
    assert refused.refusal is BackfillRefusal.NO_PROGRESS
