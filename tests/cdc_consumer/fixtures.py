"""AWS resources for consumer tests on the local endpoint, request counting, fault injection.

Faults are injected with botocore's ``before-call`` event: the handler answers instead of the
endpoint, with the error response DynamoDB or SQS would send, so the processor sees exactly
what it would see from AWS and the local endpoint's own behaviour plays no part.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

import pytest
from boto3.dynamodb.types import TypeDeserializer
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ReadTimeoutError
from cdc_consumer import Change, StreamProcessor
from cdc_consumer.testing import FakeContext, redelivery, stream_event

from cdc_local.endpoint import LocalEndpoint

_deserializer = TypeDeserializer()


def plain(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _deserializer.deserialize(value) for name, value in item.items()}


@dataclass
class Resources:
    """An idempotency table, a view table and a quarantine queue, with clients bound to them."""

    endpoint: LocalEndpoint
    dynamodb: Any
    sqs: Any
    idempotency_table: str
    view_table: str
    queue_url: str

    def processor(self, consumer: str = "test-consumer", **options: Any) -> StreamProcessor:
        return StreamProcessor(
            consumer,
            idempotency_table=self.idempotency_table,
            quarantine_queue_url=self.queue_url,
            dynamodb_client=self.dynamodb,
            sqs_client=self.sqs,
            **options,
        )

    def scan(self, table: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for page in self.dynamodb.get_paginator("scan").paginate(
            TableName=table, ConsistentRead=True
        ):
            items += [plain(item) for item in page["Items"]]
        return items

    def view(self) -> dict[str, dict[str, Any]]:
        """View items by pk, without pk and zero counters (and items left with nothing)."""
        view = {
            item["pk"]: {k: v for k, v in item.items() if k != "pk" and v != 0}
            for item in self.scan(self.view_table)
        }
        return {pk: attributes for pk, attributes in view.items() if attributes}

    def markers(self) -> list[dict[str, Any]]:
        return self.scan(self.idempotency_table)

    def new_table(self, prefix: str) -> str:
        """A new table (``pk``, on demand) named ``{prefix}-<random>``; returns its name."""
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        create_table(self.dynamodb, name)
        return name

    def quarantined(self) -> list[dict[str, Any]]:
        """Every message in the quarantine queue (received, not deleted), bodies decoded."""
        bodies = []
        while True:
            response = self.sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=10, VisibilityTimeout=300
            )
            messages = response.get("Messages", [])
            if not messages:
                return bodies
            bodies += [json.loads(message["Body"]) for message in messages]


def create_table(
    dynamodb: Any,
    name: str,
    *,
    key: str = "pk",
    sort_key: str | None = None,
    stream: bool = False,
) -> None:
    """An on-demand table with string keys; ``stream`` turns on a NEW_AND_OLD_IMAGES stream."""
    keys = [{"AttributeName": key, "KeyType": "HASH"}]
    attributes = [{"AttributeName": key, "AttributeType": "S"}]
    if sort_key:
        keys.append({"AttributeName": sort_key, "KeyType": "RANGE"})
        attributes.append({"AttributeName": sort_key, "AttributeType": "S"})
    options: dict[str, Any] = {}
    if stream:
        options["StreamSpecification"] = {
            "StreamEnabled": True,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        }
    dynamodb.create_table(
        TableName=name,
        KeySchema=keys,
        AttributeDefinitions=attributes,
        BillingMode="PAY_PER_REQUEST",
        **options,
    )


def create_resources(endpoint: LocalEndpoint) -> Resources:
    dynamodb = endpoint.client("dynamodb")
    sqs = endpoint.client("sqs")
    suffix = uuid.uuid4().hex[:8]
    idempotency_table = f"idempotency-{suffix}"
    view_table = f"view-{suffix}"
    create_table(dynamodb, idempotency_table, key="id")
    create_table(dynamodb, view_table)
    dynamodb.update_time_to_live(
        TableName=idempotency_table,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiration"},
    )
    queue_url = sqs.create_queue(QueueName=f"quarantine-{suffix}")["QueueUrl"]
    return Resources(endpoint, dynamodb, sqs, idempotency_table, view_table, queue_url)


@pytest.fixture
def resources(aws: LocalEndpoint) -> Resources:
    return create_resources(aws)


# --- a small projection for runtime tests --------------------------------------------------


def view_key(keys: Mapping[str, Any]) -> str:
    """The mirror view's pk for a source item's keys: ``name=value`` pairs, sorted."""
    return ",".join(f"{name}={value}" for name, value in sorted(keys.items()))


def mirror_projection(view_table: str) -> Callable[[Change], list[dict[str, Any]]]:
    """Keeps, per source key, the newest image and how many records were applied (``applied``),
    so a duplicate or a lost record shows as a wrong count and an old image as a wrong image."""

    def project(change: Change) -> list[dict[str, Any]]:
        key = {"pk": {"S": view_key(change.keys)}}
        if change.new_image is None:
            expression, values = "REMOVE #image ADD #applied :one", {}
        else:
            expression = "SET #image = :image ADD #applied :one"
            values = {":image": {"S": json.dumps(change.new_image, default=str, sort_keys=True)}}
        return [
            {
                "Update": {
                    "TableName": view_table,
                    "Key": key,
                    "UpdateExpression": expression,
                    "ExpressionAttributeNames": {"#image": "image", "#applied": "applied"},
                    "ExpressionAttributeValues": {":one": {"N": "1"}, **values},
                }
            }
        ]

    return project


# --- delivery like Lambda's event source mapping -------------------------------------------


def deliver(
    handler: Callable[[dict[str, Any], Any], dict[str, Any]],
    records: list[dict[str, Any]],
    context: Any = None,
    max_invocations: int = 50,
    shard_id: str | None = None,
) -> list[dict[str, Any]]:
    """Invoke ``handler`` on ``records`` (events naming ``shard_id``, as a mapping with a
    tumbling window sends them, when given) and redeliver from the lowest failed sequence number
    until the batch is done; return every response."""
    responses = []
    batch = list(records)
    while batch:
        if len(responses) >= max_invocations:
            raise AssertionError(f"batch not done after {max_invocations} invocations")
        response = handler(stream_event(batch, shard_id=shard_id), context or FakeContext())
        responses.append(response)
        batch = redelivery(batch, response)
    return responses


# --- counting requests ---------------------------------------------------------------------


@dataclass
class RequestCounter:
    """Counts HTTP requests a client sends (retries included), per operation."""

    by_operation: Counter[str] = field(default_factory=Counter)

    def __call__(self, event_name: str, **_: Any) -> None:
        self.by_operation[event_name.rsplit(".", 1)[-1]] += 1

    @property
    def total(self) -> int:
        return sum(self.by_operation.values())


@pytest.fixture
def count_requests() -> Iterator[Callable[[Any], RequestCounter]]:
    registered: list[tuple[Any, RequestCounter]] = []

    def attach(client: Any) -> RequestCounter:
        counter = RequestCounter()
        service = client.meta.service_model.endpoint_prefix
        client.meta.events.register(f"before-send.{service}.*", counter)
        registered.append((client, counter))
        return counter

    yield attach
    for client, counter in registered:
        service = client.meta.service_model.endpoint_prefix
        client.meta.events.unregister(f"before-send.{service}.*", counter)


# --- injecting faults ----------------------------------------------------------------------


def error_response(code: str, message: str, **extra: Any) -> tuple[AWSResponse, dict[str, Any]]:
    parsed = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": 400},
        **extra,
    }
    return AWSResponse("http://fault.invalid", 400, {}, None), parsed


class TransactionHooks:
    """Hooks :meth:`before` and :meth:`after` on a client's TransactWriteItems calls while
    entered. :meth:`before` lets every call through (subclasses answer some with an error);
    :meth:`after` raises a read timeout once :attr:`lose_response` is set: the transaction
    committed, but its response was lost."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.lose_response = False

    def before(self, **_: Any) -> Any:
        return None

    def after(self, **_: Any) -> None:
        if self.lose_response:
            self.lose_response = False
            raise ReadTimeoutError(endpoint_url="http://dynamodb (simulated: committed, lost)")

    def __enter__(self) -> Self:
        self.client.meta.events.register("before-call.dynamodb.TransactWriteItems", self.before)
        self.client.meta.events.register("after-call.dynamodb.TransactWriteItems", self.after)
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.meta.events.unregister("before-call.dynamodb.TransactWriteItems", self.before)
        self.client.meta.events.unregister("after-call.dynamodb.TransactWriteItems", self.after)


def marker_ids(body: dict[str, Any]) -> list[str | None]:
    """The marker id of each TransactItem (None for a projection's action): a marker is a Put
    of ``id`` and ``expiration`` (and the ``stream`` it was written for)."""
    ids: list[str | None] = []
    for item in body["TransactItems"]:
        attributes = item.get("Put", {}).get("Item", {})
        is_marker = {"id", "expiration"} <= set(attributes) <= {"id", "expiration", "stream"}
        ids.append(attributes["id"]["S"] if is_marker else None)
    return ids


@dataclass
class Faults:
    """``before-call`` hooks on a client that answer some calls with an error response."""

    client: Any
    hooks: list[tuple[str, Any]] = field(default_factory=list)

    def on(
        self,
        operation: str,
        decide: Callable[[dict[str, Any]], tuple[AWSResponse, dict[str, Any]] | None],
    ) -> None:
        """``decide(request body as a dict)`` returns an error response, or None to let the
        call through."""

        def hook(params: dict[str, Any], **_: Any) -> Any:
            body = json.loads(params["body"] or b"{}")
            return decide(body)

        service = self.client.meta.service_model.service_id.hyphenize()
        event = f"before-call.{service}.{operation}"
        self.client.meta.events.register(event, hook)
        self.hooks.append((event, hook))

    def clear(self) -> None:
        for event, hook in self.hooks:
            self.client.meta.events.unregister(event, hook)
        self.hooks.clear()

    def conflict_on(self, event_ids: Counter[str]) -> None:
        """Cancel, with a TransactionConflict on its marker, each transaction carrying the
        marker of one of ``event_ids``, as many times as its count (the runtime retries it)."""
        self.cancel_on(event_ids, "TransactionConflict")

    def cancel_on(self, event_ids: Counter[str], code: str = "ThrottlingError") -> None:
        """Cancel, with reason ``code`` on its marker, each transaction carrying the marker of
        one of ``event_ids``, as many times as its count (a ThrottlingError: a transient failure
        the runtime reports)."""

        def decide(body: dict[str, Any]) -> Any:
            ids = marker_ids(body)
            for index, marker in enumerate(ids):
                event_id = marker.rsplit("#", 1)[-1] if marker else None
                if event_id and event_ids[event_id] > 0:
                    event_ids[event_id] -= 1
                    reasons = [{"Code": "None"} for _ in ids]
                    reasons[index] = {"Code": code, "Message": f"{code} (a test fault)"}
                    return error_response(
                        "TransactionCanceledException",
                        "Transaction cancelled, please refer cancellation reasons",
                        CancellationReasons=reasons,
                    )
            return None

        self.on("TransactWriteItems", decide)


@pytest.fixture
def faults(resources: Resources) -> Iterator[Callable[[Any], Faults]]:
    made: list[Faults] = []

    def make(client: Any) -> Faults:
        made.append(Faults(client))
        return made[-1]

    yield make
    for injected in made:
        injected.clear()


@pytest.fixture
def ledger(resources: Resources, monkeypatch: pytest.MonkeyPatch) -> str:
    """A ledger table beside the idempotency table, named to the runtime
    (``CDC_LEDGER_TABLE_NAME``), as StreamConsumer's IdempotencyTable makes one."""
    from cdc_consumer import legacy_markers
    from cdc_consumer.environment_variables import LEDGER_TABLE_ENV

    table = f"ledger-{uuid.uuid4().hex[:8]}"
    create_table(resources.dynamodb, table, key="id", sort_key="seq")
    monkeypatch.setenv(LEDGER_TABLE_ENV, table)
    legacy_markers._SINCE.clear()
    return table
