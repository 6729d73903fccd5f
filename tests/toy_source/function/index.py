"""The toy source's consumer: each change's latest image in the view table, by version."""

from __future__ import annotations

import os
from typing import Any

import boto3
import toy_plugin  # noqa: F401  (registers the toy change log's routes)
from cdc_consumer import LatestImage, StreamProcessor

VIEW_TABLE_ENV = "VIEW_TABLE_NAME"

processor = StreamProcessor()
processor.projection(LatestImage(table_name_env=VIEW_TABLE_ENV))


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point (``index.handler``). First one call through the function's default
    boto3 session: where the local pipeline's fault plan injects its crashes."""
    boto3.client("dynamodb").describe_table(TableName=os.environ[VIEW_TABLE_ENV])
    return processor.handle(event, context)
