"""One view of a stream consumer, whether a Lambda event source mapping or an EventBridge Pipe.

Both poll a DynamoDB or Kinesis stream with the same engine and the same knobs, under slightly
different property names. ``StreamSource.read`` finds out whether a synthesized resource reads
a stream at all and, if so, gathers what the rules judge: its polling settings, the table or
Kinesis stream it reads (when that is in the same template), its filter patterns and, for an
event source mapping, the names its function is known by.

Values come from the synthesized template, so a value set from a parameter, an import or a
condition is an intrinsic function (a dict such as ``{"Ref": "Param"}``). Where a rule needs
the value itself it resolves it with cdk-nag's ``NagRules.resolve_if_primitive``, which raises
for an intrinsic; cdk-nag then reports that rule for the resource ("Rule threw an error during
validation ... intrinsic function"), so a value the pack cannot check is reported, not passed.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnResource
from cdc_consumer.service_limits import STREAM_RETENTION_SECONDS
from cdk_nag import NagRules

from cdc_constructs.nag.template import Resources

EVENT_SOURCE_MAPPING = "AWS::Lambda::EventSourceMapping"
PIPE = "AWS::Pipes::Pipe"
TABLE_TYPES = frozenset({"AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable"})
KINESIS_STREAM = "AWS::Kinesis::Stream"
KINESIS_CONSUMER = "AWS::Kinesis::StreamConsumer"
FUNCTION_ALIAS_TYPES = frozenset({"AWS::Lambda::Alias", "AWS::Lambda::Version"})

# DynamoDB Streams keep records for 24 hours, fixed (cdc_consumer.service_limits'
# STREAM_RETENTION_SECONDS). Kinesis keeps them RetentionPeriodHours (default 24). A stream whose
# retention the template does not say is assumed to keep 24 hours: the retention of every
# DynamoDB stream and of a Kinesis stream left at its default.
KINESIS_DEFAULT_RETENTION_HOURS = 24

# Event source mapping properties that only sources other than DynamoDB/Kinesis have. A mapping
# with a StartingPosition and none of these polls a DynamoDB or Kinesis stream even when its
# EventSourceArn comes from a parameter or an import.
_NON_STREAM_SOURCE_PROPERTIES = (
    "Topics",
    "SelfManagedEventSource",
    "AmazonManagedKafkaEventSourceConfig",
    "SelfManagedKafkaEventSourceConfig",
    "DocumentDBEventSourceConfig",
    "Queues",
)

_PIPE_PARAMETERS = {
    "DynamoDBStreamParameters": "dynamodb",
    "KinesisStreamParameters": "kinesis",
}


class StreamKind(enum.Enum):
    """What kind of stream a consumer reads."""

    DYNAMODB = "dynamodb"
    KINESIS = "kinesis"
    UNKNOWN = "unknown"  # a DynamoDB or Kinesis stream; its ARN is not known at synthesis


class UnresolvableValueError(ValueError):
    """A value the rule needs is an intrinsic function, unknown until deployment."""


def is_intrinsic(value: Any) -> bool:
    """Whether ``value`` is a CloudFormation intrinsic function or reference."""
    if not isinstance(value, Mapping) or len(value) != 1:
        return False
    key = str(next(iter(value)))
    return key == "Ref" or key.startswith("Fn::")


def dig(value: Any, *keys: str) -> Any:
    """``value[k1][k2]...``, None where a key is absent; raises where an intrinsic is in the way."""
    for key in keys:
        if value is None:
            return None
        if is_intrinsic(value) or not isinstance(value, Mapping):
            raise UnresolvableValueError(
                f"cannot read {key!r} from {value!r}: it is not an object known at synthesis"
            )
        value = value.get(key)
    return value


def _literal_text(value: Any) -> str:
    """The literal characters of an ARN: a string, or the string parts of Fn::Join / Fn::Sub."""
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping):
        return ""
    join = value.get("Fn::Join")
    if isinstance(join, list) and len(join) == 2 and isinstance(join[1], list):
        return str(join[0]).join(p if isinstance(p, str) else "" for p in join[1])
    sub = value.get("Fn::Sub")
    if isinstance(sub, list) and sub:
        sub = sub[0]
    return sub if isinstance(sub, str) else ""


@dataclass(frozen=True)
class StreamSource:
    """A stream consumer as the rules see it."""

    resource_type: str
    """``AWS::Lambda::EventSourceMapping`` or ``AWS::Pipes::Pipe``."""
    kind: StreamKind
    settings: Mapping[str, Any]
    """The polling settings: the mapping's Properties, or the pipe's *StreamParameters."""
    table: Mapping[str, Any] | None
    """The source DynamoDB table's template resource, when it is in the same template."""
    kinesis_stream: Mapping[str, Any] | None
    """The source Kinesis stream's template resource, when it is in the same template."""
    filter_criteria: Any
    """The ``FilterCriteria`` property, as synthesized (None when there is none)."""
    function: Any
    """The mapping's ``FunctionName`` as synthesized; None for a pipe."""
    resources: Resources
    """Every resource of the consumer's template."""
    readers: Any = None
    """The app's readers of each DynamoDB stream (``AppStreamReaders``), set by CdcChecks."""
    source_arn: Any = None
    """The stream's ARN as synthesized (``EventSourceArn``, a pipe's ``Source``)."""

    @property
    def is_pipe(self) -> bool:
        return self.resource_type == PIPE

    @classmethod
    def read(
        cls, node: CfnResource, properties: Mapping[str, Any], resources: Resources
    ) -> StreamSource | None:
        """The consumer ``node`` (synthesized as ``properties``) is; None if it reads no stream."""
        if node.cfn_resource_type == EVENT_SOURCE_MAPPING:
            return cls._read_mapping(node, properties, resources)
        if node.cfn_resource_type == PIPE:
            return cls._read_pipe(node, properties, resources)
        return None

    @classmethod
    def _read_mapping(
        cls, node: CfnResource, properties: Mapping[str, Any], resources: Resources
    ) -> StreamSource | None:
        kind, source = _classify_source(node, properties.get("EventSourceArn"), resources)
        if kind is None:
            polls_a_stream = "StartingPosition" in properties and not any(
                p in properties for p in _NON_STREAM_SOURCE_PROPERTIES
            )
            if not polls_a_stream:
                return None
            kind = StreamKind.UNKNOWN
        return cls(
            resource_type=EVENT_SOURCE_MAPPING,
            kind=kind,
            settings=properties,
            table=source if kind is StreamKind.DYNAMODB else None,
            kinesis_stream=source if kind is StreamKind.KINESIS else None,
            filter_criteria=properties.get("FilterCriteria"),
            function=properties.get("FunctionName"),
            resources=resources,
            source_arn=properties.get("EventSourceArn"),
        )

    @classmethod
    def _read_pipe(
        cls, node: CfnResource, properties: Mapping[str, Any], resources: Resources
    ) -> StreamSource | None:
        kind, source = _classify_source(node, properties.get("Source"), resources)
        parameters = properties.get("SourceParameters") or {}
        if not isinstance(parameters, Mapping):
            parameters = {}
        settings: Any = {}
        if is_intrinsic(parameters):  # only known at deployment: every rule reading it says so
            settings = parameters
        else:
            for key, parameter_kind in _PIPE_PARAMETERS.items():
                if key in parameters:
                    kind = kind or StreamKind(parameter_kind)
                    settings = parameters[key] or {}
        if kind is None:
            return None
        return cls(
            resource_type=PIPE,
            kind=kind,
            settings=settings,
            table=source if kind is StreamKind.DYNAMODB else None,
            kinesis_stream=source if kind is StreamKind.KINESIS else None,
            filter_criteria=(
                parameters if is_intrinsic(parameters) else parameters.get("FilterCriteria")
            ),
            function=None,
            resources=resources,
            source_arn=properties.get("Source"),
        )

    @property
    def carries_table_changes(self) -> bool:
        """A Kinesis source a table of the same template streams its changes into
        (``KinesisStreamSpecification``): its records' ``data`` has a DynamoDB change's shape."""
        return self.feeding_table is not None

    @property
    def feeding_table(self) -> Mapping[str, Any] | None:
        """The table (template resource) streaming its changes into this Kinesis source, when
        it is in the same template; None for any other source."""
        if self.kinesis_stream is None:
            return None
        for resource in self.resources.values():
            if resource.get("Type") not in TABLE_TYPES:
                continue
            for logical_id in referenced_logical_ids(_kinesis_specifications(resource)):
                if self.resources.get(logical_id) is self.kinesis_stream:
                    return resource
        return None

    def retention_seconds(self, node: CfnResource) -> int:
        """How long the source stream keeps a record (see STREAM_RETENTION_SECONDS)."""
        if self.kind is StreamKind.KINESIS and self.kinesis_stream is not None:
            hours = dig(self.kinesis_stream, "Properties", "RetentionPeriodHours")
            if hours is None:
                return KINESIS_DEFAULT_RETENTION_HOURS * 3600
            return int(NagRules.resolve_if_primitive(node, hours)) * 3600
        return STREAM_RETENTION_SECONDS

    def filter_patterns(self) -> list[Any]:
        """Each filter's ``Pattern`` (a JSON string, or an intrinsic)."""
        filters = dig(self.filter_criteria, "Filters") or []
        if is_intrinsic(filters):
            raise UnresolvableValueError(
                f"FilterCriteria.Filters {filters!r} is only known at deployment"
            )
        return [dig(f, "Pattern") for f in filters]

    def function_names(self, node: CfnResource) -> frozenset[str]:
        """What the mapping's function is called in the template: the logical ids of the
        function and of the alias/version it is invoked through, and literal names."""
        if self.function is None:
            return frozenset()
        target = NagRules.resolve_resource_from_intrinsic(node, self.function)
        if isinstance(target, str) and target.startswith("arn:"):
            # arn:aws:lambda:region:account:function:name[:qualifier]
            return frozenset({target, target.split(":")[6]})
        names = {target} if isinstance(target, str) else set()
        # CDK names an alias "<Select 6 of Split ':' of Ref Alias>:<alias>", so look for the
        # references anywhere in the value (cdk-nag's helper reads only the outermost one).
        names |= referenced_logical_ids(self.function)
        for name in list(names):
            resource = self.resources.get(name) or {}
            if resource.get("Type") in FUNCTION_ALIAS_TYPES:
                names |= referenced_logical_ids(dig(resource, "Properties", "FunctionName"))
        for name in list(names):
            literal_name = dig(self.resources.get(name), "Properties", "FunctionName")
            if isinstance(literal_name, str):
                names.add(literal_name)
        return frozenset(names)


def _kinesis_specifications(table: Mapping[str, Any]) -> list[Any]:
    """A table's ``KinesisStreamSpecification`` (a GlobalTable's are on its replicas)."""
    properties = table.get("Properties") or {}
    replicas = properties.get("Replicas") if isinstance(properties, Mapping) else None
    found = [dig(properties, "KinesisStreamSpecification")]
    found += [
        dig(r, "KinesisStreamSpecification") for r in replicas or () if isinstance(r, Mapping)
    ]
    return [spec for spec in found if spec is not None]


REPLICA_STREAM_ATTRIBUTE = "Table.LatestStreamArn"
"""The attribute of a ``DescribeTable`` custom resource that is a replica's stream ARN."""


def replica_stream_read(value: Any, resources: Resources) -> str | None:
    """The logical id of the custom resource whose ``DescribeTable`` answer ``value`` (a
    ``Fn::GetAtt`` of ``Table.LatestStreamArn``) is: a global table's replica's stream, read in
    its region at deployment (what cdc_constructs.ReplicaTable makes); None for anything else."""
    get_att = value.get("Fn::GetAtt") if isinstance(value, Mapping) else None
    if not (isinstance(get_att, list) and get_att[1:] == [REPLICA_STREAM_ATTRIBUTE]):
        return None
    resource = resources.get(get_att[0]) or {}
    if not str(resource.get("Type", "")).startswith("Custom::"):
        return None
    create = dig(resource, "Properties", "Create")
    return str(get_att[0]) if "describeTable" in json.dumps(create) else None


def referenced_logical_ids(value: Any) -> set[str]:
    """The targets of every ``Ref`` and ``Fn::GetAtt`` anywhere inside ``value``."""
    if isinstance(value, Mapping):
        if isinstance(value.get("Ref"), str):
            return {value["Ref"]}
        get_att = value.get("Fn::GetAtt")
        if isinstance(get_att, list) and get_att and isinstance(get_att[0], str):
            return {get_att[0]}
        return set().union(*(referenced_logical_ids(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(referenced_logical_ids(v) for v in value))
    return set()


def _classify_source(
    node: CfnResource, arn: Any, resources: Resources
) -> tuple[StreamKind | None, Mapping[str, Any] | None]:
    """The kind of stream ``arn`` points at, and its resource when it is in the same template."""
    if arn is None:
        return None, None
    target = NagRules.resolve_resource_from_intrinsic(node, arn)
    if isinstance(target, str) and target in resources:
        resource = resources[target]
        resource_type = resource.get("Type")
        if resource_type in TABLE_TYPES:
            return StreamKind.DYNAMODB, resource
        if resource_type == KINESIS_STREAM:
            return StreamKind.KINESIS, resource
        if resource_type == KINESIS_CONSUMER:  # enhanced fan-out: the consumer names its stream
            stream_arn = (resource.get("Properties") or {}).get("StreamARN")
            _, stream = _classify_source(node, stream_arn, resources)
            return StreamKind.KINESIS, stream
        return None, None
    text = _literal_text(arn)
    if ":dynamodb:" in text and "/stream/" in text:
        return StreamKind.DYNAMODB, None
    if ":kinesis:" in text:
        return StreamKind.KINESIS, None
    return None, None
