"""What ``cdk destroy`` leaves behind in both reference stacks (issue 24 §2): every resource that
may hold the only copy of a record survives a destroy and a replacement, and
docs/operations.md lists what stays."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app import KINESIS_STACK_NAME, STACK_NAME
from tests.cdc_constructs.support import REPO_ROOT, Synthesized

RECORD_HOLDERS = (
    "AWS::DynamoDB::GlobalTable",
    "AWS::DynamoDB::Table",
    "AWS::Kinesis::Stream",
    "AWS::S3::Bucket",
    "AWS::SQS::Queue",
)
"""Tables, streams, buckets and queues: in the reference stacks each holds records (items,
changes, failed batches, poison records, archived orders, undelivered events)."""


@pytest.fixture(scope="module", params=[STACK_NAME, KINESIS_STACK_NAME])
def template(request: pytest.FixtureRequest, reference: Synthesized) -> dict[str, Any]:
    path = reference.assembly_dir / f"{request.param}.template.json"
    return json.loads(path.read_text())


def test_every_table_stream_bucket_and_queue_is_retained(template: dict[str, Any]) -> None:
    holders = {
        logical_id: (
            resource["Type"],
            resource.get("DeletionPolicy"),
            resource.get("UpdateReplacePolicy"),
        )
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] in RECORD_HOLDERS
    }
    assert any(kind == "AWS::SQS::Queue" for kind, _, _ in holders.values())
    deleted = {lid: found for lid, found in holders.items() if found[1:] != ("Retain", "Retain")}
    assert deleted == {}, "deleted or replaced with the stack, with what they hold"


def test_the_operations_page_says_what_cdk_destroy_leaves_and_what_it_costs() -> None:
    page = (REPO_ROOT / "docs" / "operations.md").read_text()
    start = page.index("## What `cdk destroy` leaves behind")
    section = page[start : page.find("\n## ", start + 1)]
    for left in (
        "quarantine queue",
        "failed-batch bucket",
        "dead-letter queue",
        "archive",
        "Kinesis stream",
        "removal_policy",
        "$",
    ):
        assert left in section, left
