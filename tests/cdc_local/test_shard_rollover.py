"""Shard rollover on the local pipeline (cdc_local.shards): a parent shard read and settled
before its child, the on-failure objects naming the shard each batch came from, and a redrive
that never lets the child's newer change of an item land before the parent's older one (issue
23 §2, end to end: a moto stream has one shard, so the local mapping models the lineage)."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Any

from cdc_consumer.redrive import CallableInvoker, Redrive

from cdc_local.runner import LocalPipeline
from tests.cdc_local import recorder
from tests.cdc_local.helpers import put

Handler = Callable[[dict[str, Any], Any], Any]


def objects(pipeline: LocalPipeline) -> list[dict[str, Any]]:
    """The on-failure objects of the stack's bucket, each with its key."""
    s3, bucket = pipeline.client("s3"), pipeline.bucket_name("Failures")
    found = []
    for item in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        body = json.loads(s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read())
        found.append({"key": item["Key"], **body})
    return found


def latest_status(view: dict[str, str], still_failing: Collection[str] = ()) -> Handler:
    """A consumer of a latest-status view (order matters: the last change applied wins); the
    records whose status is in ``still_failing`` fail the invocation (the fix is not in)."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        for record in event["Records"]:
            image = record["dynamodb"]["NewImage"]
            if image["status"]["S"] in still_failing:
                raise ValueError(f"cannot apply status {image['status']['S']}")
            view[image["pk"]["S"]] = image["status"]["S"]
        return {"batchItemFailures": []}

    return handler


def redrive(pipeline: LocalPipeline, handler: Handler) -> Any:
    (mapping,) = pipeline.mappings.values()
    return Redrive(
        invoker=CallableInvoker(handler),
        stream_arn=mapping.stream_arn,
        sqs_client=pipeline.client("sqs"),
        streams_client=pipeline.client("dynamodbstreams"),
        s3_client=pipeline.client("s3"),
        function_name=mapping.function.arn,
        max_attempts=1,
    ).run_bucket(pipeline.bucket_name("Failures"))


def test_a_child_shards_failed_batch_is_redriven_only_after_its_parents(
    pipeline_for: Callable[..., LocalPipeline],
) -> None:
    """order-1 is paid in the parent shard, then the shard rolls over and order-1 is shipped in
    the child; both batches fail (retries 0) and land in the bucket, each under its shard. The
    mapping read the parent before the child. A redrive whose fix does not handle "paid" yet
    holds the child's batch back; once fixed, "paid" then "shipped" are applied, and the view
    ends with the newer status."""
    pipeline = pipeline_for("AgeToS3")
    put(pipeline, "order-1", status="paid", mode="fail")
    pipeline.drain()
    (parent,) = {o["DDBStreamBatchInfo"]["shardId"] for o in objects(pipeline)}
    child = pipeline.roll_shards()[pipeline.table_name("Items")]
    put(pipeline, "order-1", status="shipped", mode="fail")
    pipeline.drain()

    held = objects(pipeline)
    assert sorted(o["DDBStreamBatchInfo"]["shardId"] for o in held) == sorted([parent, child])
    assert all(f"/{o['DDBStreamBatchInfo']['shardId']}/" in o["key"] for o in held)
    streams = pipeline.client("dynamodbstreams")
    (mapping,) = pipeline.mappings.values()
    shards = streams.describe_stream(StreamArn=mapping.stream_arn)["StreamDescription"]["Shards"]
    assert {s["ShardId"]: s.get("ParentShardId") for s in shards}[child] == parent
    statuses = [
        r["dynamodb"]["NewImage"]["status"]["S"]
        for i in recorder.INVOCATIONS
        for r in i.event["Records"]
    ]
    assert statuses == ["paid", "shipped"]  # the parent was read (and settled) first

    view: dict[str, str] = {}
    report = redrive(pipeline, latest_status(view, still_failing={"paid"}))

    assert not report.ok and view == {}
    (failed,) = report.failed
    (kept,) = report.held
    assert f"/{parent}/" in failed.message_id and f"/{child}/" in kept.message_id
    assert f"shard {parent} is an ancestor of shard {child}" in kept.reason

    assert redrive(pipeline, latest_status(view)).ok
    assert view == {"order-1": "shipped"} and objects(pipeline) == []
