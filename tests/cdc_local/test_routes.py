"""A route defined outside ``cdc_local`` plugs into the local pipeline: registered in
``cdc_local.routes``, it is the one the pipeline finds by a mapping's ``EventSourceArn``, the one
event source mapping reads its source, and the on-failure destination takes its failure
records (here a toy that marks each record and names its batch description its own way)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from cdc_local.exceptions import LocalPipelineError
from cdc_local.routes import ROUTES, SourceContext, register, route_of, unregister
from cdc_local.routes.dynamodb_stream import DynamoDBStreamRoute, DynamoDBStreamSource
from tests.cdc_local import recorder
from tests.cdc_local.helpers import put, queue_messages


class ToySource(DynamoDBStreamSource):
    def record(self, shard_id: str, raw: Mapping[str, Any]) -> dict[str, Any]:
        return {**super().record(shard_id, raw), "toyShard": shard_id}

    def failure_record(
        self, records: Sequence[Mapping[str, Any]], **context: Any
    ) -> dict[str, Any]:
        message = super().failure_record(records, **context)
        message["ToyBatchInfo"] = message.pop("DDBStreamBatchInfo")
        return message


class ToyRoute(DynamoDBStreamRoute):
    def source(self, client: Any, arn: str, context: SourceContext) -> ToySource:
        return ToySource(client, arn, context)


def test_a_registered_route_is_read_by_the_one_mapping_and_its_failures_kept(
    pipeline_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(ROUTES, "dynamodb", ToyRoute())
    pipeline = pipeline_for("Basic")
    put(pipeline, "a")
    put(pipeline, "b", mode="empty-id")  # fails the whole batch: discarded after the retries
    pipeline.drain()
    records = [r for i in recorder.INVOCATIONS for r in i.event["Records"]]
    assert records and all(r["toyShard"] for r in records)
    [message] = queue_messages(pipeline, "OnFailure")
    assert "DDBStreamBatchInfo" not in message
    assert message["ToyBatchInfo"]["batchSize"] == 2


def test_a_source_of_no_route_is_refused_with_the_routes_known() -> None:
    with pytest.raises(LocalPipelineError, match=r"no route for service 'sqs'.*'dynamodb'"):
        route_of("arn:aws:sqs:us-east-1:123456789012:queue")


def test_a_second_route_of_a_service_is_refused_and_an_unregistered_one_is_gone() -> None:
    """register neither replaces a route silently nor leaves a test's route behind."""
    builtin = ROUTES["dynamodb"]
    with pytest.raises(LocalPipelineError, match=r"service 'dynamodb' is already registered"):
        register(ToyRoute())
    assert ROUTES["dynamodb"] is builtin

    toy = ToyRoute()
    toy.service = "toy"
    register(toy)
    assert route_of("arn:aws:toy:us-east-1:123456789012:log/orders") is toy
    unregister(toy)
    with pytest.raises(LocalPipelineError, match=r"no route for service 'toy'"):
        route_of("arn:aws:toy:us-east-1:123456789012:log/orders")
    assert ROUTES["dynamodb"] is builtin
