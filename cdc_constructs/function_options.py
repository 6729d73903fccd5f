"""The consumer's Lambda function: given code, or an existing function, and its settings."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from cdc_consumer import defaults as runtime_defaults

from cdc_constructs import defaults
from cdc_constructs.exceptions import Problem
from cdc_constructs.handler_check import check_handler_on_disk
from cdc_constructs.redrive import consumer_timeout_of
from cdc_constructs.validation import (
    check_function_timeout,
    check_instance,
    check_name,
    check_whole_number,
)

__all__ = ["HANDLER_DOCS", "FunctionOptions"]

HANDLER_DOCS = (
    "https://github.com/cdc-constructs/cdc-constructs/blob/main/docs/getting-started.md"
    "#3-a-table-and-a-consumer"
)
"""Where the docs show a handler to start from (named in the error raised when a consumer is
given no code): the library ships no handler of its own, and an installed library has no
example beside it (tests/docs/test_docs.py checks that the page has the section)."""

# Props that configure a function this library makes; refused with an existing ``function``.
_MADE_FUNCTION_PROPS = (
    "code",
    "handler",
    "memory_size",
    "timeout",
    "tracing",
    "reserved_concurrent_executions",
    "log_group",
)


@dataclass(frozen=True)
class FunctionOptions:
    """The consumer function's props.

    :param code: the function code; required unless ``function`` is given (the library ships
        no handler: Getting started has one to start from, in its section "3. A table and a
        consumer").
    :param handler: the handler string (module.function); required with ``code``. With
        ``lambda_.Code.from_asset``, the module and its function are looked up in the asset
        at synthesis (read, not imported) and a miss is refused, naming what exists
        (:mod:`~cdc_constructs.handler_check`).
    :param function: an existing ``lambda_.Function`` instead: the layer and environment are
        added to it, its role gets the grants. ``code``, ``handler``, ``memory_size``,
        ``timeout``, ``tracing`` and ``reserved_concurrent_executions`` are then refused (set
        them on the function); the redrive reads the function's own timeout.
    :param memory_size: Default 256 MB (explicit, so cdk-nag's default-memory rule passes;
        enough for boto3 and a batch of 100).
    :param timeout: Default 60 s: a batch of 100 takes a few transactions, and the runtime
        stops and reports near the deadline instead of timing out.
    :param log_retention: Default one month (the function's and the redrive's log groups):
        long enough to investigate an alarm, short enough to bound cost.
    :param tracing: Default none (the runtime does not use the X-Ray SDK; lag and loss are
        measured by metrics and alarms).
    :param environment: extra environment variables. Default none.
    :param reserved_concurrent_executions: Default none (a stream consumer's concurrency is
        bounded by shards times parallelization factor anyway).
    :param log_group: an existing log group for the function, as on aws-cdk-lib's
        ``Function``. Default: a new one with ``log_retention`` (and ``log_encryption_key``).
        The redrive keeps its own log group.
    :param log_encryption_key: a customer-managed KMS key for the log groups made here (the
        function's and the redrive's): log lines can carry item values, as error messages
        quote them. Default: CloudWatch Logs' own encryption. A key made in this app gets the
        key-policy statement CloudWatch Logs needs; an imported key's policy must allow
        ``logs.<region>.amazonaws.com`` already.
    """

    code: lambda_.Code | None = None
    handler: str | None = None
    function: lambda_.Function | None = None
    memory_size: Any = None
    timeout: Duration | None = None
    log_retention: logs.RetentionDays = defaults.LOG_RETENTION
    tracing: lambda_.Tracing | None = None
    environment: Mapping[str, str] | None = None
    reserved_concurrent_executions: Any = None
    log_group: logs.ILogGroup | None = None
    log_encryption_key: kms.IKey | None = None

    @property
    def memory_mb(self) -> Any:
        """``memory_size``, or the default (256 MB)."""
        return defaults.MEMORY_SIZE_MB if self.memory_size is None else self.memory_size

    @property
    def function_timeout(self) -> Duration:
        """``timeout``, or the default (60 s), for a function made here."""
        return self.timeout or Duration.seconds(defaults.TIMEOUT_SECONDS)

    @property
    def consumer_timeout(self) -> Duration | None:
        """The timeout the consumer runs with: an existing function's own, or ours."""
        if self.function is not None:
            return consumer_timeout_of(self.function)
        return self.function_timeout

    @property
    def function_code(self) -> lambda_.Code:
        """``code`` (checked by :meth:`problems` before a function is made)."""
        assert self.code is not None, "problems() refuses a function without code"
        return self.code

    @property
    def function_handler(self) -> str:
        assert self.handler is not None, "problems() refuses code without a handler"
        return self.handler

    def problems(self) -> list[Problem]:
        found = self._code_problems()
        found += check_whole_number(
            "memory_size", self.memory_mb, *defaults.LAMBDA_MEMORY_RANGE_MB, "MB"
        )
        timeout_problems = check_function_timeout("timeout", self.function_timeout)
        found += timeout_problems
        if not timeout_problems:
            found += self._deadline_problems()
        found += check_instance(
            "log_retention", self.log_retention, logs.RetentionDays, "a logs.RetentionDays"
        )
        found += check_instance("tracing", self.tracing, lambda_.Tracing, "a lambda_.Tracing")
        found += _check_environment(self.environment)
        if self.log_group is not None and self.log_encryption_key is not None:
            found.append(
                Problem(
                    "log_group/log_encryption_key",
                    "both given",
                    "one of them: a given log group keeps its own encryption",
                )
            )
        if self.reserved_concurrent_executions is not None:
            found += check_whole_number(
                "reserved_concurrent_executions",
                self.reserved_concurrent_executions,
                0,
                math.inf,
                "0 stops the consumer; None (the default) reserves nothing",
            )
        return found

    def _deadline_problems(self) -> list[Problem]:
        """The timeout the consumer runs with (ours, or an existing function's own: Lambda's
        3 s when it sets none) must fit one record after the runtime's safety margin."""
        if self.function is None:
            return check_fits_one_record("timeout", self.function_timeout)
        timeout = consumer_timeout_of(self.function)
        if timeout is None:
            return []
        return check_fits_one_record("function", timeout, self.function.node.path)

    def _code_problems(self) -> list[Problem]:
        if self.function is not None:
            return self._existing_function_problems()
        if self.code is None:
            return [
                Problem(
                    "code",
                    None,
                    "code + handler (your consumer: Getting started shows one, "
                    f"{HANDLER_DOCS}), or an existing function",
                )
            ]
        if not self.handler:
            return [
                Problem(
                    "handler",
                    self.handler,
                    "the handler string (module.function) for the given code",
                )
            ]
        return check_name("handler", self.handler) or check_handler_on_disk(self.code, self.handler)

    def _existing_function_problems(self) -> list[Problem]:
        found = []
        if not isinstance(self.function, lambda_.Function):
            found.append(
                Problem(
                    "function",
                    self.function,
                    "a lambda_.Function made in this app (its environment and layers are set)",
                )
            )
        found += _check_layer_runtime(self.function)
        given = {
            name: getattr(self, name)
            for name in _MADE_FUNCTION_PROPS
            if getattr(self, name) is not None
        }
        if given:
            found.append(
                Problem(
                    "/".join(given),
                    tuple(given.values()),
                    "omitted when an existing function is given: set them on that function",
                )
            )
        return found


def _check_environment(environment: Any) -> list[Problem]:
    if environment is None:
        return []
    allowed = "a dict of environment variable names to string values"
    if not isinstance(environment, Mapping):
        return [Problem("environment", environment, allowed)]
    return [
        Problem(f"environment[{name!r}]", value, allowed)
        for name, value in environment.items()
        if not isinstance(name, str) or not name or not isinstance(value, str)
    ]


def _check_layer_runtime(function: Any) -> list[Problem]:
    """An existing function's runtime must be one the consumer runtime layer declares:
    aws-cdk-lib refuses to add the layer otherwise (reported here with the other problems)."""
    runtime = getattr(function, "runtime", None) if isinstance(function, lambda_.Function) else None
    if runtime is None or any(runtime.runtime_equals(r) for r in defaults.LAYER_RUNTIMES):
        return []
    names = ", ".join(r.name for r in defaults.LAYER_RUNTIMES)
    return [
        Problem(
            "function",
            f"{function.node.path} on runtime {runtime.name}",
            f"a function on a runtime the consumer runtime layer supports ({names})",
        )
    ]


def check_fits_one_record(prop: str, timeout: Duration, where: str = "") -> list[Problem]:
    """The runtime's deadline rule (``cdc_consumer.defaults``, the one definition the runtime
    stops by): it stops taking records a safety margin before the deadline, a fifth of the
    timeout between 0.5 and 5 s, and one record needs :data:`MIN_RECORD_TIME_MS` after it."""
    timeout_ms = int(timeout.to_milliseconds())
    if runtime_defaults.fits_one_record(timeout_ms):
        return []
    margin = runtime_defaults.safety_margin_ms(timeout_ms)
    value = (
        f"{where} with a timeout of {timeout_ms / 1000:g} s"
        if where
        else f"{timeout_ms / 1000:g} s"
    )
    return [
        Problem(
            prop,
            value,
            f"a timeout of at least {runtime_defaults.MIN_FUNCTION_TIMEOUT_SECONDS} s: the runtime "
            f"stops taking records a safety margin before the deadline (a fifth of the timeout, "
            f"between {runtime_defaults.MIN_SAFETY_MARGIN_MS} and "
            f"{runtime_defaults.MAX_SAFETY_MARGIN_MS} ms; here {margin} ms) and one record needs "
            f"{runtime_defaults.MIN_RECORD_TIME_MS} ms after it, so this timeout could take no "
            "record: every batch would fail until it reached the on-failure destination",
        )
    ]
