"""The model-based test's consumers, behind one mapping (tests/cdc_local/test_model.py).

Every member logs, per item, the changes it applied in the order it applied them (an
unguarded ``list_append``: a change applied twice or after a newer one shows in the log):

- ``ordered`` also runs a side effect per change (``notify``: ADD 1 to
  ``notify#<pk>#<entry>``, an external call made through a claim);
- ``stats`` raises PermanentError on a change whose new image has ``poison`` until the fix is
  deployed (``POISON_FIXED=1``);
- ``audit`` is a member some deployments have and others not.

Which of them run, in which order, comes from ``CDC_CONSUMER_GROUP`` (the deployment).
"""

import os

import boto3
from cdc_consumer import PermanentError, StreamProcessor
from cdc_consumer.consumer_group import ConsumerGroup
from cdc_consumer.environment_variables import CONSUMER_GROUP_ENV
from cdc_consumer.group_member_spec import GroupMemberSpec


def entry(change):
    """What a log holds for a change: ``<w>`` for a write (its ``w``, the model's write
    number), ``<w>D`` for the deletion of the item last written by write ``w``."""
    if change.event_name == "REMOVE":
        return f"{int(change.old_image['w'])}D"
    return str(int(change.new_image["w"]))


def logger(member, poison=False):
    def project(change):
        if poison and "poison" in (change.new_image or {}) and not os.environ.get("POISON_FIXED"):
            raise PermanentError(f"{member} cannot read {change.keys['pk']}")
        return [
            {
                "Update": {
                    "TableName": os.environ["VIEW_TABLE"],
                    "Key": {"pk": {"S": f"{member}#{change.keys['pk']}"}},
                    "UpdateExpression": "SET #log = list_append(if_not_exists(#log, :none), :e)",
                    "ExpressionAttributeNames": {"#log": "log"},
                    "ExpressionAttributeValues": {
                        ":none": {"L": []},
                        ":e": {"L": [{"S": entry(change)}]},
                    },
                }
            }
        ]

    project.__name__ = f"{member}_log"
    return project


_dynamodb = None


def notify(change):
    global _dynamodb
    if _dynamodb is None:
        _dynamodb = boto3.client("dynamodb")
    _dynamodb.update_item(
        TableName=os.environ["VIEW_TABLE"],
        Key={"pk": {"S": f"notify#{change.keys['pk']}#{entry(change)}"}},
        UpdateExpression="ADD #calls :one",
        ExpressionAttributeNames={"#calls": "calls"},
        ExpressionAttributeValues={":one": {"N": "1"}},
    )


def processors():
    ordered = StreamProcessor("ordered")
    ordered.projection(logger("ordered"))
    ordered.side_effect(notify)
    stats = StreamProcessor("stats")
    stats.projection(logger("stats", poison=True))
    audit = StreamProcessor("audit")
    audit.projection(logger("audit"))
    return [ordered, stats, audit]


group = None


def handler(event, context):
    global group
    if group is None:
        declared = {spec.name for spec in GroupMemberSpec.decode(os.environ[CONSUMER_GROUP_ENV])}
        deployed = [p for p in processors() if p.consumer_name in declared]
        group = ConsumerGroup.from_environment(deployed)
    return group.handle(event, context)
