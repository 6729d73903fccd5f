"""A global table under the local pipeline: the table in us-east-1 with a replica in us-west-2 on
the same moto server, a consumer group (order-stats, ttl-archive) on the table's stream in
us-east-1 and order-stats on the replica's stream in us-west-2 (a ReplicaTable). Each region's
TTL process deletes its own replica's expired items; the deletion arrives in the other region
as a plain REMOVE, without the service identity (cdc_local.replication)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_

from cdc_constructs import ChangeCaptureTable, ConsumerGroupMember, ReplicaTable, StreamConsumer
from cdc_constructs.filters import StreamFilters
from cdc_local.endpoint import LocalEndpoint
from cdc_local.exceptions import LocalPipelineError
from cdc_local.runner import LocalPipeline, drain_together

HANDLER = Path(__file__).parent / "handlers" / "global_orders"
PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
EAST = cdk.Environment(account="123456789012", region="us-east-1")
WEST = cdk.Environment(account="123456789012", region="us-west-2")
T0 = float(int(time.time()))  # the runtime stamps its ledger entries on the wall clock


def _code() -> dict[str, Any]:
    return {"code": lambda_.Code.from_asset(str(HANDLER)), "handler": "index.handler"}


@pytest.fixture(scope="module")
def global_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """GlobalOrdersEast: the table (replica in us-west-2), its view, order-stats (excluding TTL
    deletions) and ttl-archive (TTL deletions only) behind one mapping; GlobalOrdersWest: the
    replica, its own view, order-stats (excluding TTL deletions) on the replica's stream. One
    idempotency table per region (each StreamConsumer makes its own, in its stack)."""
    outdir = tmp_path_factory.mktemp("global.out")
    app = cdk.App(outdir=str(outdir))
    east = cdk.Stack(app, "GlobalOrdersEast", env=EAST)
    orders = ChangeCaptureTable(
        east, "Orders", partition_key=PK, replicas=[dynamodb.ReplicaTableProps(region="us-west-2")]
    )
    consumers = StreamConsumer(
        east,
        "OrdersConsumers",
        table=orders,
        members=[
            ConsumerGroupMember("order-stats", [StreamFilters.exclude_ttl_deletions()]),
            ConsumerGroupMember("ttl-archive", [StreamFilters.ttl_deletions_only()]),
        ],
        monitoring=False,
        redrive=False,
        **_code(),
    )
    east_view = dynamodb.TableV2(east, "View", partition_key=PK)
    consumers.grant_view_table(east_view, env_var="VIEW_TABLE")
    west = cdk.Stack(app, "GlobalOrdersWest", env=WEST)
    replica = ReplicaTable(west, "Orders", table=orders)
    stats = StreamConsumer(
        west,
        "WestOrderStats",
        table=replica,
        consumer_name="order-stats",
        filters=[StreamFilters.exclude_ttl_deletions()],
        monitoring=False,
        redrive=False,
        **_code(),
    )
    stats.grant_view_table(dynamodb.TableV2(west, "View", partition_key=PK), env_var="VIEW_TABLE")
    app.synth()
    return outdir


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def regions(aws: LocalEndpoint, global_assembly: Path) -> Iterator[tuple[LocalPipeline, ...]]:
    """Both stacks' pipelines on one endpoint (the table's stack first: it makes the replica)."""
    clock = Clock()
    east = LocalPipeline(global_assembly, "GlobalOrdersEast", endpoint=aws, clock=clock).start()
    west = LocalPipeline(global_assembly, "GlobalOrdersWest", endpoint=aws, clock=clock)
    try:
        west.start()
        yield east, west, clock  # type: ignore[misc]
    finally:
        west.close()
        east.close()


def _put(pipeline: LocalPipeline, pk: str, expire_at: float) -> None:
    pipeline.client("dynamodb").put_item(
        TableName=_orders(pipeline), Item={"pk": {"S": pk}, "expireAt": {"N": str(int(expire_at))}}
    )


def _orders(pipeline: LocalPipeline) -> str:
    """The orders table in the pipeline's region: the table, or the replica it reads."""
    return pipeline.table_name("Orders" if pipeline.replica_tables else "OrdersTable")


def _view(pipeline: LocalPipeline) -> dict[str, int]:
    items = pipeline.client("dynamodb").scan(TableName=pipeline.table_name("View"))["Items"]
    return {item["pk"]["S"]: int(item["n"]["N"]) for item in items}


def test_a_replica_in_a_second_region_receives_the_writes_and_expiries_of_the_first(
    regions: tuple[Any, ...],
) -> None:
    east, west, clock = regions
    for pk, expires in [("live", T0 + 86_400), ("deleted-by-a-user", T0 + 86_400)]:
        _put(east, pk, expires)
    _put(east, "expires-in-east", T0 + 100)
    _put(west, "expires-in-west", T0 + 300)  # written in us-west-2: replicated to us-east-1
    _put(east, "expires-in-both", T0 + 500)
    drain_together([east, west])
    east.client("dynamodb").delete_item(
        TableName=_orders(east), Key={"pk": {"S": "deleted-by-a-user"}}
    )
    clock.now = T0 + 200
    assert east.sweep_ttl() == 1  # us-east-1's TTL process deletes expires-in-east
    drain_together([east, west])
    assert west.sweep_ttl() == 0  # replicated: us-west-2's copy is gone already
    clock.now = T0 + 400
    assert west.sweep_ttl() == 1  # us-west-2's TTL process deletes expires-in-west
    drain_together([east, west])
    assert east.sweep_ttl() == 0
    clock.now = T0 + 600
    assert (east.sweep_ttl(), west.sweep_ttl()) == (1, 1)  # both, before either replicates
    drain_together([east, west])

    orders = ["live", "deleted-by-a-user", "expires-in-east", "expires-in-west", "expires-in-both"]
    inserts = {f"order-stats#{pk}#insert": 1 for pk in orders}
    # Each region's order-stats builds the whole view from its own stream: every write, wherever
    # made; the user's delete; no expiry (its filter excludes them, replicated ones included).
    assert _view(west) == {**inserts, "order-stats#deleted-by-a-user#remove": 1}
    east_view = _view(east)
    assert {k: v for k, v in east_view.items() if k.startswith("order-stats#")} == _view(west)
    # The one archive, in us-east-1: every expired order once, whichever region's TTL deleted
    # it; never the user's delete of a live order.
    assert {k: v for k, v in east_view.items() if k.startswith("ttl-archive#")} == {
        "ttl-archive#expires-in-east#expired": 1,
        "ttl-archive#expires-in-west#expired": 1,
        "ttl-archive#expires-in-both#expired": 1,
    }


def test_the_replicas_stream_carries_another_regions_expiry_without_the_identity(
    regions: tuple[Any, ...],
) -> None:
    east, west, clock = regions
    _put(east, "o1", T0 + 10)
    drain_together([east, west])
    clock.now = T0 + 20
    assert east.sweep_ttl() == 1
    drain_together([east, west])
    replica = _orders(west)
    streams = west.client("dynamodbstreams")
    arn = west.client("dynamodb").describe_table(TableName=replica)["Table"]["LatestStreamArn"]
    assert ":us-west-2:" in arn
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    records = streams.get_records(ShardIterator=iterator)["Records"]
    assert [r["eventName"] for r in records] == ["INSERT", "REMOVE"]
    assert "userIdentity" not in records[1]
    assert records[1]["dynamodb"]["OldImage"]["expireAt"] == {"N": str(int(T0 + 10))}
    assert west.replication is not None and east.replication is not None
    assert east.replication.counters.replicated_writes == 2  # the insert and the deletion


def test_each_regions_consumer_keeps_its_records_in_its_own_regions_idempotency_table(
    regions: tuple[Any, ...],
) -> None:
    """Same consumer name (order-stats) in both regions, one idempotency table per region: the
    two never see each other's ledger entries, so neither takes the other's records for
    duplicates (docs/global-tables.md)."""
    east, west, _ = regions
    for n in range(5):
        _put(east if n % 2 else west, f"o{n}", T0 + 86_400)
    drain_together([east, west])
    east_streams, west_streams = _ledger_streams(east), _ledger_streams(west)
    assert east_streams and all(":us-east-1:" in arn for arn in east_streams), east_streams
    assert west_streams and all(":us-west-2:" in arn for arn in west_streams), west_streams
    assert sum(v for k, v in _view(west).items() if k.endswith("#insert")) == 5
    assert sum(v for k, v in _view(east).items() if k.startswith("order-stats#")) == 5


def _ledger_streams(pipeline: LocalPipeline) -> set[str]:
    """The streams the entries of the pipeline's ledger table (in its region) are for."""
    ddb = pipeline.client("dynamodb")
    (ledger,) = [n for n in pipeline.resources.table_names.values() if "Ledger" in n]  # type: ignore[union-attr]
    ids = [item["id"]["S"] for item in ddb.scan(TableName=ledger)["Items"]]
    return {i.split("#", 1)[1].split("/stream/")[0] for i in ids if "#arn:" in i}


def test_a_replicas_stack_before_its_tables_stack_is_refused_with_what_to_do(
    aws: LocalEndpoint, global_assembly: Path
) -> None:
    west = LocalPipeline(global_assembly, "GlobalOrdersWest", endpoint=aws)
    with pytest.raises(LocalPipelineError, match="Start the pipeline of the stack that makes"):
        west.start()
    west.close()


def test_cdc_local_serves_both_regions_stacks_on_one_endpoint(global_assembly: Path) -> None:
    """`cdc-local --stack GlobalOrdersEast --stack GlobalOrdersWest`: an order written in
    us-east-1 reaches the us-west-2 consumer's view through the replica."""
    import os
    import signal
    import subprocess
    import sys

    import boto3

    from cdc_local.endpoint import LOCAL_CREDENTIALS

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(root / "lambda_src")])
    command = [sys.executable, "-m", "cdc_local", "--assembly", str(global_assembly)]
    command += ["--stack", "GlobalOrdersEast", "--stack", "GlobalOrdersWest", "--ttl-every", "1"]
    process = subprocess.Popen(
        command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    lines: list[str] = []
    try:
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if sum("Ctrl-C stops" in seen for seen in lines) == 2:
                break
        url = lines[0].split("=", 1)[1]
        tables = [line.split(": ", 1)[1] for line in lines if line.startswith("table ")]

        def client(region: str) -> Any:
            return boto3.client(
                "dynamodb", endpoint_url=url, region_name=region, **LOCAL_CREDENTIALS
            )

        (orders,) = {name for name in tables if "orderstable" in name}
        (west_view,) = [name for name in tables if name.startswith("GlobalOrdersWest-View")]
        client("us-east-1").put_item(TableName=orders, Item={"pk": {"S": "o1"}})
        deadline = time.monotonic() + 60
        seen: list[Any] = []
        while not seen and time.monotonic() < deadline:
            seen = client("us-west-2").scan(TableName=west_view)["Items"]
            time.sleep(0.5)
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert [item["pk"]["S"] for item in seen] == ["order-stats#o1#insert"], stderr[-3000:]
    assert process.returncode == 0, stderr[-3000:]
    counters = [json.loads(line) for line in stdout.strip().splitlines()[-2:]]
    assert all(isinstance(c, dict) for c in counters)


def test_the_replicas_stack_counts_its_readers_against_a_global_tables_limit(
    global_assembly: Path,
) -> None:
    from cdc_local.assembly import CloudAssembly

    west = CloudAssembly(global_assembly).stack("GlobalOrdersWest")
    east = CloudAssembly(global_assembly).stack("GlobalOrdersEast")
    ((describe, table_name),) = west.replica_reads().items()
    assert table_name in {t.properties.get("TableName") for t in east.tables()}
    ((read, readers),) = west.stream_readers().items()
    assert read == describe and len(readers) == 1 and west.has_replicas(describe)
    assert (west.region, east.region) == ("us-west-2", "us-east-1")


@pytest.fixture(scope="module")
def kinesis_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Kinesis route: the table (replica in us-west-2) streams its changes to Kinesis, where
    the one TTL archive (a KinesisConsumer filtered to TTL deletions) reads them; us-west-2 reads
    the replica's stream (its TTL process is that region's pipeline)."""
    from cdc_constructs import KinesisConsumer, KinesisDestination, KinesisFilters

    outdir = tmp_path_factory.mktemp("global-kinesis.out")
    app = cdk.App(outdir=str(outdir))
    east = cdk.Stack(app, "GlobalKinesisEast", env=EAST)
    orders = ChangeCaptureTable(
        east,
        "Orders",
        partition_key=PK,
        kinesis=KinesisDestination(),
        replicas=[dynamodb.ReplicaTableProps(region="us-west-2")],
    )
    archive = KinesisConsumer(
        east,
        "Archive",
        table=orders,
        consumer_name="ttl-archive",
        filters=[KinesisFilters.on_data(StreamFilters.ttl_deletions_only())],
        monitoring=False,
        **_code(),
    )
    archive.grant_view_table(dynamodb.TableV2(east, "View", partition_key=PK), env_var="VIEW_TABLE")
    west = cdk.Stack(app, "GlobalKinesisWest", env=WEST)
    stats = StreamConsumer(
        west,
        "WestOrderStats",
        table=ReplicaTable(west, "Orders", table=orders),
        consumer_name="order-stats",
        monitoring=False,
        redrive=False,
        **_code(),
    )
    stats.grant_view_table(dynamodb.TableV2(west, "View", partition_key=PK), env_var="VIEW_TABLE")
    app.synth()
    return outdir


def test_a_kinesis_archive_archives_the_other_regions_expiries_once(
    aws: LocalEndpoint, kinesis_assembly: Path
) -> None:
    """us-west-2's TTL deletion reaches the table's Kinesis stream without the identity (a
    replicated REMOVE, its creation time in the destination's precision): the archive's widened
    filter and its runtime take it as the expiry it is; a user's delete stays out."""
    clock = Clock()
    with LocalPipeline(kinesis_assembly, "GlobalKinesisEast", endpoint=aws, clock=clock) as east:
        west = LocalPipeline(kinesis_assembly, "GlobalKinesisWest", endpoint=aws, clock=clock)
        with west:
            _put(east, "expires-in-west", T0 + 100)
            _put(east, "expires-in-east", T0 + 300)
            _put(east, "deleted-by-a-user", T0 + 86_400)
            drain_together([east, west])
            east.client("dynamodb").delete_item(
                TableName=_orders(east), Key={"pk": {"S": "deleted-by-a-user"}}
            )
            clock.now = T0 + 200
            assert west.sweep_ttl() == 1
            drain_together([east, west])
            clock.now = T0 + 400
            assert east.sweep_ttl() == 1
            drain_together([east, west])
            assert _view(east) == {
                "ttl-archive#expires-in-west#expired": 1,
                "ttl-archive#expires-in-east#expired": 1,
            }


def test_the_global_orders_example_stacks_run_under_the_local_pipeline(
    aws: LocalEndpoint, tmp_path: Path
) -> None:
    """docs/global-tables.md's example (GlobalOrdersEast, GlobalOrdersWest: the snapshots'
    stacks) runs as synthesized: each region's consumer is delivered the write and the expiry."""
    from tests.cdc_constructs.test_global_example import build

    app = cdk.App(outdir=str(tmp_path / "cdk.out"))
    build(app)
    app.synth()
    clock = Clock()
    with (
        LocalPipeline(app.outdir, "GlobalOrdersEast", endpoint=aws, clock=clock) as east,
        LocalPipeline(app.outdir, "GlobalOrdersWest", endpoint=aws, clock=clock) as west,
    ):
        _put(east, "o1", T0 + 10)
        drain_together([east, west])
        clock.now = T0 + 20
        assert east.sweep_ttl() == 1
        drain_together([east, west])
        for pipeline in (east, west):
            counters = pipeline.counters
            assert (counters.records_delivered, counters.records_discarded) == (2, 0)
