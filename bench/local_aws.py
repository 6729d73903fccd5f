"""The local AWS side of the benchmark: resources on moto's server, request counting, faults.

Counting and fault injection are botocore event handlers registered on boto3's *default session*
before any consumer module creates its clients, so every client both consumers make with
``boto3.client(...)`` carries them (a client copies its session's event handlers when it is
created). The harness's own clients (setup, verification) come from a separate session and are
not counted.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from cdc_consumer.ledger import RECORDS_ATTRIBUTE, unpack

from bench.cost import CostMeter
from cdc_local.endpoint import LOCAL_CREDENTIALS, LocalEndpoint
from cdc_local.faults import SimulatedCrash

ORDERS_TABLE = "orders"
VIEW_TABLE = "order-stats"
IDEMPOTENCY_TABLE = "idempotency"
#: The ledger table beside it (IdempotencyTable.ledger_table): one entry per transaction.
LEDGER_TABLE = "idempotency-ledger"
QUARANTINE_QUEUE = "quarantine"
#: The latest-image replica of the orders table (cdc_consumer.LatestImage), keyed like it.
REPLICA_TABLE = "orders-replica"

#: Key of the orders and order-stats view tables (reference_app/handlers/order_stats.py): the view
#: has one item per customer, "CUSTOMER#<customerId>".
VIEW_KEY = "pk"


@dataclass
class Fault:
    """One injected fault.

    Not cdc_local.faults.Faults: that injects faults at random (by probability, before a call);
    the benchmark needs one fault on one chosen request, the same for both consumers, and a
    crash *after* a call succeeded. The crash is cdc_local's :class:`SimulatedCrash` (a
    BaseException, so neither consumer's ``except Exception`` turns it into a reported failure).

    ``when(operation, params)`` picks the request (params are the API parameters). ``kind`` is
    ``"throttle"`` (the request fails with ProvisionedThroughputExceededException before reaching
    DynamoDB: a transient error) or ``"crash-after"`` (the request succeeds, then the process dies
    before the caller sees the response). ``times`` is how many matching requests it hits.
    """

    when: Callable[[str, dict[str, Any]], bool]
    kind: str
    times: int = 1
    hits: int = 0


@dataclass
class Instrumentation:
    """Counts DynamoDB/SQS requests and applies faults, for every client of the default session."""

    requests: Counter[str] = field(default_factory=Counter)
    #: Seconds spent inside requests (from before-call to after-call, retries included).
    request_seconds: float = 0.0
    #: Marker ids ("{consumer}#{eventID}") of successful TransactWriteItems, in commit order.
    committed_markers: list[str] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    #: Request units and modelled latency of every request (bench/cost.py).
    cost: CostMeter = field(default_factory=CostMeter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.faults.clear()
            self.committed_markers.clear()
            self.request_seconds = 0.0
        self.cost.reset()

    @property
    def dynamodb_requests(self) -> int:
        return sum(n for op, n in self.requests.items() if op.startswith("dynamodb."))

    # botocore handlers -----------------------------------------------------------------------
    def _count(self, event_name: str, **_: Any) -> None:
        # event_name is "before-send.<service>.<Operation>"; one per HTTP request, retries included.
        _event, service, operation = event_name.split(".", 2)
        with self._lock:
            self.requests[f"{service}.{operation}"] += 1

    def _remember_params(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["bench_params"] = params

    def _matching(self, model: Any, context: dict[str, Any], kind: str) -> Fault | None:
        params = context.get("bench_params", {})
        with self._lock:
            for fault in self.faults:
                due = fault.kind == kind and fault.hits < fault.times
                if due and fault.when(model.name, params):
                    fault.hits += 1
                    return fault
        return None

    def _before_call(self, model: Any, context: dict[str, Any], **_: Any) -> Any:
        context["bench_started"] = time.perf_counter()
        if self._matching(model, context, "throttle") is None:
            return None
        with self._lock:
            self.requests[f"dynamodb.{model.name}"] += 1  # it was attempted; count it
        error = {
            "Error": {
                "Code": "ProvisionedThroughputExceededException",
                "Message": "injected by the benchmark",
            },
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }
        return AWSResponse("http://bench-fault", 400, {}, None), error

    def _meter(
        self, event_name: str, model: Any, parsed: Any, context: dict[str, Any], **_: Any
    ) -> None:
        service = event_name.split(".")[1]
        self.cost.record(service, model.name, context.get("bench_params", {}), parsed)

    def _after_call(
        self, model: Any, http_response: Any, context: dict[str, Any], **_: Any
    ) -> None:
        elapsed = time.perf_counter() - context.get("bench_started", time.perf_counter())
        ok = http_response.status_code < 300
        with self._lock:
            self.request_seconds += elapsed
            if ok and model.name == "TransactWriteItems":
                self.committed_markers.extend(marker_ids(context.get("bench_params", {})))
        if ok and self._matching(model, context, "crash-after"):
            raise SimulatedCrash(f"injected crash after a successful {model.name}")

    def install(self, session: boto3.session.Session) -> None:
        events = session.events
        events.register("before-send.dynamodb", self._count)
        events.register("before-send.sqs", self._count)
        events.register("before-send.s3", self._count)
        for service in ("dynamodb", "sqs", "s3"):
            events.register(f"before-parameter-build.{service}", self._remember_params)
            events.register(f"after-call.{service}", self._meter)
        events.register("before-call.dynamodb", self._before_call)
        events.register("after-call.dynamodb", self._after_call)


def marker_ids(params: dict[str, Any]) -> list[str]:
    """The ``id`` of every Put in a TransactWriteItems request (the processed-markers); for a
    ledger entry (cdc_consumer.ledger), ``{id}#seq:{n}`` for each sequence number it lists."""
    ids = []
    for action in params.get("TransactItems", []):
        item = action.get("Put", {}).get("Item", {})
        if "S" not in item.get("id", {}):
            continue
        if "B" in item.get(RECORDS_ATTRIBUTE, {}):
            listed = unpack(item[RECORDS_ATTRIBUTE]["B"])
            ids += [f"{item['id']['S']}#seq:{number}" for number in listed]
        else:
            ids.append(item["id"]["S"])
    return ids


INSTRUMENTATION = Instrumentation()
_installed = False


def install_instrumentation() -> Instrumentation:
    """Make boto3's default session (from the current environment) carry the instrumentation.

    Call once, after the environment points at the local endpoint and before any consumer module
    is imported.
    """
    global _installed
    if not _installed:
        boto3.setup_default_session()
        assert boto3.DEFAULT_SESSION is not None
        INSTRUMENTATION.install(boto3.DEFAULT_SESSION)
        _installed = True
    return INSTRUMENTATION


def moto_transactions_patch() -> str:
    """Which patch moto's TransactWriteItems runs with in this process (for the report).

    moto 5.2.5 deep-copies each target table once per action of a transaction; the local
    endpoint's cdc_local.moto_patches (applied by LocalEndpoint.start) snapshots only the items
    a transaction names. Without it, `make bench` still runs, only slower, and the report says so.
    """
    from cdc_local.moto_patches import is_applied

    return "cdc_local.moto_patches" if is_applied() else "none"


@contextmanager
def endpoint_at(url: str | None) -> Iterator[LocalEndpoint]:
    """moto's server on 127.0.0.1: a new one, or the one already running at ``url``."""
    if url is None:
        with LocalEndpoint() as endpoint:
            yield endpoint
        return
    endpoint = LocalEndpoint()
    endpoint.url = url.rstrip("/")
    yield endpoint


def admin_client(endpoint: LocalEndpoint, service: str) -> Any:
    """A client for the harness itself: a separate session, so its requests are not counted."""
    return boto3.session.Session().client(
        service,
        endpoint_url=endpoint.url,
        region_name=endpoint.region,
        config=Config(retries={"max_attempts": 2, "mode": "standard"}),
        **LOCAL_CREDENTIALS,
    )


@dataclass
class Resources:
    """Names and URLs of what :func:`create_resources` made."""

    orders_table: str
    view_table: str
    idempotency_table: str
    quarantine_queue_url: str

    def environment(self, consumer_name: str) -> dict[str, str]:
        """The function environment the constructs set (docs/interfaces.md §2)."""
        return {
            "CDC_CONSUMER_NAME": consumer_name,
            "IDEMPOTENCY_TABLE_NAME": self.idempotency_table,
            "CDC_LEDGER_TABLE_NAME": LEDGER_TABLE,
            "QUARANTINE_QUEUE_URL": self.quarantine_queue_url,
            "VIEW_TABLE_NAME": self.view_table,
            "CDC_METRICS_NAMESPACE": "CdcConstructs",
            "POWERTOOLS_METRICS_NAMESPACE": "CdcConstructs",
        }


def create_resources(endpoint: LocalEndpoint) -> Resources:
    """Empty the endpoint and create the orders, view and idempotency tables and the queue."""
    endpoint.reset()
    dynamodb = admin_client(endpoint, "dynamodb")
    sqs = admin_client(endpoint, "sqs")
    tables = {
        ORDERS_TABLE: "pk",
        VIEW_TABLE: VIEW_KEY,
        IDEMPOTENCY_TABLE: "id",
        REPLICA_TABLE: "pk",
    }
    for name, key in tables.items():
        dynamodb.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
    dynamodb.create_table(
        TableName=LEDGER_TABLE,
        KeySchema=[
            {"AttributeName": "id", "KeyType": "HASH"},
            {"AttributeName": "seq", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "id", "AttributeType": "S"},
            {"AttributeName": "seq", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    url = sqs.create_queue(QueueName=QUARANTINE_QUEUE)["QueueUrl"]
    return Resources(ORDERS_TABLE, VIEW_TABLE, IDEMPOTENCY_TABLE, url)
