"""The segment function's settings, from its environment (what ViewBackfill sets)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdc_consumer import environment_variables, metric_names
from cdc_consumer.backfill import defaults
from cdc_consumer.exceptions import ConfigurationError


@dataclass(frozen=True)
class BackfillSettings:
    """What one segment function works with (see :data:`contract.BACKFILL_ENVIRONMENT`)."""

    table: str
    stream_arn: str
    consumer_function: str
    consumer: str
    idempotency_table: str
    metrics_namespace: str = metric_names.DEFAULT_METRICS_NAMESPACE
    items_per_second: float | None = None
    page_size: int = defaults.PAGE_SIZE
    skew_seconds: int = defaults.SKEW_SECONDS
    max_concurrency: int = 1
    """Segments run at once (the Map's MaxConcurrency): the start step plans at least as many."""
    execution_timeout_seconds: float | None = None
    """How long the state machine lets an execution run (None: not run by one)."""
    reserve_seconds: float | None = None
    """None: a share of the invocation's timeout (see :mod:`cdc_consumer.backfill.defaults`)."""
    filters: tuple[Any, ...] = ()
    """The mapping's filter patterns: a row none matches is not handed over."""

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> BackfillSettings:
        """The settings; :class:`ConfigurationError` names every missing or wrong variable."""
        env = os.environ if environ is None else environ
        required = {
            "table": environment_variables.BACKFILL_TABLE_ENV,
            "stream_arn": environment_variables.STREAM_ARN_ENV,
            "consumer_function": environment_variables.CONSUMER_FUNCTION_NAME_ENV,
            "consumer": environment_variables.CONSUMER_NAME_ENV,
            "idempotency_table": environment_variables.IDEMPOTENCY_TABLE_ENV,
        }
        problems = [
            f"{variable} is not set" for variable in required.values() if not env.get(variable)
        ]
        numbers: dict[str, float | None] = {}
        for field, variable, kind in (
            ("items_per_second", environment_variables.BACKFILL_ITEMS_PER_SECOND_ENV, float),
            ("page_size", environment_variables.BACKFILL_PAGE_SIZE_ENV, int),
            ("skew_seconds", environment_variables.BACKFILL_SKEW_SECONDS_ENV, int),
            ("reserve_seconds", environment_variables.BACKFILL_RESERVE_SECONDS_ENV, float),
            ("max_concurrency", environment_variables.BACKFILL_MAX_CONCURRENCY_ENV, int),
            (
                "execution_timeout_seconds",
                environment_variables.BACKFILL_EXECUTION_TIMEOUT_ENV,
                float,
            ),
        ):
            value = env.get(variable)
            if not value:
                continue
            try:
                number = kind(value)
            except ValueError:
                number = -1
            if number < 0 or (number == 0 and field != "skew_seconds"):
                problems.append(f"{variable} must be a positive number, got {value!r}")
            numbers[field] = number
        filters = _filters(env.get(environment_variables.CONSUMER_FILTERS_ENV), problems)
        if problems:
            raise ConfigurationError("the backfill segment function: " + "; ".join(problems))
        given: dict[str, Any] = {field: env[variable] for field, variable in required.items()}
        given.update({k: v for k, v in numbers.items() if v is not None})
        namespace = (
            env.get(environment_variables.METRICS_NAMESPACE_ENV)
            or metric_names.DEFAULT_METRICS_NAMESPACE
        )
        return cls(filters=filters, metrics_namespace=namespace, **given)

    def reserve_for(self, timeout_ms: int | None) -> float:
        """Seconds to keep in hand before the deadline, for an invocation of ``timeout_ms``."""
        if self.reserve_seconds is not None:
            return self.reserve_seconds
        if timeout_ms is None:
            return defaults.MIN_RESERVE_SECONDS
        share = timeout_ms / 1000 * defaults.RESERVE_SHARE
        return min(defaults.MAX_RESERVE_SECONDS, max(defaults.MIN_RESERVE_SECONDS, share))


def _filters(text: str | None, problems: list[str]) -> tuple[Any, ...]:
    if not text:
        return ()
    try:
        filters = json.loads(text)
    except ValueError as error:
        problems.append(f"{environment_variables.CONSUMER_FILTERS_ENV} is not JSON ({error})")
        return ()
    if not isinstance(filters, list):
        problems.append(
            f"{environment_variables.CONSUMER_FILTERS_ENV} must be a JSON list of patterns"
        )
        return ()
    return tuple(filters)
