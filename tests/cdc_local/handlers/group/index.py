"""Two consumers behind one mapping: ``stats`` (poison on pk "poison") and ``audit``; each
adds 1 to ``<member>#<pk>`` in VIEW_TABLE. Their order and filters come from the
StreamConsumer's ``members`` (CDC_CONSUMER_GROUP)."""

import os

from cdc_consumer import PermanentError, StreamProcessor
from cdc_consumer.consumer_group import ConsumerGroup


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
group = None


def handler(event, context):
    global group
    if group is None:
        group = ConsumerGroup.from_environment([stats, audit])
    return group.handle(event, context)
