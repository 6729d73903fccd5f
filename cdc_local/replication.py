"""A global table's replicas, played locally: each replica a table of the same name in its own
region of the same moto server (moto keeps regions apart by the region a request is signed for).

DynamoDB global tables (version 2019.11.21, multi-Region eventually consistent) copy every write
made in one replica to the others; each replica's stream then holds the writes made in its region
and the ones replicated into it, as ordinary records without a mark of their origin. A TTL
deletion is a write of the region whose TTL process made it: its record carries the service
identity there, and arrives in every other replica as a plain ``REMOVE`` (DynamoDB developer
guide, "Time to Live": replicated deletions "do not contain type or principalID properties").

:class:`Replication` plays that for the global tables of one stack (the stack that makes them):
it creates each replica in its region (same name, keys, indexes, stream and TTL) and, on every
:meth:`~Replication.pump`, reads each replica's stream and applies every write made there to the
other replicas, as a plain write (``PutItem`` of the new image, ``DeleteItem`` of the keys): so a
TTL deletion (by this pipeline's sweeper, with the identity in its region's stream) arrives in the
other regions without it. The writes it applied come back in their region's stream; it knows them
(the keys and image it wrote, in order) and does not send them back. A deletion of an item
already gone writes no record, as in DynamoDB: an item both regions' TTL deleted has one REMOVE
in each stream.

What it does not model: replication delay beyond the pump's turn, and conflicts (two regions
writing one item at once: DynamoDB keeps the last writer's; here each write is copied in the
order the pump reads it). A stack in a replica's region reads the replica's stream through a
``DescribeTable`` custom resource (cdc_constructs' ReplicaTable), which cannot run locally:
:func:`resolve_replica_reads` answers it from the local replica. See docs/local.md.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.wire import to_wire

from cdc_local.assembly import REPLICA_STREAM_ATTRIBUTE, StackTemplate
from cdc_local.endpoint import LocalEndpoint
from cdc_local.exceptions import LocalPipelineError
from cdc_local.resources import LocalResources, create_table
from cdc_local.stream_tail import StreamTail

__all__ = ["Replication", "ReplicationCounters", "resolve_replica_reads"]


@dataclass
class ReplicationCounters:
    """What the replication did: writes read from a replica's stream and copied to the others
    (``local_writes``), and the copies it applied (``replicated_writes``)."""

    local_writes: int = 0
    replicated_writes: int = 0


@dataclass
class _Replica:
    region: str
    table_name: str
    tail: StreamTail
    dynamodb: Any


@dataclass
class Replication:
    """The replicas of a stack's global tables, kept in step (see the module docstring)."""

    replicas: dict[str, list[_Replica]] = field(default_factory=dict)
    """Each global table's name -> its replicas, its own region's first."""
    counters: ReplicationCounters = field(default_factory=ReplicationCounters)
    _echoes: defaultdict[tuple[str, str, str], deque[str]] = field(
        default_factory=lambda: defaultdict(deque)
    )

    @classmethod
    def create(cls, resources: LocalResources, endpoint: LocalEndpoint) -> Replication:
        """Create the replicas, in their regions, of every table of ``resources``' stack with
        replicas in other regions than ``endpoint``'s (the tables themselves exist already)."""
        replication = cls()
        for table in resources.stack.tables():
            props = resources.resolve(dict(table.properties))
            regions = [r.get("Region") for r in props.get("Replicas") or ()]
            others = [r for r in regions if isinstance(r, str) and r != endpoint.region]
            if not others:
                continue
            name = resources.table_names[table.logical_id]
            own = resources.attributes[(table.logical_id, "StreamArn")]
            replicas = [_replica(endpoint, name, own)]
            for region in others:
                regional = endpoint.in_region(region)
                description = create_table(regional, name, props)
                replicas.append(_replica(regional, name, description["LatestStreamArn"]))
            replication.replicas[name] = replicas
        return replication

    def pump(self) -> bool:
        """Copy the writes made in each replica since the last turn to the other replicas;
        whether any was copied."""
        copied = False
        for replicas in self.replicas.values():
            for source in replicas:
                for record in source.tail.read():
                    if self._is_echo(source, record):
                        continue
                    self.counters.local_writes += 1
                    for target in replicas:
                        if target is not source:
                            self._apply(target, record)
                    copied = True
        return copied

    def _apply(self, target: _Replica, record: Mapping[str, Any]) -> None:
        """Write ``record``'s change to ``target`` as DynamoDB's replication does: a plain write,
        with no identity."""
        change = record["dynamodb"]
        keys = change["Keys"]
        if record["eventName"] == "REMOVE":
            deleted = target.dynamodb.delete_item(
                TableName=target.table_name, Key=keys, ReturnValues="ALL_OLD"
            ).get("Attributes")
            if not deleted:
                return  # gone already (its own TTL, a delete there): no record, as in DynamoDB
            self._expect(target, keys, None)
        else:
            image = change.get("NewImage")
            if image is None:
                raise LocalPipelineError(
                    f"global table {target.table_name}: a {record['eventName']} record without "
                    "its new image; replicas need the stream view NEW_AND_OLD_IMAGES"
                )
            target.dynamodb.put_item(TableName=target.table_name, Item=image)
            self._expect(target, keys, image)
        self.counters.replicated_writes += 1

    def _expect(self, target: _Replica, keys: Any, image: Any) -> None:
        self._echoes[(target.region, target.table_name, _text(keys))].append(_text(image))

    def _is_echo(self, source: _Replica, record: Mapping[str, Any]) -> bool:
        """Whether ``record`` is a write this replication applied (the oldest one it expects for
        the item): it is not sent back."""
        change = record["dynamodb"]
        pending = self._echoes.get((source.region, source.table_name, _text(change["Keys"])))
        image = None if record["eventName"] == "REMOVE" else change.get("NewImage")
        if pending and pending[0] == _text(image):
            pending.popleft()
            return True
        return False


def _replica(endpoint: LocalEndpoint, table_name: str, stream_arn: str) -> _Replica:
    return _Replica(
        region=endpoint.region,
        table_name=table_name,
        tail=StreamTail(stream_arn, endpoint.client("dynamodbstreams")),
        dynamodb=endpoint.client("dynamodb"),
    )


def _text(value: Any) -> str:
    """A canonical text of a key or image (boto3's binary values and base64 text alike)."""
    return json.dumps(to_wire(value), sort_keys=True) if value is not None else "null"


def resolve_replica_reads(resources: LocalResources, endpoint: LocalEndpoint) -> dict[str, str]:
    """Answer the stack's ``DescribeTable`` custom resources (cdc_constructs' ReplicaTable) from
    the local replicas in ``endpoint``'s region: each one's ``Table.LatestStreamArn`` resolves
    to the replica's stream, and the replica is the stack's table of that logical id. Returns
    each one's logical id -> the replica's table name. Raises :class:`LocalPipelineError` when
    a replica does not exist on the endpoint."""
    stack: StackTemplate = resources.stack
    ddb = endpoint.client("dynamodb")
    found = {}
    for logical_id, table_name in stack.replica_reads().items():
        try:
            description = ddb.describe_table(TableName=table_name)["Table"]
        except ddb.exceptions.ResourceNotFoundException:
            raise LocalPipelineError(
                f"stack {stack.stack_name}: {logical_id} reads the stream of table "
                f"{table_name!r} in {endpoint.region}, and no such table is on the local "
                "endpoint. Start the pipeline of the stack that makes the global table (with a "
                f"replica in {endpoint.region}) first, on the same endpoint: it creates the "
                "replicas (docs/local.md, 'Global tables')"
            ) from None
        if "LatestStreamArn" not in description:
            raise LocalPipelineError(
                f"stack {stack.stack_name}: table {table_name!r} in {endpoint.region} has no "
                "stream to read"
            )
        resources.attributes[(logical_id, REPLICA_STREAM_ATTRIBUTE)] = description[
            "LatestStreamArn"
        ]
        resources.table_names[logical_id] = table_name  # the stack's table in its region
        found[logical_id] = table_name
    return found
