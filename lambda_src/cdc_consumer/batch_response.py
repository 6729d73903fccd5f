"""The partial batch response (``ReportBatchItemFailures``), read as Lambda's event source mapping
reads it. One reading serves every place that plays the mapping: redrive and the local pipeline.

AWS documents: an empty or null ``batchItemFailures`` list, and an empty or null response, mean
the whole batch succeeded; an empty or null ``itemIdentifier``, or one that names no record of
the batch, fails the whole batch; otherwise the mapping checkpoints at the lowest reported
sequence number and retries everything from it. A response that is not a JSON object is not
covered by the documentation; it is read as a failure of the whole batch, the safe side.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def first_failed_index(response: Any, sequence_numbers: Sequence[str]) -> tuple[int | None, str]:
    """Index (in ``sequence_numbers``, the batch in order) of the first record to retry, and why.

    ``(None, "")`` when the batch succeeded; ``(0, reason)`` when the whole batch failed.
    """
    if response is None:
        return None, ""
    if not isinstance(response, Mapping):
        return 0, f"the response is not a JSON object: {str(response)[:100]!r}"
    failures = response.get("batchItemFailures")
    if not failures:
        return None, ""
    if not isinstance(failures, list):
        return 0, f"batchItemFailures is not a list: {str(failures)[:100]!r}"
    positions = {str(sequence): index for index, sequence in enumerate(sequence_numbers)}
    indexes = []
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, Mapping) else None
        if not identifier or str(identifier) not in positions:
            return 0, f"batchItemFailures names {identifier!r}, no record of the batch"
        indexes.append(positions[str(identifier)])
    index = min(indexes)
    return index, f"the consumer reported record {sequence_numbers[index]} failed"
