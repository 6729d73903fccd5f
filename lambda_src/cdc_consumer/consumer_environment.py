"""The environment a StreamConsumer gives its function, on this machine, for a test of your
handler module as it is deployed (``StreamProcessor()`` configured from the environment).

:func:`consumer_environment` starts moto's server on 127.0.0.1 (an ephemeral port, in this
process), creates the idempotency table, its ledger table and the quarantine queue there (and
any table of yours), sets what the construct sets (``CDC_CONSUMER_NAME``,
``IDEMPOTENCY_TABLE_NAME``, ``CDC_LEDGER_TABLE_NAME``, ``QUARANTINE_QUEUE_URL``), the endpoint,
a region and fake credentials, and puts your handler directory first on ``sys.path``; on exit it
restores all of it and stops the server::

    with consumer_environment("handlers", tables={"TOTALS_TABLE_NAME": "pk"}) as env:
        totals = env.import_handler("totals")
        totals.handler(stream_event([record]), FakeContext())
        env.quarantined()   # what went to the quarantine queue

Needs moto's server: the ``testing`` extra (``pip install "cdc-constructs[testing]"``). Imported
by :mod:`cdc_consumer.testing`; moto is imported only when an environment starts, so the layer
(which ships this module) never needs it.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3

from cdc_consumer import environment_variables
from cdc_consumer.defaults import ID_ATTRIBUTE
from cdc_consumer.ledger import SORT_ATTRIBUTE

#: moto accepts any credentials; these fixed ones keep every client on the same moto account.
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
DEFAULT_REGION = "us-east-1"
IDEMPOTENCY_TABLE = "idempotency"
#: As ``IdempotencyTable`` names its ledger table beside a named table.
LEDGER_TABLE = f"{IDEMPOTENCY_TABLE}-ledger"
QUARANTINE_QUEUE = "quarantine"


@dataclass
class ConsumerEnvironment:
    """A running environment (see :func:`consumer_environment`)."""

    endpoint_url: str
    region: str
    environment: dict[str, str]
    """Every variable set (the function's and the endpoint's)."""
    table_names: dict[str, str] = field(default_factory=dict)
    """Each of your tables: its environment variable -> its name."""

    @property
    def idempotency_table_name(self) -> str:
        return self.environment[environment_variables.IDEMPOTENCY_TABLE_ENV]

    @property
    def ledger_table_name(self) -> str | None:
        """The ledger table (``CDC_LEDGER_TABLE_NAME``); None with ``ledger=False``."""
        return self.environment.get(environment_variables.LEDGER_TABLE_ENV)

    @property
    def quarantine_queue_url(self) -> str:
        return self.environment[environment_variables.QUARANTINE_QUEUE_ENV]

    def client(self, service: str) -> Any:
        """A boto3 client bound to the local endpoint."""
        return boto3.client(
            service,
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )

    def import_handler(self, module: str) -> ModuleType:
        """Import ``module`` from the handler directory afresh (a module imported in an earlier
        environment would keep clients of that one's endpoint)."""
        sys.modules.pop(module, None)
        return importlib.import_module(module)

    def quarantined(self) -> list[dict[str, Any]]:
        """The messages in the quarantine queue (each a poison record with its error), read
        without deleting them."""
        sqs = self.client("sqs")
        found: list[dict[str, Any]] = []
        while True:
            batch = sqs.receive_message(
                QueueUrl=self.quarantine_queue_url, MaxNumberOfMessages=10, VisibilityTimeout=30
            ).get("Messages", [])
            if not batch:
                return found
            found += [json.loads(message["Body"]) for message in batch]


@contextmanager
def consumer_environment(
    handler_dir: str | Path | None = None,
    *,
    consumer_name: str = "test-consumer",
    tables: Mapping[str, str] | None = None,
    environment: Mapping[str, str] | None = None,
    region: str = DEFAULT_REGION,
    ledger: bool = True,
) -> Iterator[ConsumerEnvironment]:
    """The environment a StreamConsumer gives its function, on 127.0.0.1.

    :param handler_dir: the directory of your handler module (``code=Code.from_asset(...)``),
        put first on ``sys.path``. Default: none added.
    :param consumer_name: ``CDC_CONSUMER_NAME``, which namespaces the markers.
    :param tables: tables of yours to create, each environment variable -> its partition key
        (a string attribute), e.g. ``{"TOTALS_TABLE_NAME": "pk"}`` as ``grant_view_table(...,
        env_var="TOTALS_TABLE_NAME")`` sets it; the table's name goes in the variable.
    :param environment: more variables for the function (``StreamConsumer(environment=...)``).
    :param region: the region set for boto3 (``AWS_REGION``, ``AWS_DEFAULT_REGION``).
    :param ledger: create the ledger table and set ``CDC_LEDGER_TABLE_NAME``, as a
        StreamConsumer does with the ``IdempotencyTable`` it makes or is given (the runtime then
        writes one ledger entry per transaction). Default True, so a test runs the bookkeeping
        the deployed function runs; False: per-record markers, as with an idempotency table
        given as a plain ``ITable`` (no ledger table beside it).
    """
    from moto.server import ThreadedMotoServer  # the testing extra

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    saved_environ, saved_path = dict(os.environ), list(sys.path)
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        # Every moto server of a process shares one backend: start from nothing.
        urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST"))
        env = _prepare(
            url, region, consumer_name, dict(tables or {}), dict(environment or {}), ledger
        )
        if handler_dir is not None:
            sys.path.insert(0, str(Path(handler_dir).resolve()))
        yield env
    finally:
        os.environ.clear()
        os.environ.update(saved_environ)
        sys.path[:] = saved_path
        server.stop()


def _prepare(
    url: str,
    region: str,
    consumer_name: str,
    tables: dict[str, str],
    extra: dict[str, str],
    ledger: bool,
) -> ConsumerEnvironment:
    endpoint = {
        "AWS_ENDPOINT_URL": url,
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        **FAKE_CREDENTIALS,
    }
    os.environ.update(endpoint)
    env = ConsumerEnvironment(endpoint_url=url, region=region, environment=dict(endpoint))
    _create_table(env, IDEMPOTENCY_TABLE, ID_ATTRIBUTE)
    bookkeeping = {environment_variables.IDEMPOTENCY_TABLE_ENV: IDEMPOTENCY_TABLE}
    if ledger:
        _create_table(env, LEDGER_TABLE, ID_ATTRIBUTE, sort_key=SORT_ATTRIBUTE)
        bookkeeping[environment_variables.LEDGER_TABLE_ENV] = LEDGER_TABLE
    queue_url = env.client("sqs").create_queue(QueueName=QUARANTINE_QUEUE)["QueueUrl"]
    for variable, key in tables.items():
        name = variable.lower().removesuffix("_name").replace("_", "-")
        _create_table(env, name, key)
        env.table_names[variable] = name
    env.environment.update(
        {
            environment_variables.CONSUMER_NAME_ENV: consumer_name,
            **bookkeeping,
            environment_variables.QUARANTINE_QUEUE_ENV: queue_url,
            **env.table_names,
            **extra,
        }
    )
    os.environ.update(env.environment)
    return env


def _create_table(
    env: ConsumerEnvironment, name: str, key: str, sort_key: str | None = None
) -> None:
    """An on-demand table keyed by the string ``key`` (and ``sort_key``)."""
    keys = [(key, "HASH")] + ([(sort_key, "RANGE")] if sort_key else [])
    env.client("dynamodb").create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"} for k, _ in keys],
        KeySchema=[{"AttributeName": k, "KeyType": kind} for k, kind in keys],
        BillingMode="PAY_PER_REQUEST",
    )
