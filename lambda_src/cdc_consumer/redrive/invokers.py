"""Invokers: how redrive delivers a stream-shaped event to the consumer (interfaces §9)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import boto3
from botocore.config import Config

from cdc_consumer.exceptions import InvocationError
from cdc_consumer.redrive.defaults import LAMBDA_READ_TIMEOUT_SECONDS

__all__ = ["CallableInvoker", "Invoker", "LambdaInvoker", "LocalContext"]


class Invoker(Protocol):
    """Delivers one stream-shaped event to the consumer (interfaces §9) and returns its response.

    Raises :class:`InvocationError` when the whole invocation failed.
    """

    def invoke(self, event: dict[str, Any]) -> dict[str, Any] | None: ...


@dataclass
class LambdaInvoker:
    """Invokes the consumer function synchronously (``RequestResponse``).

    A response with ``FunctionError`` (the handler raised or timed out) raises
    :class:`InvocationError`. ``lambda_client`` defaults to one with a read timeout longer than
    Lambda's 15 minute maximum, so a long invocation is not cut off and invoked a second time.
    """

    function_name: str
    lambda_client: Any = None

    def __post_init__(self) -> None:
        if self.lambda_client is None:
            self.lambda_client = boto3.client(
                "lambda", config=Config(read_timeout=LAMBDA_READ_TIMEOUT_SECONDS)
            )

    def invoke(self, event: dict[str, Any]) -> dict[str, Any] | None:
        response = self.lambda_client.invoke(
            FunctionName=self.function_name,
            InvocationType="RequestResponse",
            Payload=json.dumps(event).encode(),
        )
        raw = response["Payload"].read()
        payload = json.loads(raw) if raw else None
        if response.get("FunctionError"):
            error_type = payload.get("errorType") if isinstance(payload, dict) else None
            detail = (
                payload
                if not isinstance(payload, dict)
                else (f"{error_type or ''}: {payload.get('errorMessage', '')}")
            )
            raise InvocationError(
                f"function {self.function_name} failed ({response['FunctionError']}): {detail}",
                error_type=str(error_type) if error_type else None,
            )
        return payload


@dataclass
class LocalContext:
    """A Lambda context for handlers run in-process: the attributes handlers commonly read.

    ``timeout_seconds`` defaults to 300, a typical consumer timeout, so a runtime that stops near
    its deadline behaves as it would in Lambda.
    """

    function_name: str = "local-consumer"
    timeout_seconds: float = 300.0
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    _started: float = field(default_factory=time.monotonic, repr=False)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:local:000000000000:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        elapsed = time.monotonic() - self._started
        return max(0, int((self.timeout_seconds - elapsed) * 1000))


@dataclass
class CallableInvoker:
    """Calls a handler ``handler(event, context)`` in this process (the local pipeline, tests).

    The event goes through JSON first, as it would over the Lambda API, so the handler cannot
    change redrive's copy and gets only what JSON carries. An exception from the handler raises
    :class:`InvocationError`, as a function error would, whose ``error_type`` is the
    exception's ``error_type`` when it has one (a function error Lambda would report under
    that ``errorType``), else its class name.
    """

    handler: Callable[[dict[str, Any], Any], Any]
    timeout_seconds: float = 300.0
    function_name: str = "local-consumer"

    def invoke(self, event: dict[str, Any]) -> dict[str, Any] | None:
        context = LocalContext(
            function_name=self.function_name, timeout_seconds=self.timeout_seconds
        )
        try:
            response = self.handler(json.loads(json.dumps(event)), context)
        except Exception as error:
            # A handler that stands for a function (the local pipeline's) says which error the
            # function reported, as Lambda's errorType does; else the exception is the error.
            error_type = getattr(error, "error_type", None) or type(error).__name__
            raise InvocationError(
                f"handler {getattr(self.handler, '__name__', self.handler)!s} raised"
                f" {type(error).__name__}: {error}",
                error_type=error_type,
            ) from error
        return json.loads(json.dumps(response)) if response is not None else None
