"""Two consumers behind one mapping, ``stats`` then ``audit``: each adds 1 to its counter
(``<member>`` in VIEW_TABLE) per record. ``audit`` depends on something that can break: while
the item ``fault#audit`` is in VIEW_TABLE, a record whose key is in its ``fails`` set fails
(transient: retried, then its batch goes to the on-failure bucket) and one in its ``poison`` set
is poison for audit alone (quarantined with audit's name). Deleting the item is the fix."""

import os

import boto3
from cdc_consumer import PermanentError, StreamProcessor
from cdc_consumer.consumer_group import ConsumerGroup

ddb = boto3.client("dynamodb")


def fault(attribute):
    item = ddb.get_item(
        TableName=os.environ["VIEW_TABLE"], Key={"pk": {"S": "fault#audit"}}, ConsistentRead=True
    ).get("Item", {})
    return set(item.get(attribute, {}).get("SS", []))


def counter(member, check=None):
    def project(change):
        if check is not None:
            check(change.keys["pk"])
        return [
            {
                "Update": {
                    "TableName": os.environ["VIEW_TABLE"],
                    "Key": {"pk": {"S": member}},
                    "UpdateExpression": "ADD #n :one",
                    "ExpressionAttributeNames": {"#n": "n"},
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            }
        ]

    return project


def audit_check(key):
    if key in fault("fails"):
        raise RuntimeError(f"audit's dependency is down for {key}")
    if key in fault("poison"):
        raise PermanentError(f"audit cannot read {key}")


stats = StreamProcessor("stats")
stats.projection(counter("stats"))
audit = StreamProcessor("audit")
audit.projection(counter("audit", audit_check))
group = None


def handler(event, context):
    global group
    if group is None:
        group = ConsumerGroup.from_environment([stats, audit])
    return group.handle(event, context)
