"""Which mappings' folders of an on-failure bucket are the consumer's
(cdc_consumer.redrive.mapping_prefixes): every mapping of its function on its stream, the
current one's always, another function's skipped unread; and a bucket run at the layout's root
replays a replaced mapping's batches with the current one's, in stream order: the redrive's,
and the command line's by default (``--mapping-uuid`` narrows it to one mapping, and says
which of the consumer's other mappings hold batches it left)."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from cdc_consumer.redrive import main
from cdc_consumer.redrive.bucket_plan import ObjectReader
from cdc_consumer.redrive.mapping_prefixes import layout_root, mapping_prefixes

from tests.cdc_consumer.redrive_world import (
    Consumer,
    Stream,
    make_redrive,
    session_for,
    write_handler_module,
)
from tests.cdc_consumer.test_redrive_s3 import (
    BUCKET,
    FUNCTION_ARN,
    MAPPING,
    keys,
    lambda_records,
    put_batch,
    put_raw,
)

OLD = "0a1b2c3d-0000-4000-8000-000000000001"
OTHER_FUNCTION = FUNCTION_ARN.replace("orders-", "billing-")


@pytest.fixture
def s3(stream: Stream) -> Any:
    client = stream.aws.client("s3")
    client.create_bucket(Bucket=BUCKET)
    return client


def reader(stream: Stream, s3: Any, *, function: str | None = FUNCTION_ARN) -> ObjectReader:
    return ObjectReader(s3, BUCKET, stream.arn, function, MAPPING)


def test_the_folders_of_the_functions_mappings_are_its_another_functions_are_skipped(
    stream: Stream, s3: Any
) -> None:
    stream.write(3)
    records = lambda_records(stream)
    put_batch(stream, records[:1], mapping=OLD)
    other = put_batch(stream, records[1:2], mapping=str(uuid.uuid4()), function_arn=OTHER_FUNCTION)
    put_raw(s3, "aws/lambda/not-a-mapping/x", "{}")
    notes: list[str] = []

    wide, prefixes = mapping_prefixes(reader(stream, s3), "aws/lambda/", notes)

    # The current mapping's folder is one though it holds nothing yet.
    assert sorted(prefixes) == sorted([f"aws/lambda/{OLD}/", f"aws/lambda/{MAPPING}/"])
    assert wide.mapping_uuid is None and wide.function_name == FUNCTION_ARN
    (note,) = notes
    assert "2 folder(s) under aws/lambda/ are not this consumer's" in note
    assert other.rsplit("/", 6)[0] + "/" in note and "aws/lambda/not-a-mapping/" in note


def test_a_folder_whose_first_object_cannot_be_read_is_kept_and_said(
    stream: Stream, s3: Any
) -> None:
    put_raw(s3, f"aws/lambda/{OLD}/{stream.shard_id}/2024/01/01/cut", '{"DDBStream')
    notes: list[str] = []

    _, prefixes = mapping_prefixes(reader(stream, s3), "aws/lambda/", notes)

    assert f"aws/lambda/{OLD}/" in prefixes
    assert any("its first object cannot be read" in note for note in notes)


def test_a_prefix_naming_one_mapping_or_an_unknown_function_narrows_to_one_folder(
    stream: Stream, s3: Any
) -> None:
    stream.write(1)
    put_batch(stream, lambda_records(stream), mapping=OLD)
    one = f"aws/lambda/{OLD}/"
    assert mapping_prefixes(reader(stream, s3), one, [])[1] == [one]
    unknown = reader(stream, s3, function=None)
    assert mapping_prefixes(unknown, "aws/lambda/", []) == (unknown, [f"aws/lambda/{MAPPING}/"])


def test_the_folders_looked_at_are_bounded_and_the_rest_said(stream: Stream, s3: Any) -> None:
    stream.write(1)
    for _ in range(3):
        put_batch(stream, lambda_records(stream), mapping=str(uuid.uuid4()))
    notes: list[str] = []

    _, prefixes = mapping_prefixes(reader(stream, s3), "aws/lambda/", notes, max_folders=2)

    assert len(prefixes) == 3  # two looked at, and the current mapping's
    assert any("more than 2 folder(s) under aws/lambda/" in note for note in notes)


def test_the_layout_root_of_a_prefix() -> None:
    assert layout_root("aws/lambda/") == "aws/lambda/"
    assert layout_root(f"aws/lambda/{MAPPING}/") == "aws/lambda/"
    assert layout_root(f"team/aws/lambda/{MAPPING}/") == "team/aws/lambda/"
    assert layout_root("failed/") is None and layout_root("xaws/lambda/") is None


def test_a_run_at_the_root_replays_a_replaced_mappings_batches_with_the_current_ones(
    stream: Stream, s3: Any
) -> None:
    stream.write(4)
    records = lambda_records(stream)
    put_batch(stream, records[2:], at=1_700_000_100.0)  # the current mapping's, later records
    put_batch(stream, records[:2], mapping=OLD, at=1_700_000_200.0)  # the replaced one's
    foreign = put_batch(stream, records[:1], mapping=str(uuid.uuid4()), function_arn=OTHER_FUNCTION)
    consumer = Consumer()
    redrive = make_redrive(
        stream, consumer, s3_client=s3, function_name=FUNCTION_ARN, mapping_uuid=MAPPING
    )

    report = redrive.run_bucket(BUCKET)

    assert report.ok, report.summary()
    assert consumer.applied == [r["dynamodb"]["SequenceNumber"] for r in records]
    assert keys(s3) == [foreign] and report.messages_deleted == 2
    assert not report.kept  # the other function's folder was not read beyond its first object
    assert json.loads(s3.get_object(Bucket=BUCKET, Key=foreign)["Body"].read())


def replaced_mapping_bucket(stream: Stream) -> tuple[list[dict[str, Any]], str, str]:
    """The current mapping's failed batch of later records, the replaced one's of earlier
    records written after it, and another function's; return the records and the keys of the
    replaced mapping's batch and the other function's."""
    stream.write(4)
    records = lambda_records(stream)
    put_batch(stream, records[2:], at=1_700_000_100.0)
    old = put_batch(stream, records[:2], mapping=OLD, at=1_700_000_200.0)
    foreign = put_batch(stream, records[:1], mapping=str(uuid.uuid4()), function_arn=OTHER_FUNCTION)
    return records, old, foreign


def cli_argv(stream: Stream, tmp_path: Path, module: str) -> list[str]:
    write_handler_module(tmp_path, module)
    argv = ["--bucket", BUCKET, "--stream-arn", stream.arn, "--consumer-function", FUNCTION_ARN]
    return [*argv, "--handler", f"{module}:handler", "--path", str(tmp_path), "--json"]


def test_the_command_lines_default_run_replays_every_mapping_of_the_function_in_order(
    stream: Stream,
    s3: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The mapping from the consumer's environment, the default prefix: the replaced mapping's
    earlier changes first, then the current one's, as the redrive function replays them (it
    replayed the current mapping's alone, ahead of the earlier changes it left in the bucket)."""
    records, _, foreign = replaced_mapping_bucket(stream)
    monkeypatch.setenv("EVENT_SOURCE_MAPPING_UUID", MAPPING)
    argv = cli_argv(stream, tmp_path, "cli_consumer_every_mapping")

    status = main(argv, session=session_for(stream.aws))

    out, err = capsys.readouterr()
    assert status == 0, err
    applied = sys.modules["cli_consumer_every_mapping"].applied
    assert applied == [r["dynamodb"]["SequenceNumber"] for r in records]
    report = json.loads(out)
    assert report["queue_url"] == f"s3://{BUCKET}/aws/lambda/"
    assert report["messages_deleted"] == 2 and keys(s3) == [foreign]


def test_the_command_line_narrowed_to_one_mapping_names_the_consumers_other_mappings(
    stream: Stream, s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--mapping-uuid replays that mapping's batches only, and says which of the consumer's
    other mappings hold batches whose changes may be earlier (not another function's)."""
    records, old, foreign = replaced_mapping_bucket(stream)
    argv = [*cli_argv(stream, tmp_path, "cli_consumer_one_mapping"), "--mapping-uuid", MAPPING]

    status = main(argv, session=session_for(stream.aws))

    out, err = capsys.readouterr()
    assert status == 0, err
    applied = sys.modules["cli_consumer_one_mapping"].applied
    assert applied == [r["dynamodb"]["SequenceNumber"] for r in records[2:]]
    assert sorted(keys(s3)) == sorted([old, foreign])
    (note,) = [n for n in json.loads(out)["notes"] if "other mapping folder(s)" in n]
    assert f"this run replays aws/lambda/{MAPPING}/ only" in note
    assert f"aws/lambda/{OLD}/" in note and foreign.split("/")[2] not in note
    assert "run at aws/lambda/ (without --mapping-uuid)" in note
