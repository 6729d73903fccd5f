"""CDC-ESM11: at most two readers per DynamoDB stream (one for a table with replicas), counting
event source mappings and Pipes in every stack of the app. Each case is an app of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_cdk import Acknowledgment, App, Environment, Stack, Validations
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from .test_rules import Shared, mapping, pipe
from .validation_report import Finding, synthesize_with_checks

pytestmark = pytest.mark.xdist_group("nag-rules")

RULE = "CDC-ESM11"
ENV = Environment(account="123456789012", region="us-east-1")


def readers_findings(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.rule_id == RULE]


def build(tmp_path: Path, kinds: list[str], *, stacks: int = 1, replicas: bool = False):
    """An app whose one table is read by a mapping ("m") or pipe ("p") per entry of ``kinds``,
    the readers spread over ``stacks`` stacks (the table is in the first)."""
    app = App(outdir=str(tmp_path))
    owner = Stack(app, "Tables", env=ENV)
    shared = Shared(owner, "Shared")
    table = dynamodb.TableV2(
        owner,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        dynamo_stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
        replicas=[dynamodb.ReplicaTableProps(region="eu-west-1")] if replicas else None,
    )
    homes = [owner] + [Stack(app, f"Readers{n}", env=ENV) for n in range(1, stacks)]
    for index, kind in enumerate(kinds):
        home = homes[index % len(homes)]
        scope = Construct(home, f"Reader{index}")
        local = shared if home is owner else Shared(home, f"Shared{index}")
        if kind == "m":
            mapping(scope, local, event_source_arn=table.table_stream_arn)
        else:
            pipe(scope, local, source=table.table_stream_arn)
    return app


@pytest.mark.parametrize(
    ("kinds", "stacks"),
    [(["m", "m", "m"], 1), (["p", "p", "p"], 1), (["m", "p", "m"], 1), (["m", "m", "p"], 3)],
    ids=["three-mappings", "three-pipes", "mappings-and-a-pipe", "across-stacks"],
)
def test_a_third_reader_is_an_error_naming_every_reader(
    tmp_path: Path, kinds: list[str], stacks: int
) -> None:
    findings = readers_findings(synthesize_with_checks(build(tmp_path, kinds, stacks=stacks)))
    assert len(findings) == 3  # each reader is reported
    assert {f.severity for f in findings} == {"error"}
    description = findings[0].description
    assert "The DynamoDB stream of Tables/Orders" in description
    assert "has 3 readers (at most 2): " in description
    for index in range(3):
        assert f"/Reader{index}/" in description
    assert "one mapping" in description  # the explanation gives the ways out


@pytest.mark.parametrize("kinds", [["m", "m"], ["m", "p"], ["p"]], ids=["2m", "m+p", "1p"])
def test_two_readers_are_fine(tmp_path: Path, kinds: list[str]) -> None:
    findings = synthesize_with_checks(build(tmp_path, kinds, stacks=2))
    assert readers_findings(findings) == []


def test_a_table_with_replicas_allows_one_reader(tmp_path: Path) -> None:
    findings = readers_findings(synthesize_with_checks(build(tmp_path, ["m", "p"], replicas=True)))
    assert len(findings) == 2
    assert "has 2 readers (at most 1 for a table with replicas)" in findings[0].description
    one = synthesize_with_checks(build(tmp_path / "one", ["m"], replicas=True))
    assert readers_findings(one) == []


def test_the_finding_can_be_acknowledged_with_a_reason(tmp_path: Path) -> None:
    app = build(tmp_path, ["m", "m", "m"])
    Validations.of(app).acknowledge(
        Acknowledgment(id=RULE, reason="the third reader is a short-lived migration")
    )
    assert readers_findings(synthesize_with_checks(app)) == []


def test_acknowledging_one_reader_accepts_the_streams_readers(tmp_path: Path) -> None:
    """What ``extra_reader_reason`` does: the extra reader says why, the others need not."""
    app = build(tmp_path, ["m", "m", "p"])
    (extra,) = [c for c in app.node.find_all() if c.node.path == "Tables/Reader2/Pipe"]
    Validations.of(extra).acknowledge(Acknowledgment(id=RULE, reason="a migration reader"))
    assert readers_findings(synthesize_with_checks(app)) == []


def test_a_replicas_stream_read_in_its_region_allows_one_reader(tmp_path: Path) -> None:
    """A ReplicaTable's stream (its DescribeTable custom resource's answer) is a global table's:
    a StreamConsumer and a pipe made by hand on it are one reader too many."""
    from cdc_constructs import ChangeCaptureTable, ReplicaTable, StreamConsumer
    from tests.cdc_constructs.support import consumer_code

    app = App(outdir=str(tmp_path))
    east = Stack(app, "East", env=ENV)
    orders = ChangeCaptureTable(
        east,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        replicas=[dynamodb.ReplicaTableProps(region="us-west-2")],
    )
    west = Stack(app, "West", env=Environment(account="123456789012", region="us-west-2"))
    replica = ReplicaTable(west, "Orders", table=orders)
    StreamConsumer(west, "Stats", table=replica, **consumer_code())
    pipe(Construct(west, "ByHand"), Shared(west, "Shared"), source=replica.table_stream_arn)
    findings = readers_findings(synthesize_with_checks(app))
    assert findings, "two readers of a replica's stream"
    assert "(at most 1 for a table with replicas)" in findings[0].description


def test_two_replica_tables_of_one_replica_in_two_stacks_count_together(tmp_path: Path) -> None:
    """Two ReplicaTables of the us-west-2 replica, in two stacks of the app, read one stream:
    a consumer on each (the second made by hand, as the constructs refuse it) is one too many."""
    from cdc_constructs import ChangeCaptureTable, ReplicaTable, StreamConsumer
    from tests.cdc_constructs.support import consumer_code

    app = App(outdir=str(tmp_path))
    east = Stack(app, "East", env=ENV)
    orders = ChangeCaptureTable(
        east,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        replicas=[dynamodb.ReplicaTableProps(region="us-west-2")],
    )
    west = Environment(account="123456789012", region="us-west-2")
    stats, archive = Stack(app, "WestStats", env=west), Stack(app, "WestArchive", env=west)
    StreamConsumer(
        stats, "Stats", table=ReplicaTable(stats, "Orders", table=orders), **consumer_code()
    )
    second = ReplicaTable(archive, "Orders", table=orders)
    mapping(
        Construct(archive, "ByHand"),
        Shared(archive, "Shared"),
        event_source_arn=second.table_stream_arn,
    )
    findings = readers_findings(synthesize_with_checks(app))
    assert len(findings) == 2, "each reader of the one replica's stream is reported"
    description = findings[0].description
    assert "the replica of table" in description and "in us-west-2 has 2 readers" in description
    assert "WestStats/Stats" in description and "WestArchive/ByHand" in description
