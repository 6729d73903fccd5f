"""The partial batch response, read as Lambda's event source mapping reads it (AWS: "Configuring
partial batch response with DynamoDB and Lambda", success and failure conditions)."""

from __future__ import annotations

from typing import Any

import pytest
from cdc_consumer.batch_response import first_failed_index

BATCH = ["100", "200", "300"]


@pytest.mark.parametrize(
    "response",
    [None, {}, {"batchItemFailures": []}, {"batchItemFailures": None}],
    ids=["null response", "empty response", "empty list", "null list"],
)
def test_aws_reads_these_as_complete_success(response: Any) -> None:
    assert first_failed_index(response, BATCH) == (None, "")


@pytest.mark.parametrize(
    "response",
    [
        {"batchItemFailures": [{"itemIdentifier": ""}]},
        {"batchItemFailures": [{"itemIdentifier": None}]},
        {"batchItemFailures": [{"itemIdentifer": "200"}]},  # wrong key name
        {"batchItemFailures": [{"itemIdentifier": "999"}]},  # names no record of the batch
        {"batchItemFailures": "200"},
        "ok",
        ["200"],
    ],
    ids=["empty id", "null id", "bad key", "unknown id", "not a list", "string", "array"],
)
def test_these_fail_the_whole_batch(response: Any) -> None:
    index, reason = first_failed_index(response, BATCH)
    assert index == 0
    assert reason


def test_the_lowest_reported_sequence_number_is_the_checkpoint() -> None:
    response = {"batchItemFailures": [{"itemIdentifier": "300"}, {"itemIdentifier": "200"}]}
    assert first_failed_index(response, BATCH) == (1, "the consumer reported record 200 failed")
