"""Who reads each DynamoDB stream of an app: every event source mapping and Pipe, across stacks.

DynamoDB Streams serves at most two concurrent readers per shard (AWS's ``LimitExceededException``:
"More than 2 processes are reading from the same streams shard at the same time"), and AWS's
Lambda guide asks for one reader on a global table's stream. Each event source mapping and each
EventBridge Pipe on a stream is a reader; whether they are in one stack or several, they read
the same shards.

A reader's stream is resolved from its synthesized template: ``Fn::GetAtt [table, StreamArn]`` in
the same template; across stacks, CDK's ``Fn::GetStackOutput`` (weak references) or
``Fn::ImportValue`` of an export whose value is such a ``Fn::GetAtt``; or a literal stream ARN.
A replica's stream read at deployment by a ``DescribeTable`` custom resource (what ReplicaTable
makes) is keyed by the replica, its table's name and its stack's region, so two such resources
of one replica, in one stack or two, count their readers together. A reader whose stream is only
known at deployment (a parameter) is counted for no stream.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from aws_cdk import CfnResource, Stack, Token, Validations
from cdc_consumer.service_limits import MAX_STREAM_READERS, MAX_STREAM_READERS_WITH_REPLICAS
from constructs import IConstruct

from cdc_constructs.nag.stream_source import (
    EVENT_SOURCE_MAPPING,
    PIPE,
    TABLE_TYPES,
    dig,
    replica_stream_read,
)
from cdc_constructs.nag.template import logical_id, template_path

RULE_ID = "CDC-ESM11"

StreamKey = tuple[str, str]
"""(template file, table logical id) of a table in the app, ("arn", literal stream ARN), or
(:data:`REPLICA`, "<region> <table name>") of a global table's replica read at deployment."""

REPLICA = "replica"


@dataclass(frozen=True)
class StreamReader:
    """One mapping or pipe reading a stream: where it is in the construct tree."""

    path: str
    """The L1 resource's construct path, e.g. ``App/Stack/Consumer/Function/StreamMapping``."""
    resource_type: str
    acknowledged: bool = False
    """Whether CDC-ESM11 is acknowledged on it (or a construct above it), with a reason."""


@dataclass(frozen=True)
class StreamInfo:
    """A DynamoDB stream of the app and its readers."""

    key: StreamKey
    name: str
    """The table's construct path (or the literal ARN): how findings name the stream."""
    replicated: bool
    readers: tuple[StreamReader, ...]

    @property
    def limit(self) -> int:
        return MAX_STREAM_READERS_WITH_REPLICAS if self.replicated else MAX_STREAM_READERS

    @property
    def over_limit(self) -> bool:
        return len(self.readers) > self.limit

    @property
    def accepted(self) -> bool:
        """One reader's acknowledgement accepts the stream's readers: the extra reader is the
        one that says why (``extra_reader_reason``), the others need not repeat it."""
        return any(reader.acknowledged for reader in self.readers)

    def describe(self) -> str:
        """The finding's message: the count, the limit and every reader's path."""
        limit = (
            f"at most {self.limit} for a table with replicas"
            if self.replicated
            else f"at most {self.limit}"
        )
        readers = ", ".join(reader.path for reader in self.readers)
        return (
            f"The DynamoDB stream of {self.name} has {len(self.readers)} readers ({limit}): "
            f"{readers}."
        )


@dataclass
class _Template:
    path: Path
    stack: Stack
    document: Mapping[str, Any]

    @property
    def resources(self) -> Mapping[str, Any]:
        return self.document.get("Resources") or {}

    @property
    def outputs(self) -> Mapping[str, Any]:
        return self.document.get("Outputs") or {}


@dataclass
class AppStreamReaders:
    """The readers of every DynamoDB stream in one app, read once per validation run."""

    streams: dict[StreamKey, StreamInfo] = field(default_factory=dict)
    by_reader: dict[str, StreamKey] = field(default_factory=dict)
    """Reader construct path -> its stream."""

    @classmethod
    def of(cls, scope: IConstruct) -> AppStreamReaders:
        templates = list(_templates(scope))
        by_name = {t.stack.stack_name: t for t in templates}
        exports = {
            _export_name(output): (template, output)
            for template in templates
            for output in template.outputs.values()
            if isinstance(_export_name(output), str)
        }
        readers: dict[StreamKey, list[StreamReader]] = defaultdict(list)
        index = cls()
        for template, node in _reader_nodes(scope, templates):
            resource = template.resources.get(logical_id(node)) or {}
            properties = resource.get("Properties") or {}
            arn = properties.get(
                "EventSourceArn" if node.cfn_resource_type == EVENT_SOURCE_MAPPING else "Source"
            )
            key = _stream_key(arn, template, by_name, exports)
            if key is None:
                continue
            reader = StreamReader(node.node.path, node.cfn_resource_type, _acknowledged(node))
            readers[key].append(reader)
            index.by_reader[reader.path] = key
        for key, found in readers.items():
            table = _table(key, templates)
            index.streams[key] = StreamInfo(
                key=key,
                name=_stream_name(key, table),
                replicated=key[0] == REPLICA or _has_replicas(table),
                readers=tuple(sorted(found, key=lambda r: r.path)),
            )
        return index

    def stream_of(self, node: CfnResource) -> StreamInfo | None:
        key = self.by_reader.get(node.node.path)
        return self.streams.get(key) if key is not None else None


def _templates(scope: IConstruct) -> Iterator[_Template]:
    for construct in scope.node.root.node.find_all():
        if Stack.is_stack(construct):
            stack = cast(Stack, construct)  # is_stack is not a TypeGuard in the jsii stubs
            path = template_path(stack)
            if path.is_file():
                yield _Template(path, stack, json.loads(path.read_text(encoding="utf-8")))


def _reader_nodes(
    scope: IConstruct, templates: list[_Template]
) -> Iterator[tuple[_Template, CfnResource]]:
    by_stack = {t.stack.node.path: t for t in templates}
    for construct in scope.node.root.node.find_all():
        if not CfnResource.is_cfn_resource(construct):
            continue
        node: CfnResource = construct  # type: ignore[assignment]
        if node.cfn_resource_type not in (EVENT_SOURCE_MAPPING, PIPE):
            continue
        template = by_stack.get(node.stack.node.path)
        if template is not None and logical_id(node) in template.resources:
            yield template, node


def _acknowledged(node: IConstruct) -> bool:
    """Whether ``node`` or a construct above it acknowledges CDC-ESM11."""
    for scope in node.node.scopes:
        for entry in scope.node.metadata:
            if entry.type == Validations.ACKNOWLEDGED_RULES_METADATA_KEY and any(
                str(key).endswith(RULE_ID) for key in (entry.data or {})
            ):
                return True
    return False


def _export_name(output: Any) -> Any:
    export = output.get("Export") if isinstance(output, Mapping) else None
    return export.get("Name") if isinstance(export, Mapping) else None


def _get_att_table(value: Any, template: _Template) -> StreamKey | None:
    """The table a ``Fn::GetAtt [table, StreamArn]`` in ``template`` names, or the replica a
    ``DescribeTable`` custom resource reads (its ``Table.LatestStreamArn``: ReplicaTable's)."""
    replica = replica_stream_read(value, template.resources)
    if replica is not None:
        named = _replica_read(template, replica)
        return (REPLICA, named) if named is not None else (str(template.path), replica)
    get_att = value.get("Fn::GetAtt") if isinstance(value, Mapping) else None
    if isinstance(get_att, list) and len(get_att) == 2 and get_att[1] == "StreamArn":
        resource = template.resources.get(get_att[0]) or {}
        if resource.get("Type") in TABLE_TYPES:
            return (str(template.path), str(get_att[0]))
    return None


def _replica_read(template: _Template, logical: str) -> str | None:
    """``"<region> <table name>"`` of the replica the custom resource ``logical`` describes, when
    both are literals (the region is its stack's: the call is made there); else None."""
    region = template.stack.region
    create = dig(template.resources.get(logical) or {}, "Properties", "Create")
    try:
        call = json.loads(create) if isinstance(create, str) else None
    except ValueError:
        return None
    name = dig(call, "parameters", "TableName") if isinstance(call, Mapping) else None
    if not isinstance(name, str) or Token.is_unresolved(region):
        return None
    return f"{region} {name}"


def _stream_key(
    arn: Any,
    template: _Template,
    by_name: Mapping[str, _Template],
    exports: Mapping[str, tuple[_Template, Any]],
) -> StreamKey | None:
    if isinstance(arn, str):
        return ("arn", arn) if ":dynamodb:" in arn and "/stream/" in arn else None
    if not isinstance(arn, Mapping):
        return None
    local = _get_att_table(arn, template)
    if local is not None:
        return local
    output = arn.get("Fn::GetStackOutput")
    if isinstance(output, Mapping):
        producer = by_name.get(str(output.get("StackName")))
        if producer is not None:
            value = (producer.outputs.get(str(output.get("OutputName"))) or {}).get("Value")
            return _get_att_table(value, producer)
    imported = arn.get("Fn::ImportValue")
    if isinstance(imported, str) and imported in exports:
        producer, value = exports[imported]
        return _get_att_table(value.get("Value"), producer)
    return None


def _table(key: StreamKey, templates: list[_Template]) -> tuple[_Template, Any] | None:
    if key[0] == REPLICA:
        return None
    for template in templates:
        if str(template.path) == key[0]:
            return template, template.resources.get(key[1])
    return None


def _has_replicas(table: tuple[_Template, Any] | None) -> bool:
    """A global table with more than one replica, or a replica's stream read by a custom
    resource (one of a global table's replicas)."""
    if table is None or not isinstance(table[1], Mapping):
        return False
    if str(table[1].get("Type", "")).startswith("Custom::"):
        return True  # only a replica's DescribeTable custom resource is a stream key
    replicas = (table[1].get("Properties") or {}).get("Replicas")
    return isinstance(replicas, list) and len(replicas) > 1


def _stream_name(key: StreamKey, table: tuple[_Template, Any] | None) -> str:
    """The table's construct path (``Stack/Orders``), else its logical id or the ARN."""
    if key[0] == REPLICA:
        region, _, name = key[1].partition(" ")
        return f"the replica of table {name} in {region}"
    if table is None:
        return key[1]
    template = table[0]
    for construct in template.stack.node.find_all():
        if CfnResource.is_cfn_resource(construct) and logical_id(construct) == key[1]:  # type: ignore[arg-type]
            return construct.node.path.removesuffix("/Resource")
    return f"{template.stack.node.path}/{key[1]}"
