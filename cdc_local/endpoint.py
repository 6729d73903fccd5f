"""A local AWS endpoint: moto's server, in this process, on 127.0.0.1 over HTTP."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config

#: Credentials and region for the local endpoint: the operator's (cdc_local.authorization),
#: allowed everything when IAM is enforced; fixed values keep every client in the process pointed
#: at the same moto account.
LOCAL_REGION = "us-east-1"
LOCAL_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@dataclass
class LocalEndpoint:
    """moto's threaded server on 127.0.0.1 (an ephemeral port unless one is given).

    Every moto server in one process serves the same in-memory backend: two endpoints started
    in one process see each other's resources (:meth:`reset` empties it for both).

    Use as a context manager, or call :meth:`start` / :meth:`stop`. :meth:`client` makes boto3
    clients bound to it; :meth:`environment` gives the variables that point boto3 code (such as a
    Lambda handler run in-process) at it.
    """

    port: int = 0
    region: str = LOCAL_REGION
    _server: Any = field(default=None, init=False, repr=False)
    url: str = field(default="", init=False)

    def start(self) -> LocalEndpoint:
        # Imported here so that importing cdc_local does not pull in moto's server (flask).
        from moto.server import ThreadedMotoServer

        from cdc_local import authorization, moto_patches, request_lock, shards

        moto_patches.apply()  # transactions snapshot what they touch, not whole tables
        request_lock.apply()  # one DynamoDB request at a time: no lost update, no torn rollback
        shards.apply()  # streams serve parent and child shards once a shard rolls over
        # IAM, when enforced, checks what AWS checks; the operator's credentials allow all.
        authorization.apply(
            (LOCAL_CREDENTIALS["aws_access_key_id"], LOCAL_CREDENTIALS["aws_secret_access_key"])
        )

        # The server logs every request through werkzeug at INFO; keep only its warnings.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.url = f"http://{host}:{port}"
        return self

    def in_region(self, region: str) -> LocalEndpoint:
        """This endpoint's server, seen from ``region``: its clients and :meth:`environment`
        name that region, so what they create lives there (moto keeps each region's resources
        apart, by the region a request is signed for). The view does not own the server:
        stopping it leaves the server running."""
        if region == self.region:
            return self
        view = LocalEndpoint(port=self.port, region=region)
        view.url = self.url
        return view

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> LocalEndpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget every resource created so far (moto's reset API), and stamp new stream
        records with the wall clock again (a pipeline's clock goes with its resources)."""
        import time
        import urllib.request

        from cdc_local.retention import stamp_records_with

        urllib.request.urlopen(
            urllib.request.Request(f"{self.url}/moto-api/reset", method="POST")
        ).read()
        stamp_records_with(time.time)

    def client(
        self, service: str, credentials: Mapping[str, str] | None = None, **config: Any
    ) -> Any:
        """A boto3 client for ``service`` bound to this endpoint, with the operator's
        credentials (allowed everything) unless ``credentials`` (``boto3.client``'s keyword
        arguments, such as a role session's) are given."""
        return boto3.client(
            service,
            endpoint_url=self.url,
            region_name=self.region,
            config=Config(retries={"max_attempts": 2, "mode": "standard"}, **config),
            **(credentials or LOCAL_CREDENTIALS),
        )

    def environment(self) -> dict[str, str]:
        """Environment variables that point boto3 at this endpoint."""
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
            "AWS_ACCESS_KEY_ID": LOCAL_CREDENTIALS["aws_access_key_id"],
            "AWS_SECRET_ACCESS_KEY": LOCAL_CREDENTIALS["aws_secret_access_key"],
        }


@contextmanager
def patched_environ(values: dict[str, str]) -> Iterator[None]:
    """Set ``values`` in ``os.environ`` for the duration of the block, then restore."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old
