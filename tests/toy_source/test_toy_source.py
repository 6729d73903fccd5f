"""A source the library does not know, end to end (issue 39; docs/design.md, "Adding a source"):
a toy *change log* (a table whose items each carry one change of another table) defined in the
tests only and registered on each of the four sides, with no line of the library changed:

- the constructs: a consumer (the consumer core over the toy's construct route) and its redrive,
  synthesized by a CDK app here;
- the local pipeline: the toy's local route (registered in ``cdc_local.routes``) reads the log
  for the consumer's event source mapping, with IAM enforced;
- the runtime: the consumer's handler imports the toy plugin, which registers the toy's runtime
  route; its changes are applied by a ``LatestImage`` projection;
- the redrive: the redrive function imports the plugin (``CDC_REDRIVE_SOURCE_MODULES``), which
  registers the toy's replay route; it reads the failed ranges back from the log and replays them.

The consumer crashes on a second round of changes (the fault plan), which go to its on-failure
queue as pointers; once fixed, the redrive replays each range once and the view is exact."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cdc_consumer.routes.dynamodb_stream.records import ROUTE as DYNAMODB_STREAM
from cdc_consumer.sinks.latest_image import DELETED_ATTRIBUTE, VERSION_ATTRIBUTE

from cdc_local import routes
from cdc_local.accounting import peek_messages
from cdc_local.endpoint import LocalEndpoint
from cdc_local.faults import FaultPlan
from cdc_local.runner import LocalPipeline
from tests.toy_source.construct_route import LAYER, ToyLogRoute, log_arn
from tests.toy_source.local_route import ToyLocalRoute

STACK = "ToySource"
FUNCTION = Path(__file__).parent / "function"
LOG_TABLE = "toy-log"


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import aws_cdk as cdk
    from aws_cdk import aws_dynamodb as dynamodb
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_sqs as sqs

    from tests.cdc_constructs.test_routes import toy_consumer

    outdir = tmp_path_factory.mktemp("toy-source.out")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, STACK)
    log = dynamodb.Table(
        stack,
        "Log",
        table_name=LOG_TABLE,
        partition_key=dynamodb.Attribute(name="log", type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name="seq", type=dynamodb.AttributeType.NUMBER),
    )
    view = dynamodb.Table(
        stack,
        "View",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
    )
    layer = lambda_.LayerVersion(stack, "ToyLayer", code=lambda_.Code.from_asset(str(LAYER)))
    route = ToyLogRoute(stream_arn=log_arn(LOG_TABLE, "orders"), table=log, layer=layer)
    consumer = toy_consumer(
        stack,
        route,
        code=lambda_.Code.from_asset(str(FUNCTION)),
        handler="index.handler",
        environment={"VIEW_TABLE_NAME": view.table_name},
        on_failure_queue=sqs.Queue(stack, "Pointers", enforce_ssl=True),
    )
    consumer.function.add_layers(layer)
    view.grant_read_write_data(consumer.function)
    app.synth()
    return outdir


@pytest.fixture
def toy_local_route() -> Iterator[None]:
    route = ToyLocalRoute()
    routes.register(route)
    yield
    routes.unregister(route)


class ChangeLog:
    """The toy source as the test writes it: one change of an orders table per log item."""

    def __init__(self, pipeline: LocalPipeline) -> None:
        self.ddb = pipeline.client("dynamodb")
        self.seq = 0
        #: Each item's last change's version, as the toy's runtime route makes it (the
        #: DynamoDB stream's rule: its creation time in seconds, then its sequence number).
        self.versions: dict[str, str] = {}

    def change(self, pk: str, n: int | None) -> None:
        """``pk``'s new ``n`` (None: ``pk`` deleted)."""
        self.seq += 1
        now = time.time()
        image = {"pk": {"S": pk}, "n": {"N": str(n)}}
        change = {
            "eventID": f"toy-{self.seq}",
            "eventName": "REMOVE" if n is None else "MODIFY",
            "dynamodb": {
                "Keys": {"pk": {"S": pk}},
                **({} if n is None else {"NewImage": image}),
                "SequenceNumber": str(self.seq),
                "ApproximateCreationDateTime": now,
                "StreamViewType": "NEW_AND_OLD_IMAGES",
            },
        }
        time_us, _ = DYNAMODB_STREAM.created(change["dynamodb"], change["eventID"])
        assert time_us is not None
        self.versions[pk] = DYNAMODB_STREAM.version(time_us, str(self.seq))
        item = {"log": {"S": "orders"}, "seq": {"N": str(self.seq)}, "at": {"N": str(now)}}
        self.ddb.put_item(TableName=LOG_TABLE, Item={**item, "change": {"S": json.dumps(change)}})


def view_items(pipeline: LocalPipeline) -> list[dict[str, Any]]:
    return pipeline.client("dynamodb").scan(TableName=pipeline.table_name("View"))["Items"]


def view(pipeline: LocalPipeline) -> dict[str, int]:
    """The view's live items (``pk`` -> ``n``); tombstones left out."""
    items = view_items(pipeline)
    return {i["pk"]["S"]: int(i["n"]["N"]) for i in items if DELETED_ATTRIBUTE not in i}


def test_a_toy_source_runs_through_the_constructs_the_runtime_the_redrive_and_locally(
    aws: LocalEndpoint, assembly: Path, toy_local_route: None
) -> None:
    with LocalPipeline(assembly, STACK, endpoint=aws, faults=FaultPlan()) as pipeline:
        assert pipeline.iam_enforced and pipeline.faults is not None
        log = ChangeLog(pipeline)
        for pk in "abc":
            log.change(pk, 1)
        pipeline.run()
        assert view(pipeline) == {"a": 1, "b": 1, "c": 1}

        pipeline.faults.plan = FaultPlan(crash_probability=1.0)  # every batch crashes
        log.change("a", 2)
        log.change("b", None)
        log.change("d", 1)
        discarded = pipeline.run().records_discarded
        assert discarded == 3 and pipeline.faults.counters.crashes > 0
        queue = next(u for lid, u in pipeline.resources.queue_urls.items() if "Pointers" in lid)
        pointers = peek_messages(pipeline.client("sqs"), queue)
        assert pointers and all("ToyBatchInfo" in p for p in pointers)
        assert view(pipeline) == {"a": 1, "b": 1, "c": 1}

        pipeline.faults.plan = FaultPlan()  # fixed
        (redrive,) = [f for lid, f in pipeline.functions.items() if "Redrive" in lid]
        result = redrive.invoke({"source": "on-failure"})
        assert not result.failed, result.output
        (report,) = result.response["reports"]
        assert report["messages_deleted"] == len(pointers)
        assert report["records_replayed"] == 3
        assert view(pipeline) == {"a": 2, "c": 1, "d": 1}
        # Each item holds its last change's version (b's tombstone too): no older one after it.
        versions = {i["pk"]["S"]: i[VERSION_ATTRIBUTE]["S"] for i in view_items(pipeline)}
        assert versions == log.versions

        again = redrive.invoke({"source": "on-failure"})  # nothing left: nothing replayed twice
        assert not again.failed and again.response["reports"][0]["records_replayed"] == 0
        pipeline.check_access()
