"""A local delivery kind is one module (issue 30): a kind defined outside ``cdc_local``,
registered by its ARN's service, is what the local mapping delivers with, what a redrive is
pointed at and what a test peeks at; and no module of ``cdc_local`` outside
``cdc_local/destinations/`` names a kind's module."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from cdc_local import destinations
from cdc_local.destinations import DeliveryTarget, OnFailureDestination
from cdc_local.exceptions import LocalPipelineError
from tests import structure

ARN = "arn:aws:firehose:us-east-1:123456789012:deliverystream/failures"


class Endpoint:
    """Stands in for the local endpoint: the client is the kind's to use."""

    def client(self, service: str, credentials: Mapping[str, str] | None = None) -> Any:
        return {"service": service, "credentials": credentials}


class StreamDelivery:
    service = "firehose"

    def __init__(self) -> None:
        self.delivered: list[Mapping[str, Any]] = []

    def check(self, target: DeliveryTarget) -> None: ...

    def bucket(self, target: DeliveryTarget) -> str | None:
        return None

    def send(
        self,
        client: Any,
        target: DeliveryTarget,
        record: Mapping[str, Any],
        event: Mapping[str, Any],
        now: float,
    ) -> None:
        assert client["credentials"] == {"role": "the function's"}
        self.delivered.append(record)

    def where(self, target: DeliveryTarget) -> str | None:
        return f"memory://{target.mapping_uuid}"

    def peek(self, client: Any, target: DeliveryTarget) -> list[dict[str, Any]]:
        return [dict(record) for record in self.delivered]

    def describe(self, target: DeliveryTarget) -> str:
        return f"a delivery stream {target.arn}"

    def label(self, target: DeliveryTarget) -> str | None:
        return f"on-failure stream: {target.arn}"

    def redrive_options(
        self, target: DeliveryTarget, function_name: str
    ) -> tuple[list[str], list[str]] | None:
        return None

    def beside_quarantine(self, target: DeliveryTarget) -> list[str]:
        return []


@pytest.fixture
def kind() -> Iterator[StreamDelivery]:
    made = StreamDelivery()
    destinations.register(made)
    yield made
    del destinations.DELIVERY_KINDS[made.service]


def test_a_kind_defined_outside_cdc_local_delivers_by_its_arns_service(
    kind: StreamDelivery,
) -> None:
    destination = OnFailureDestination(
        ARN, Endpoint(), mapping_uuid="m-1", credentials={"role": "the function's"}
    )
    destination.send({"batch": 1}, {"Records": []}, 0.0)

    assert kind.delivered == [{"batch": 1}] and destination.sent == 1
    assert destination.where == "memory://m-1"
    assert destination.peek(None) == [{"batch": 1}]
    assert destination.describe() == f"a delivery stream {ARN}"
    assert destination.kind.label(destination.target) == f"on-failure stream: {ARN}"
    assert destination.bucket is None and destination.queue_url is None


def test_a_destination_of_no_known_kind_is_refused_naming_the_kinds() -> None:
    with pytest.raises(LocalPipelineError, match="must be an SQS queue, SNS topic or S3 bucket"):
        OnFailureDestination(ARN, Endpoint())  # type: ignore[arg-type]  # no kind registered


PACKAGE = Path(__file__).resolve().parents[2] / "cdc_local"
KIND_MODULES = {f"cdc_local.destinations.{name}" for name in ("bucket", "queue", "topic")}


def _imports_a_kind(tree: ast.Module) -> set[str]:
    return {
        target
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
        for target in [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        if target in KIND_MODULES
    }


def test_no_module_outside_the_destinations_names_a_kind() -> None:
    modules = structure.modules(PACKAGE)
    named = {
        f"{module} imports {target}"
        for module, tree in modules.items()
        if not module.startswith("cdc_local.destinations")
        for target in _imports_a_kind(tree)
    }
    assert named == set()


def test_the_check_sees_an_import_of_a_kind() -> None:
    tree = ast.parse("from cdc_local.destinations.bucket import BUCKET\n")
    assert _imports_a_kind(tree) == {"cdc_local.destinations.bucket"}
