"""Two consumers behind one mapping: ``stats`` (every change but TTL deletions, poison on
pk "poison") and ``audit`` (every change); each adds 1 to ``<member>#<pk>`` in VIEW_TABLE."""

import os

from cdc_consumer import PermanentError, StreamProcessor
from cdc_consumer.consumer_group import ConsumerGroup, GroupMember


def counter(member, poison=None):
    def project(change):
        if change.keys["pk"] == poison:
            raise PermanentError(f"{member} cannot read {poison}")
        return [
            {
                "Update": {
                    "TableName": os.environ["VIEW_TABLE"],
                    "Key": {"pk": {"S": f"{member}#{change.keys['pk']}"}},
                    "UpdateExpression": "ADD #n :one",
                    "ExpressionAttributeNames": {"#n": "n"},
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            }
        ]

    return project


stats = StreamProcessor("stats")
stats.projection(counter("stats", poison="poison"))
audit = StreamProcessor("audit")
audit.projection(counter("audit"))
group = ConsumerGroup(
    [
        GroupMember(stats, [{"userIdentity": {"type": [{"exists": False}]}}]),
        GroupMember(audit),
    ]
)


def handler(event, context):
    return group.handle(event, context)
