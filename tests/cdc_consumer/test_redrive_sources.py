"""A failure source is one module (issue 30): a source kind defined outside the runtime,
registered by lookup, is replayed by the one driver (order, deletion only after success, a
failure keeps what follows) on either route (a DynamoDB stream, a Kinesis data stream: issue 39),
found in the redrive function's environment; and no module outside
``cdc_consumer/redrive/sources/`` names a source kind's module."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cdc_consumer.redrive import CallableInvoker, Redrive, Source, sources, to_lambda_record
from cdc_consumer.redrive.failure_source import Batch, Entry, Hold
from cdc_consumer.redrive.parts import Run
from cdc_consumer.redrive_shapes import RedriveCause
from cdc_consumer.routes.replay import ReplayRoute, sequence_number

from cdc_local.endpoint import LocalEndpoint
from tests import structure
from tests.cdc_consumer.fixtures import create_table
from tests.cdc_consumer.redrive_world import Consumer, Stream, make_redrive

SCHEME = "memory://"


@dataclass
class MemoryFailures:
    """Failed batches kept in a list: the 'destination' of the kind below."""

    batches: list[list[dict[str, Any]]] = field(default_factory=list)


@dataclass
class MemorySource:
    store: MemoryFailures
    #: The run's route: the kind names none, it asks the route how a record is named.
    route: ReplayRoute
    _blocked: bool = False

    def entries(self, limit: int | None) -> Iterator[Entry]:
        for index, records in enumerate(list(self.store.batches)[:limit]):
            yield Entry(f"batch-{index}", records)

    def hold(self, entry: Entry) -> Hold | None:
        if self._blocked:
            return RedriveCause.EARLIER_BATCH_OF_SHARD, "an earlier batch stays"
        return None

    def read(self, entry: Entry) -> Batch | None:
        records = entry.handle
        first, last = (self.route.sequence_number(r) for r in (records[0], records[-1]))
        return Batch(list(records), "shard", str(first), str(last))

    def hold_records(self, entry: Entry, batch: Batch) -> Hold | None:
        return None

    def delete(self, entry: Entry) -> str | None:
        self.store.batches.remove(entry.handle)
        return None

    def keep(self, entry: Entry, batch: Batch | None, *, blocking: bool = True) -> None:
        self._blocked = self._blocked or blocking

    def interrupt(self, entry: Entry) -> None: ...

    def close(self) -> None: ...


@dataclass
class MemoryKind:
    store: MemoryFailures
    role: Source = Source.ON_FAILURE

    def claims(self, where: str) -> bool:
        return where.startswith(SCHEME)

    def located(self, environ: Mapping[str, str]) -> str | None:
        return environ.get("MEMORY_FAILURES") or None

    def check(self, redrive: Any, where: str) -> None: ...

    def open(self, run: Run, where: str) -> MemorySource:
        return MemorySource(self.store, run.route)


@pytest.fixture
def memory() -> Iterator[MemoryFailures]:
    store = MemoryFailures()
    kind = MemoryKind(store)
    sources.register(kind)
    yield store
    sources.unregister(kind)


@dataclass
class AnyRouteConsumer:
    """Applies each record once, by its route's sequence number; ``fail`` maps a sequence
    number to how many more times its record fails."""

    fail: dict[str, int] = field(default_factory=dict)
    applied: list[str] = field(default_factory=list)

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        for record in event["Records"]:
            number = str(sequence_number(record))
            if self.fail.get(number, 0) > 0:
                self.fail[number] -= 1
                return {"batchItemFailures": [{"itemIdentifier": number}]}
            if number not in self.applied:
                self.applied.append(number)
        return {"batchItemFailures": []}


#: A route's world: its stream's four records as Lambda delivers them, and a redrive of them.
World = tuple[list[dict[str, Any]], Callable[..., Redrive]]


def _redrive_of(aws: LocalEndpoint, arn: str, streams: Any) -> Callable[..., Redrive]:
    def make(consumer: AnyRouteConsumer, **options: Any) -> Redrive:
        return Redrive(
            invoker=CallableInvoker(consumer),
            stream_arn=arn,
            streams_client=streams,
            sqs_client=aws.client("sqs"),
            consumer_name="orders",
            receive_wait_seconds=0,
            **options,
        )

    return make


def _stream_world(aws: LocalEndpoint) -> World:
    ddb = aws.client("dynamodb")
    create_table(ddb, "orders", stream=True)
    for number in range(4):
        ddb.put_item(TableName="orders", Item={"pk": {"S": f"order-{number}"}})
    arn = ddb.describe_table(TableName="orders")["Table"]["LatestStreamArn"]
    streams = aws.client("dynamodbstreams")
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    raw = streams.get_records(ShardIterator=iterator)["Records"]
    return [to_lambda_record(r, arn, shard) for r in raw], _redrive_of(aws, arn, streams)


def _data_stream_world(aws: LocalEndpoint) -> World:
    client, name = aws.client("kinesis"), "orders-changes"
    client.create_stream(StreamName=name, ShardCount=1)
    arn = client.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"]
    shard = client.list_shards(StreamName=name)["Shards"][0]["ShardId"]
    for number in range(4):
        change = {"eventID": f"c-{number}", "eventName": "INSERT", "dynamodb": {"Keys": {}}}
        client.put_record(StreamName=name, Data=json.dumps(change).encode(), PartitionKey="one")
    iterator = client.get_shard_iterator(
        StreamName=name, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    raw = client.get_records(ShardIterator=iterator)["Records"]
    return [to_lambda_record(r, arn, shard) for r in raw], _redrive_of(aws, arn, client)


@pytest.fixture(params=[_stream_world, _data_stream_world], ids=["stream-route", "data-stream"])
def world(request: pytest.FixtureRequest, aws: LocalEndpoint) -> World:
    """Each route's world (the DynamoDB stream's, the Kinesis data stream's)."""
    made: World = request.param(aws)
    return made


def test_a_source_kind_defined_outside_the_runtime_is_replayed_by_the_one_driver(
    world: World, memory: MemoryFailures
) -> None:
    """On either route: a route that does not ask the kinds (the Kinesis route's redrive once
    took any location but ``s3://`` for a queue) fails here."""
    records, make_redrive = world
    memory.batches += [records[:2], records[2:]]
    consumer = AnyRouteConsumer(fail={str(sequence_number(records[1])): 5})

    report = make_redrive(consumer, max_attempts=2).run(f"{SCHEME}failures")

    # The first batch fails and stays; the second must not overtake it.
    assert [m.cause for m in report.failed] == [RedriveCause.REPLAY_FAILED]
    assert [m.cause for m in report.held] == [RedriveCause.EARLIER_BATCH_OF_SHARD]
    assert len(memory.batches) == 2 and not report.ok

    fixed = AnyRouteConsumer()
    again = make_redrive(fixed).run(f"{SCHEME}failures")
    assert again.ok, again.summary()
    assert fixed.applied == [sequence_number(r) for r in records]
    assert memory.batches == [] and again.messages_deleted == 2


def test_the_redrive_function_finds_it_in_its_environment(memory: MemoryFailures) -> None:
    environ = {"MEMORY_FAILURES": f"{SCHEME}failures", "ON_FAILURE_QUEUE_URL": "https://q"}
    assert sources.located(Source.ON_FAILURE, environ) == f"{SCHEME}failures"


RUNTIME = Path(__file__).resolve().parents[2] / "lambda_src" / "cdc_consumer"
SOURCE_MODULES = {f"cdc_consumer.redrive.sources.{n}" for n in ("bucket", "queue", "quarantine")}


def _imports_a_kind(tree: ast.Module) -> set[str]:
    return {
        target
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
        for target in [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        if target in SOURCE_MODULES
    }


def test_no_runtime_module_outside_the_sources_names_one() -> None:
    """The drivers are one (``driver.py``); the rest reach a source through the lookup."""
    modules = structure.modules(RUNTIME)
    named = {
        f"{module} imports {target}"
        for module, tree in modules.items()
        if not module.startswith("cdc_consumer.redrive.sources")
        for target in _imports_a_kind(tree)
    }
    assert named == set()
    assert not {"cdc_consumer.redrive.queue_drain", "cdc_consumer.redrive.bucket_replay"} & set(
        modules
    )


def test_the_check_sees_an_import_of_a_source_module() -> None:
    tree = ast.parse("from cdc_consumer.redrive.sources.bucket import BucketSource\n")
    assert _imports_a_kind(tree) == {"cdc_consumer.redrive.sources.bucket"}


KIND_MODULE = """
from cdc_consumer.redrive import sources
from tests.cdc_consumer.test_redrive_sources import MemoryFailures, MemoryKind

KIND = MemoryKind(MemoryFailures())
sources.register(KIND)
"""


def test_the_redrive_function_imports_the_modules_that_register_kinds_from_outside(
    stream: Stream, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deployed, the redrive function runs the runtime layer's handler: a kind defined outside
    the runtime is found because the handler imports ``CDC_REDRIVE_SOURCE_MODULES`` first (the
    construct sets it from the kind's redrive_source, and adds the layer holding the module)."""
    import sys

    from cdc_consumer.redrive_handler import handler

    (tmp_path / "memory_failures_kind.py").write_text(KIND_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    environ = {
        "CONSUMER_FUNCTION_NAME": "consumer",
        "CDC_CONSUMER_NAME": "stats",
        "STREAM_ARN": stream.arn,
        "MEMORY_FAILURES": f"{SCHEME}failures",
    }
    redrive = make_redrive(stream, Consumer())
    without = handler({"source": "on-failure"}, None, redrive=redrive, environ=environ)
    assert without["reports"] == [], "without the module, the runtime knows no memory:// kind"

    environ["CDC_REDRIVE_SOURCE_MODULES"] = "memory_failures_kind"
    try:
        result = handler({"source": "on-failure"}, None, redrive=redrive, environ=environ)
        (report,) = result["reports"]
        assert report["source"] == "on-failure" and result["ok"]
    finally:
        sources.unregister(sys.modules["memory_failures_kind"].KIND)
        del sys.modules["memory_failures_kind"]


def test_a_source_module_that_cannot_be_imported_is_an_operator_mistake() -> None:
    from cdc_consumer.exceptions import RedriveSetupError

    with pytest.raises(RedriveSetupError, match="'no_such_failure_kind' cannot be imported"):
        sources.import_modules(["no_such_failure_kind"])


def test_cdc_redrive_takes_a_kinds_module_and_location_by_flag(
    stream: Stream, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--source-module`` imports the module registering a kind from outside; ``--location``
    names where its failures are; a module that cannot be imported stops the run (exit 2)."""
    from cdc_consumer.redrive.cli import EXIT_SETUP, build_parser, main

    args = build_parser().parse_args(
        [
            "--location",
            f"{SCHEME}failures",
            "--source-module",
            "memory_failures_kind",
            "--source-module",
            "other",
            "--stream-arn",
            stream.arn,
            "--function-name",
            "consumer",
        ]
    )
    assert (args.location, args.source_module) == (
        f"{SCHEME}failures",
        ["memory_failures_kind", "other"],
    )
    argv = [
        "--location",
        f"{SCHEME}x",
        "--source-module",
        "no_such_failure_kind",
        "--stream-arn",
        stream.arn,
        "--function-name",
        "consumer",
    ]
    assert main(argv) == EXIT_SETUP
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "'no_such_failure_kind' cannot be imported" in line
