"""Delivering to an S3 on-failure destination as Lambda does: the invocation record with the
batch as ``payload``, one object per batch keyed ``aws/lambda/<ESM UUID>/<shard id>/YYYY/MM/DD/
YYYY-MM-DDTHH.MM.SS-<random UUID>``, after the ``ListBucket`` call AWS requires the role to
allow. The construct side is ``cdc_constructs.failure_kinds.bucket``; the redrive reads it with
``cdc_consumer.redrive.sources.bucket``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from cdc_consumer.redrive_shapes import ON_FAILURE_S3_PREFIX, StreamBatchInfo

from cdc_local.destinations.target import DeliveryTarget, batch_info

__all__ = ["BUCKET", "BucketDelivery", "s3_key"]


def s3_key(target: DeliveryTarget, shard_id: str, now: float) -> str:
    """The key Lambda writes a failed batch of ``shard_id`` under at ``now``."""
    moment = datetime.fromtimestamp(now, tz=UTC)
    return (
        f"{_prefix(target)}{shard_id}/{moment:%Y/%m/%d}/{moment:%Y-%m-%dT%H.%M.%S}-{uuid.uuid4()}"
    )


def _prefix(target: DeliveryTarget) -> str:
    return f"{ON_FAILURE_S3_PREFIX}{target.mapping_uuid}/"


class BucketDelivery:
    """An S3 bucket (``arn:aws:s3:::<bucket>``): keeps each batch whole."""

    service = "s3"

    def check(self, target: DeliveryTarget) -> None:
        """Any bucket ARN will do: a missing bucket fails the put, as in AWS."""

    def bucket(self, target: DeliveryTarget) -> str | None:
        return target.arn.split(":::", 1)[1]

    def send(
        self,
        client: Any,
        target: DeliveryTarget,
        record: Mapping[str, Any],
        event: Mapping[str, Any],
        now: float,
    ) -> None:
        bucket = self.bucket(target)
        # The calls AWS needs the role to allow for an S3 destination (Lambda developer
        # guide: s3:ListBucket, which IAM checks for ListObjectsV2, and s3:PutObject).
        client.list_objects_v2(Bucket=bucket, Prefix=ON_FAILURE_S3_PREFIX, MaxKeys=1)
        client.put_object(
            Bucket=bucket,
            Key=s3_key(target, batch_info(record)[StreamBatchInfo.SHARD_ID], now),
            Body=json.dumps({**record, "payload": json.dumps(event)}).encode(),
            ContentType="application/json",
        )

    def where(self, target: DeliveryTarget) -> str | None:
        return f"s3://{self.bucket(target)}/{_prefix(target)}"

    def peek(self, client: Any, target: DeliveryTarget) -> list[dict[str, Any]]:
        """This mapping's objects, each an invocation record with its ``payload``."""
        bucket = self.bucket(target)
        pages = client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=_prefix(target)
        )
        keys = sorted(item["Key"] for page in pages for item in page.get("Contents", []))
        return [
            json.loads(client.get_object(Bucket=bucket, Key=key)["Body"].read()) for key in keys
        ]

    def describe(self, target: DeliveryTarget) -> str:
        return f"S3 s3://{self.bucket(target)}/{_prefix(target)} (whole batches)"

    def label(self, target: DeliveryTarget) -> str | None:
        return f"on-failure bucket: {self.bucket(target)}"

    def redrive_options(
        self, target: DeliveryTarget, function_name: str
    ) -> tuple[list[str], list[str]] | None:
        # The function too: the run then keeps to its objects, and says which of its other
        # mappings' folders hold batches the narrowed run leaves (a replaced mapping's).
        scope = ["--consumer-function", function_name, "--mapping-uuid", target.mapping_uuid]
        return ["--bucket", str(self.bucket(target))], scope

    def beside_quarantine(self, target: DeliveryTarget) -> list[str]:
        bucket = str(self.bucket(target))
        return ["--on-failure-bucket", bucket, "--mapping-uuid", target.mapping_uuid]


BUCKET = BucketDelivery()
"""The S3 delivery kind."""
