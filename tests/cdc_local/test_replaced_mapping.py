"""A mapping replaced while the old one still runs (LocalPipeline.replace_mapping): two mappings
of one function and stream, both from TRIM_HORIZON, delivering the same records at once."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cdc_local.exceptions import LocalPipelineError
from cdc_local.runner import LocalPipeline
from tests.cdc_local import recorder
from tests.cdc_local.helpers import put, stream_sequence_numbers


def test_the_new_mapping_reads_from_the_start_beside_the_old_one_until_it_is_retired(
    pipeline_for: Callable[..., LocalPipeline],
) -> None:
    pipeline = pipeline_for("Plain")
    [old] = pipeline.mappings
    put(pipeline, "a")
    pipeline.drain()
    new = pipeline.replace_mapping(old)
    assert sorted(pipeline.mappings) == sorted([old, new.name]) and new.name == f"{old}~2"
    assert new.function is pipeline.mappings[old].function
    put(pipeline, "b")
    pipeline.drain()
    a, b = stream_sequence_numbers(pipeline)
    delivered = sorted(s for i in recorder.INVOCATIONS for s in i.sequence_numbers)
    assert delivered == sorted([a, a, b, b])  # a: old, then new from TRIM_HORIZON; b: both
    pipeline.retire_mapping(old)
    recorder.clear()
    put(pipeline, "c")
    pipeline.drain()
    assert [i.sequence_numbers for i in recorder.INVOCATIONS] == [
        stream_sequence_numbers(pipeline)[2:]
    ]


def test_a_replacement_has_its_own_uuid_in_the_on_failure_bucket_and_its_own_settings(
    pipeline_for: Callable[..., LocalPipeline],
) -> None:
    pipeline = pipeline_for("Tumbling")
    [old] = pipeline.mappings
    new = pipeline.replace_mapping(old, tumbling_window_seconds=0)
    destinations = [pipeline.mappings[old].destination, new.destination]
    assert destinations[0] is not None and destinations[1] is not None
    assert destinations[0].mapping_uuid != destinations[1].mapping_uuid
    put(pipeline, "a")
    pipeline.drain()
    windowed = sorted("window" in i.event for i in recorder.INVOCATIONS)
    assert windowed == [False, True]  # the old one's event has a window, the new one's not


def test_a_replacement_of_a_replacement_after_a_retirement_gets_a_new_name_and_uuid(
    pipeline_for: Callable[..., LocalPipeline],
) -> None:
    """Replace, retire the first, replace again: the third mapping is ``~3`` (once, it was
    named ``~2`` again, took the second's place, and retiring the second removed it)."""
    pipeline = pipeline_for("Plain")
    [first] = pipeline.mappings
    second = pipeline.replace_mapping(first)
    pipeline.retire_mapping(first)
    third = pipeline.replace_mapping(first)
    assert (second.name, third.name) == (f"{first}~2", f"{first}~3")
    assert sorted(pipeline.mappings) == [second.name, third.name]
    pipeline.retire_mapping(second.name)
    assert list(pipeline.mappings.values()) == [third]


def test_retiring_a_mapping_that_is_not_there_names_the_ones_that_are(
    pipeline_for: Callable[..., LocalPipeline],
) -> None:
    pipeline = pipeline_for("Plain")
    with pytest.raises(LocalPipelineError, match="no mapping 'Nope' in stack Plain"):
        pipeline.retire_mapping("Nope")
