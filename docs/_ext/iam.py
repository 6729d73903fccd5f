"""The IAM tables of docs/permissions.md, generated from the policies the constructs synthesize
(`make permissions`): each role of a sample app (a StreamConsumer with a view table, its
redrive, its ViewBackfill, a StreamFanOut, a TtlArchive, a KinesisConsumer), each statement's
actions, the resource it is scoped to, and why. tests/docs/test_permissions.py regenerates the
tables and fails when the page differs, or when a statement has no reason here (a new
permission must say why)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

PAGE = Path(__file__).resolve().parents[1] / "permissions.md"
BEGIN, END = "<!-- iam tables: begin (make permissions) -->", "<!-- iam tables: end -->"

# (role, resource, first action's prefix) -> why, the first match; role and resource are parts
# of the construct paths ("Role", "Redrive/Role"; "IdempotencyTable", "FailedBatches/Bucket").
REASONS: list[tuple[str, str, str, str]] = [
    (
        "SegmentFunction/Role",
        "Orders",
        "dynamodb",
        "scan the table's segments (DescribeTable: its key, size, stream)",
    ),
    (
        "SegmentFunction/Role",
        "IdempotencyTable",
        "dynamodb",
        "the backfill's plan and segments' progress records; the consumer's progress",
    ),
    ("SegmentFunction/Role", "Function", "lambda", "hand each page to the consumer, synchronously"),
    (
        "SegmentFunction/Role",
        "*",
        "lambda:ListEventSourceMappings",
        "the start step checks the consumer's mapping runs (no resource-level permission)",
    ),
    (
        "SegmentFunction/Role",
        "StateMachine",
        "states:ListExecutions",
        "the start step refuses a second execution of a running backfill",
    ),
    ("StateMachine/Role", "SegmentFunction", "lambda", "run the start step and each segment"),
    (
        "StateMachine/Role",
        "*",
        "logs",
        "deliver the execution's logs (no resource-level permission)",
    ),
    (
        "StateMachine/Role",
        "StateMachine",
        "states:StartExecution",
        "the Distributed Map starts its child executions",
    ),
    (
        "StateMachine/Role",
        "",
        "states",
        "describe, stop or redrive the Map Run's child executions (labelled executions)",
    ),
    ("", "LogGroup", "logs", "write the function's own log streams (the stack makes the group)"),
    ("", "Logs", "logs", "write the pipe's own log streams (the stack makes the group)"),
    ("Redrive/Role", "(stream)", "dynamodb", "find the stream's shards before a replay"),
    ("", "(stream)", "dynamodb", "poll the table's stream (the mapping reads as this role)"),
    (
        "",
        "*",
        "dynamodb:ListStreams",
        "the Lambda and Pipes guides list it for a stream source; no resource-level permission",
    ),
    (
        "Redrive/Role",
        "ChangeStream",
        "kinesis",
        "read a failed batch's records back, and the stream's retention, before a replay",
    ),
    ("", "ChangeStream", "kinesis", "poll the Kinesis stream (the mapping reads as this role)"),
    (
        "",
        "IdempotencyTable/LedgerTable",
        "dynamodb",
        "find a batch's ledger entries (one Query); write one entry per transaction",
    ),
    (
        "Redrive/Role",
        "IdempotencyTable",
        "dynamodb",
        "take and give back the consumer's redrive lease, that one item only"
        " (`dynamodb:LeadingKeys`): one redrive of the consumer at a time",
    ),
    (
        "",
        "IdempotencyTable",
        "dynamodb",
        "write each record's marker in the effect's transaction; read contributions per batch",
    ),
    ("Redrive/Role", "QuarantineQueue", "sqs", "read quarantined records, delete each replayed"),
    ("", "QuarantineQueue", "sqs", "quarantine a poison record, whole, with its error"),
    ("Redrive/Role", "FailedBatches/Bucket", "s3:ListBucket", "list the batches still to replay"),
    ("Redrive/Role", "FailedBatches/Bucket", "s3", "read the failed batches, delete each replayed"),
    ("", "FailedBatches/Bucket", "s3:ListBucket", "Lambda needs it for an S3 on-failure bucket"),
    ("", "FailedBatches/Bucket", "s3", "the mapping writes each batch it gives up on, whole"),
    ("Redrive/Role", "Function", "lambda", "replay records through the consumer, synchronously"),
    ("", "Totals", "dynamodb", "grant_view_table: the effect's TransactWriteItems actions"),
    (
        "ArchiveConsumer/Role",
        "Bucket",
        "s3:PutObject",
        "write each expired item's object, conditionally (`If-None-Match`), under the prefix",
    ),
    ("", "Bus", "events", "publish one event per matching change"),
    ("", "DeadLetterQueue", "sqs", "send the batches the pipe could not deliver"),
]


#: Actions AWS has no resource-level permission for: granted on "*" (each row says why, as the
#: cdk-nag acknowledgement does). dynamodb:ListStreams: AWS's Lambda and Pipes guides list it for
#: a DynamoDB stream source.
NO_RESOURCE_LEVEL = frozenset(
    {
        "dynamodb:ListStreams",
        "lambda:ListEventSourceMappings",
        "logs:CreateLogDelivery",
        "logs:GetLogDelivery",
        "logs:UpdateLogDelivery",
        "logs:DeleteLogDelivery",
        "logs:ListLogDeliveries",
        "logs:PutResourcePolicy",
        "logs:DescribeResourcePolicies",
        "logs:DescribeLogGroups",
    }
)


def sample_app(outdir: Path) -> Path:
    """Synthesize the sample app into ``outdir``; the directory."""
    import aws_cdk as cdk
    from aws_cdk import aws_dynamodb as dynamodb
    from aws_cdk import aws_lambda as lambda_

    from cdc_constructs import (
        ChangeCaptureTable,
        KinesisConsumer,
        KinesisDestination,
        StreamConsumer,
        StreamFanOut,
        TtlArchive,
        ViewBackfill,
    )

    app = cdk.App(outdir=str(outdir), context={"aws:cdk:enable-path-metadata": True})
    key = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
    code = lambda_.Code.from_inline("def handler(event, context):\n    return {}\n")
    shop = cdk.Stack(app, "Shop")
    orders = ChangeCaptureTable(shop, "Orders", partition_key=key)
    totals = dynamodb.TableV2(shop, "Totals", partition_key=key)
    consumer = StreamConsumer(shop, "OrderTotals", table=orders, code=code, handler="i.handler")
    consumer.grant_view_table(totals, env_var="TOTALS_TABLE_NAME")
    ViewBackfill(shop, "TotalsBackfill", consumer=consumer)
    StreamFanOut(shop, "OrderEvents", table=orders, source="com.example.orders")
    tickets = ChangeCaptureTable(shop, "Tickets", partition_key=key)
    TtlArchive(shop, "ExpiredTickets", table=tickets)
    kinesis = cdk.Stack(app, "ShopKinesis")
    streamed = ChangeCaptureTable(
        kinesis, "Orders", partition_key=key, kinesis=KinesisDestination()
    )
    KinesisConsumer(kinesis, "Replica", table=streamed, code=code, handler="i.handler")
    app.synth()
    return outdir


def _path(resources: dict[str, Any], logical_id: str, construct: str) -> str:
    path = resources[logical_id].get("Metadata", {}).get("aws:cdk:path", logical_id)
    parts = path.split("/")[1:]  # without the stack
    if parts and parts[-1] in ("Resource", "Default"):
        parts = parts[:-1]
    if parts and parts[0] == construct:
        parts = parts[1:]
    return "/".join(parts) or construct


def _resource(resources: dict[str, Any], value: Any, construct: str) -> str:
    text = json.dumps(value)
    found = re.search(r'"Fn::GetAtt": \["(\w+)", "(\w+)"\]|"Ref": "(\w+)"', text)
    if not found:
        return "*" if value == "*" else text
    name = _path(resources, found[1] or found[3], construct)
    if found[2] == "StreamArn":
        name += " (stream)"
    labelled = re.search(r'"(/\w+:\*)"\]\]\}$', text)  # a Map Run's child executions
    if labelled:
        return name + labelled[1]
    suffix = re.search(r'"(/[^"]*\*)"\]\]\}$', text)  # objects: "/*", "/<prefix>*"
    return name + (suffix[1] if suffix else "")


def _reason(role: str, resource: str, action: str) -> str:
    for role_part, resource_part, service, why in REASONS:
        if role.endswith(role_part) and resource_part in resource and action.startswith(service):
            return why
    raise LookupError(
        f"no reason for {action} on {resource} ({role}): add one to REASONS in docs/_ext/iam.py"
    )


def rows(template: dict[str, Any]) -> dict[str, list[tuple[str, str, str, str]]]:
    """Construct -> (role, actions, resource, why) for each statement of each role."""
    resources = template["Resources"]
    tables: dict[str, list[tuple[str, str, str, str]]] = {}
    for policy in resources.values():
        if policy["Type"] != "AWS::IAM::Policy":
            continue
        for role_ref in policy["Properties"]["Roles"]:
            role_path = resources[role_ref["Ref"]]["Metadata"]["aws:cdk:path"].split("/")
            construct = role_path[1]
            role = "/".join(role_path[2:-1] if role_path[-1] == "Resource" else role_path[2:])
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                actions, targets = _listed(statement["Action"]), _listed(statement["Resource"])
                resource = ", ".join(_resource(resources, t, construct) for t in targets)
                why = _reason(role, resource, actions[0])
                tables.setdefault(construct, []).append(
                    (role, ", ".join(f"`{a}`" for a in actions), f"`{resource}`", why)
                )
    return tables


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def markdown(assembly: Path) -> str:
    """The generated part of the page."""
    out = []
    for stack in ("Shop", "ShopKinesis"):
        template = json.loads((assembly / f"{stack}.template.json").read_text())
        for construct, found in rows(template).items():
            out += [f"### `{construct}` ({_KINDS[construct]})", ""]
            out += ["| role | actions | on | why |", "|---|---|---|---|"]
            out += [f"| `{construct}/{role}` | {a} | {r} | {w} |" for role, a, r, w in found]
            out.append("")
    return "\n".join(out)


_KINDS = {
    "OrderTotals": "StreamConsumer, with its StreamRedrive",
    "TotalsBackfill": "ViewBackfill: the segment function and the state machine",
    "OrderEvents": "StreamFanOut; OutboxPublisher is the same pipe",
    "ExpiredTickets": "TtlArchive: its StreamConsumer, with its StreamRedrive",
    "Replica": "KinesisConsumer, with its KinesisStreamRedrive",
}


def render_page(assembly: Path) -> str:
    text = PAGE.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n\n{markdown(assembly)}\n{END}{tail}"


def main() -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as outdir:
        PAGE.write_text(render_page(sample_app(Path(outdir))))
    print(PAGE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
