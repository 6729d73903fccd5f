"""The consumers of a global table's example, in each region: ``order-stats`` and
``ttl-archive`` (a consumer group, CDC_CONSUMER_GROUP) or the one CDC_CONSUMER_NAME names.
Each adds 1 to ``<member>#<pk>#<what>`` in VIEW_TABLE, where ``what`` is ``expired`` for a TTL
deletion (as the runtime tells it: Change.is_ttl_expiry) and the event name otherwise."""

import os

from cdc_consumer import StreamProcessor
from cdc_consumer.consumer_group import ConsumerGroup


def recorder(member):
    def project(change):
        what = "expired" if change.is_ttl_expiry else change.event_name.lower()
        return [
            {
                "Update": {
                    "TableName": os.environ["VIEW_TABLE"],
                    "Key": {"pk": {"S": f"{member}#{change.keys['pk']}#{what}"}},
                    "UpdateExpression": "ADD #n :one",
                    "ExpressionAttributeNames": {"#n": "n"},
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            }
        ]

    return project


stats = StreamProcessor("order-stats")
stats.projection(recorder("order-stats"))
archive = StreamProcessor("ttl-archive")
archive.projection(recorder("ttl-archive"))
group = None


def handler(event, context):
    global group
    if not os.environ.get("CDC_CONSUMER_GROUP"):
        alone = archive if os.environ["CDC_CONSUMER_NAME"] == "ttl-archive" else stats
        return alone.handle(event, context)
    if group is None:
        group = ConsumerGroup.from_environment([stats, archive])
    return group.handle(event, context)
