"""The names one invocation uses: explicit arguments first, then the function's environment."""

from __future__ import annotations

import os
from dataclasses import dataclass

from cdc_consumer import environment_variables, metric_names
from cdc_consumer.exceptions import ConfigurationError


@dataclass(frozen=True)
class Settings:
    """Names resolved for one invocation (explicit arguments first, then the environment)."""

    consumer: str
    idempotency_table: str
    quarantine_queue_url: str
    metrics_namespace: str
    #: The ledger table (``CDC_LEDGER_TABLE_NAME``); None: per-record markers.
    ledger_table: str | None = None


def resolve_settings(
    consumer_name: str | None,
    idempotency_table: str | None,
    quarantine_queue_url: str | None,
    metrics_namespace: str | None,
) -> Settings:
    """The names to use; :class:`ConfigurationError` names every missing one and its variable."""
    problems = []
    resolved: dict[str, str] = {}
    for attribute, given, variable in (
        ("consumer_name", consumer_name, environment_variables.CONSUMER_NAME_ENV),
        ("idempotency_table", idempotency_table, environment_variables.IDEMPOTENCY_TABLE_ENV),
        ("quarantine_queue_url", quarantine_queue_url, environment_variables.QUARANTINE_QUEUE_ENV),
    ):
        value = given or os.environ.get(variable) or ""
        if not value:
            problems.append(f"{attribute} (pass it, or set the environment variable {variable})")
        resolved[attribute] = value
    if problems:
        raise ConfigurationError("StreamProcessor is missing: " + "; ".join(problems))
    return Settings(
        consumer=resolved["consumer_name"],
        idempotency_table=resolved["idempotency_table"],
        quarantine_queue_url=resolved["quarantine_queue_url"],
        metrics_namespace=metrics_namespace
        or os.environ.get(environment_variables.METRICS_NAMESPACE_ENV)
        or metric_names.DEFAULT_METRICS_NAMESPACE,
        ledger_table=os.environ.get(environment_variables.LEDGER_TABLE_ENV) or None,
    )
