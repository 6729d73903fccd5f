"""A consumer whose stream lacks an image it reads fails loudly (issue 11 §3): never a record
counted as processed without its effect. Legitimate absence (INSERT's old image) stays None."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from cdc_consumer import Change, ConfigurationError, MissingImageError
from cdc_consumer.testing import FakeContext, stream_event, stream_record

from tests.cdc_consumer.fixtures import Resources, mirror_projection
from tests.reference_app.handlers.orders import order_stats_environment

IMAGES = {
    "KEYS_ONLY": (),
    "NEW_IMAGE": ("NewImage",),
    "OLD_IMAGE": ("OldImage",),
    "NEW_AND_OLD_IMAGES": ("NewImage", "OldImage"),
}


def as_view(record: dict[str, Any], view_type: str) -> dict[str, Any]:
    """``record`` as a stream of ``view_type`` delivers it (images it lacks removed)."""
    record = copy.deepcopy(record)
    stream = record["dynamodb"]
    stream["StreamViewType"] = view_type
    for image in ("NewImage", "OldImage"):
        if image not in IMAGES[view_type]:
            stream.pop(image, None)
    return record


def order_records(view_type: str) -> list[dict[str, Any]]:
    image = {"pk": "ORDER#1", "customerId": "c1", "status": "paid", "amount": 5}
    return [
        as_view(
            stream_record("INSERT", {"pk": "ORDER#1"}, new_image=image, sequence_number=1),
            view_type,
        ),
        as_view(
            stream_record(
                "MODIFY",
                {"pk": "ORDER#1"},
                new_image={**image, "amount": 7},
                old_image=image,
                sequence_number=2,
            ),
            view_type,
        ),
    ]


def emf(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]


@pytest.mark.parametrize(
    ("view_type", "reads", "missing", "failing"),
    [
        ("KEYS_ONLY", ["NewImage"], "NewImage", 0),
        ("OLD_IMAGE", ["NewImage"], "NewImage", 0),
        ("NEW_IMAGE", ["OldImage"], "OldImage", 0),
        ("NEW_IMAGE", ["NewImage", "OldImage"], "OldImage", 0),
    ],
)
def test_a_record_without_an_image_its_projection_reads_fails_the_invocation(
    resources: Resources, capsys, view_type: str, reads: list[str], missing: str, failing: int
) -> None:
    processor = resources.processor()
    processor.projection(reads=reads)(mirror_projection(resources.view_table))
    records = order_records(view_type)

    with pytest.raises(MissingImageError) as raised:
        processor.handle(stream_event(records), FakeContext())

    error = raised.value
    assert (error.view_type, error.missing) == (view_type, [missing])
    assert error.sequence_number == records[failing]["dynamodb"]["SequenceNumber"]
    assert view_type in str(error) and missing in str(error) and "project" in str(error)
    assert resources.view() == {} and resources.markers() == []  # never "processed" silently
    assert resources.quarantined() == []  # a misconfiguration, not poison
    (metrics,) = emf(capsys.readouterr().out)
    assert (metrics["RecordsProcessed"], metrics["BatchFailures"]) == (0, 1)


def test_records_before_the_failing_one_are_committed_first(resources: Resources) -> None:
    processor = resources.processor()
    processor.projection(reads=["OldImage"])(mirror_projection(resources.view_table))
    records = order_records("NEW_AND_OLD_IMAGES")
    records.append(as_view(records[1], "NEW_IMAGE"))  # a later record from a NEW_IMAGE stream
    records[2]["dynamodb"]["SequenceNumber"] = "3"

    with pytest.raises(MissingImageError, match=r"record 3: .* NEW_IMAGE"):
        processor.handle(stream_event(records), FakeContext())

    assert resources.view() == {
        "pk=ORDER#1": {"applied": 2, "image": resources.view()["pk=ORDER#1"]["image"]}
    }
    assert len(resources.markers()) == 2


def test_legitimate_absence_stays_none(resources: Resources) -> None:
    seen: list[Change] = []
    processor = resources.processor()

    @processor.projection(reads=["NewImage", "OldImage"])
    def project(change: Change) -> list[dict[str, Any]]:
        seen.append(change)
        return []

    insert, _ = order_records("NEW_AND_OLD_IMAGES")
    remove = stream_record(
        "REMOVE", {"pk": "ORDER#1"}, old_image={"pk": "ORDER#1"}, sequence_number=3
    )
    assert processor.handle(stream_event([insert, remove]), FakeContext()) == {
        "batchItemFailures": []
    }
    assert seen[0].old_image is None and seen[1].new_image is None
    assert seen[0].view_type == "NEW_AND_OLD_IMAGES"


def test_side_effects_declare_what_they_read_too(resources: Resources) -> None:
    processor = resources.processor()
    processor.side_effect(reads="OldImage")(lambda change: None)
    with pytest.raises(MissingImageError, match="side effect '<lambda>'"):
        processor.handle(stream_event(order_records("NEW_IMAGE")[1:]), FakeContext())


def test_an_unknown_image_name_is_refused() -> None:
    from cdc_consumer import StreamProcessor

    with pytest.raises(ConfigurationError, match="reads= takes 'NewImage' and/or 'OldImage'"):
        StreamProcessor("x").projection(reads=["NEW_IMAGE"])


def test_the_bundled_order_stats_on_a_keys_only_stream_fails_loudly(resources: Resources) -> None:
    """The issue's case: KEYS_ONLY with the order-stats handler counted the INSERT as processed,
    wrote nothing and logged nothing."""
    with (
        order_stats_environment(resources) as order_stats,
        pytest.raises(MissingImageError, match="KEYS_ONLY"),
    ):
        order_stats.handler(stream_event(order_records("KEYS_ONLY")), FakeContext())
    assert resources.view() == {}


@pytest.mark.parametrize(
    ("view_type", "image", "record"),
    [
        ("KEYS_ONLY", "NewImage", 0),
        ("OLD_IMAGE", "NewImage", 0),
        ("NEW_IMAGE", "OldImage", 1),
        ("KEYS_ONLY", "OldImage", 1),
    ],
)
def test_reading_an_image_the_view_type_lacks_fails_even_undeclared(
    resources: Resources, capsys, view_type: str, image: str, record: int
) -> None:
    """Issue 24 §3: without ``reads=`` the projection's None image counted every record as
    processed with no effect; now reading it fails as if it had been declared."""
    processor = resources.processor()
    read = "new_image" if image == "NewImage" else "old_image"

    @processor.projection  # nothing declared
    def mirror(change: Change) -> list[dict[str, Any]]:
        getattr(change, read)
        return mirror_projection(resources.view_table)(change)

    records = order_records(view_type)[record:]
    with pytest.raises(MissingImageError) as raised:
        processor.handle(stream_event(records), FakeContext())

    error = raised.value
    assert (error.view_type, error.missing) == (view_type, [image])
    assert error.reader == "projection 'mirror'"
    assert error.sequence_number == records[0]["dynamodb"]["SequenceNumber"]
    assert resources.view() == {} and resources.markers() == [] and resources.quarantined() == []
    (metrics,) = emf(capsys.readouterr().out)
    assert (metrics["RecordsProcessed"], metrics["BatchFailures"]) == (0, 1)


def test_an_undeclared_side_effect_reading_a_missing_image_fails_naming_it(
    resources: Resources,
) -> None:
    processor = resources.processor()
    processor.side_effect(name="notify")(lambda change: change.old_image)
    with pytest.raises(MissingImageError, match="side effect 'notify' reads it"):
        processor.handle(stream_event(order_records("NEW_IMAGE")[1:]), FakeContext())


def test_an_image_the_change_has_not_is_none_on_a_stream_that_carries_it() -> None:
    insert, modify = order_records("NEW_IMAGE")
    remove = as_view(
        stream_record("REMOVE", {"pk": "ORDER#1"}, old_image={"pk": "ORDER#1"}, sequence_number=3),
        "OLD_IMAGE",
    )
    assert Change.from_record(insert).new_image is not None
    with pytest.raises(MissingImageError, match="OLD_IMAGE, which carries no NewImage"):
        Change.from_record(remove).new_image  # noqa: B018
    assert Change.from_record(remove).old_image == {"pk": "ORDER#1"}
    both = as_view(insert, "NEW_AND_OLD_IMAGES")
    assert Change.from_record(both).old_image is None  # an INSERT has none: legitimately None
    keys_only = Change.from_record(as_view(modify, "KEYS_ONLY"))
    assert keys_only.decode().keys == {"pk": "ORDER#1"}  # decoding what is there never raises
    unstated = copy.deepcopy(as_view(modify, "KEYS_ONLY"))
    del unstated["dynamodb"]["StreamViewType"]
    assert Change.from_record(unstated).new_image is None  # no view type stated: not judged
