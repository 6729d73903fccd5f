"""The redrive function's scheduled check: how long the oldest failed batch has waited, where AWS
publishes no such metric.

SQS publishes ``ApproximateAgeOfOldestMessage`` for a queue; S3 publishes nothing about the age
of a bucket's objects, and its lifecycle deletes a failed batch its retention after it was
written, alarm acknowledged or not. So the construct's schedule invokes the redrive function with
``{"check": "failure-age"}`` (:data:`~cdc_consumer.redrive_shapes.FAILURE_AGE_CHECK`); the function
asks
the kind of its on-failure destination (:mod:`cdc_consumer.redrive.sources`) for the age of the
oldest failure it keeps, replays nothing, and prints one EMF line with
:data:`~cdc_consumer.metric_names.OLDEST_FAILURE_AGE` (dimension Consumer), which the construct's
age alarm watches (the kind's ``oldest_failure_age(where, client, now, environ)``: the bucket's
measures the consumer's mappings' objects, :mod:`~cdc_consumer.redrive.mapping_prefixes`). A
kind without ``oldest_failure_age`` (a queue: SQS measures it) is not
measured here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import boto3

from cdc_consumer.environment_variables import CONSUMER_NAME_ENV, METRICS_NAMESPACE_ENV
from cdc_consumer.metric_names import (
    CONSUMER_DIMENSION,
    DEFAULT_METRICS_NAMESPACE,
    OLDEST_FAILURE_AGE,
)
from cdc_consumer.redrive import sources
from cdc_consumer.redrive.messages import Source
from cdc_consumer.redrive_shapes import FAILURE_AGE_CHECK

__all__ = ["age_line", "check_failure_age"]


def check_failure_age(
    environ: Mapping[str, str], *, s3_client: Any = None, now: datetime | None = None
) -> dict[str, Any]:
    """Measure the age of the oldest failed batch of the consumer's on-failure destination and
    print its EMF line; the result says what was measured (``measured`` False: the destination
    is not one this check measures, or the consumer has none)."""
    where = sources.located(Source.ON_FAILURE, environ)
    kind = sources.kind_for(Source.ON_FAILURE, where) if where else None
    measure = getattr(kind, "oldest_failure_age", None)
    if where is None or measure is None:
        return {"check": FAILURE_AGE_CHECK, "measured": False, "where": where}
    now = now or datetime.now(UTC)
    age = measure(where, s3_client or boto3.client("s3"), now, environ)
    consumer = environ.get(CONSUMER_NAME_ENV, "")
    namespace = environ.get(METRICS_NAMESPACE_ENV) or DEFAULT_METRICS_NAMESPACE
    print(json.dumps(age_line(consumer, namespace, age, int(now.timestamp() * 1000))))
    return {"check": FAILURE_AGE_CHECK, "measured": True, "where": where, "ageSeconds": age}


def age_line(consumer: str, namespace: str, age: int, now_ms: int | None = None) -> dict[str, Any]:
    """The embedded-metric-format record of :data:`OLDEST_FAILURE_AGE` for ``consumer``."""
    return {
        "_aws": {
            "Timestamp": now_ms if now_ms is not None else int(time.time() * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": namespace,
                    "Dimensions": [[CONSUMER_DIMENSION]],
                    "Metrics": [{"Name": OLDEST_FAILURE_AGE.name, "Unit": OLDEST_FAILURE_AGE.unit}],
                }
            ],
        },
        CONSUMER_DIMENSION: consumer,
        OLDEST_FAILURE_AGE.name: age,
    }
