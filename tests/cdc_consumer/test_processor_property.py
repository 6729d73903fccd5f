"""Property (issue 11): every well-formed stream record that goes through StreamProcessor with a
projection is committed (its marker and its effect), reported failed with its own sequence
number, or quarantined with its whole payload: never counted as processed without its effect.

Records: random items holding every attribute type (S, N, B, SS, NS, BS, M, L, NULL, BOOL,
nested in M and L; binary keys too), every event name (INSERT, MODIFY, REMOVE by a user or by
TTL), every stream view type, as Lambda delivers them (binary as base64 text). The projection
declares a random set of images it reads and writes, per record, an item holding exactly the
images it read; some records are poison (PermanentError), some fail transiently.
"""

from __future__ import annotations

import copy
import json
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from boto3.dynamodb.types import TypeSerializer
from cdc_consumer import Change, MissingImageError, PermanentError
from cdc_consumer.testing import FakeContext, stream_event, stream_record
from cdc_consumer.wire import deserialize_image
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cdc_consumer.fixtures import Resources

IMAGES = {
    "KEYS_ONLY": frozenset(),
    "NEW_IMAGE": frozenset({"NewImage"}),
    "OLD_IMAGE": frozenset({"OldImage"}),
    "NEW_AND_OLD_IMAGES": frozenset({"NewImage", "OldImage"}),
}
_serializer = TypeSerializer()

text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=6)
binary = st.binary(min_size=1, max_size=6)
number = st.one_of(
    st.integers(-(10**12), 10**12).map(Decimal),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-1000, max_value=1000),
)
scalars = st.one_of(
    text,  # S
    number,  # N
    binary,  # B
    st.sets(text, min_size=1, max_size=3),  # SS
    st.sets(number, min_size=1, max_size=3),  # NS
    st.sets(binary, min_size=1, max_size=3),  # BS
    st.none(),  # NULL
    st.booleans(),  # BOOL
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),  # L
        st.dictionaries(text, inner, max_size=3),  # M
    ),
    max_leaves=6,
)
attributes = st.dictionaries(text.filter(lambda name: name != "pk"), values, max_size=4)
key_values = st.one_of(text, binary, st.integers(0, 10**9).map(Decimal))


@st.composite
def records(draw: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """A batch from one stream (one view type), in order: each record as Lambda delivers it,
    with the Python images it was made of (None where it carries none)."""
    view_type = draw(st.sampled_from(sorted(IMAGES)))
    batch = []
    for index in range(draw(st.integers(1, 8))):
        pk = draw(key_values)
        new = {"pk": pk, **draw(attributes)}
        old = {"pk": pk, **draw(attributes)}
        kind = draw(st.sampled_from(["INSERT", "MODIFY", "REMOVE", "TTL"]))
        fate = draw(st.sampled_from(["ok", "ok", "ok", "poison", "flaky"]))
        record = stream_record(
            "REMOVE" if kind == "TTL" else kind,
            {"pk": pk},
            new_image=new if kind in ("INSERT", "MODIFY") else None,
            old_image=old if kind in ("MODIFY", "REMOVE", "TTL") else None,
            sequence_number=1000 + index,
            event_id=f"{fate}-{uuid.uuid4().hex}",
            ttl_expiry=kind == "TTL",
            approximate_creation_time=1_767_225_600 + index,
        )
        stream = record["dynamodb"]
        stream["StreamViewType"] = view_type
        for image in ("NewImage", "OldImage"):
            if image not in IMAGES[view_type]:
                stream.pop(image, None)
        carried = {
            "NewImage": new if "NewImage" in stream else None,
            "OldImage": old if "OldImage" in stream else None,
        }
        batch.append((record, carried))
    return batch


def seq(record: dict[str, Any]) -> str:
    return str(record["dynamodb"]["SequenceNumber"])


def effect(change: Change, reads: frozenset[str]) -> dict[str, Any]:
    """The view item the projection writes for ``change``: the images it reads, as they are."""
    item: dict[str, Any] = {"pk": {"S": change.event_id}, "seq": {"S": change.sequence_number}}
    for name, attribute in (("NewImage", "new_image"), ("OldImage", "old_image")):
        # Only what it reads: reading an image the view type lacks fails (MissingImageError).
        image = getattr(change, attribute) if name in reads else None
        if image is not None:
            item[name] = _serializer.serialize(image)
    return item


@dataclass
class Expected:
    committed: list[dict[str, Any]]
    quarantined: list[dict[str, Any]]
    failed: dict[str, Any] | None
    raises: bool


def expected(batch: list[dict[str, Any]], reads: frozenset[str]) -> Expected:
    """Independent of the runtime: what one in-order delivery must do."""
    committed: list[dict[str, Any]] = []
    quarantined: list[dict[str, Any]] = []
    for record in batch:
        if reads - IMAGES[record["dynamodb"]["StreamViewType"]]:
            return Expected(committed, quarantined, record, raises=True)
        if record["eventID"].startswith("flaky-"):
            return Expected(committed, quarantined, record, raises=False)
        if record["eventID"].startswith("poison-"):
            quarantined.append(record)
        else:
            committed.append(record)
    return Expected(committed, quarantined, None, raises=False)


@pytest.fixture
def consumer_capsys(capsys: pytest.CaptureFixture[str]) -> pytest.CaptureFixture[str]:
    return capsys


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    batch_and_images=records(),
    reads=st.sets(st.sampled_from(["NewImage", "OldImage"])).map(frozenset),
)
def test_each_record_is_committed_failed_or_quarantined_whole(
    resources: Resources,
    consumer_capsys: pytest.CaptureFixture[str],
    batch_and_images: list[tuple[dict[str, Any], dict[str, Any]]],
    reads: frozenset[str],
) -> None:
    batch = [record for record, _ in batch_and_images]
    images = {record["eventID"]: carried for record, carried in batch_and_images}
    consumer = f"property-{uuid.uuid4().hex[:8]}"
    processor = resources.processor(consumer)

    @processor.projection(reads=sorted(reads))
    def project(change: Change) -> list[dict[str, Any]]:
        if change.event_id.startswith("poison-"):
            raise PermanentError("this record is poison")
        if change.event_id.startswith("flaky-"):
            raise TimeoutError("the network timed out")
        return [{"Put": {"TableName": resources.view_table, "Item": effect(change, reads)}}]

    delivered = copy.deepcopy(batch)
    want = expected(batch, reads)
    consumer_capsys.readouterr()
    try:
        response = processor.handle(stream_event(delivered), FakeContext())
    except MissingImageError as error:
        assert want.raises and want.failed is not None
        assert error.sequence_number == seq(want.failed)
    else:
        assert not want.raises
        failures = [] if want.failed is None else [{"itemIdentifier": seq(want.failed)}]
        assert response == {"batchItemFailures": failures}
    assert delivered == batch  # the runtime changed nothing of what it was given

    for record in batch:
        view = resources.dynamodb.get_item(
            TableName=resources.view_table,
            Key={"pk": {"S": record["eventID"]}},
            ConsistentRead=True,
        ).get("Item")
        marker = resources.dynamodb.get_item(
            TableName=resources.idempotency_table,
            Key={"id": {"S": f"{consumer}#{record['eventID']}"}},
            ConsistentRead=True,
        ).get("Item")
        if record in want.committed:
            assert marker is not None and view is not None
            # The effect holds exactly the images the projection read, equal to the Python
            # values the record was made of (binary, sets, numbers, nesting round-trip).
            read = {
                name: image
                for name, image in images[record["eventID"]].items()
                if name in reads and image is not None
            }
            assert deserialize_image(view) == {
                "pk": record["eventID"],
                "seq": seq(record),
                **read,
            }
        else:
            assert marker is None and view is None

    messages = [m for m in resources.quarantined() if m["consumer"] == consumer]
    assert [m["record"] for m in messages] == want.quarantined  # whole, byte for byte

    emf = [
        json.loads(line)
        for line in consumer_capsys.readouterr().out.splitlines()
        if line.startswith('{"_aws"')
    ]
    (metrics,) = emf
    assert metrics["RecordsProcessed"] == len(want.committed)
    assert metrics["RecordsQuarantined"] == len(want.quarantined)
    assert metrics["TtlExpiries"] == sum(1 for record in want.committed if "userIdentity" in record)
