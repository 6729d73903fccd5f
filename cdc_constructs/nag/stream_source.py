"""One view of a stream consumer, whether a Lambda event source mapping or an EventBridge Pipe.

Both poll a stream (a route's source) with the same engine and the same knobs, under slightly
different property names. ``StreamSource.read`` finds out whether a synthesized resource reads
a stream at all and, if so, gathers what the rules judge: its polling settings, its route
(:mod:`cdc_constructs.routes.templates`) and the stream it reads (when that is in the same
template), its filter patterns and, for an
event source mapping, the names its function is known by.

Values come from the synthesized template, so a value set from a parameter, an import or a
condition is an intrinsic function (a dict such as ``{"Ref": "Param"}``). Where a rule needs
the value itself it resolves it with cdk-nag's ``NagRules.resolve_if_primitive``, which raises
for an intrinsic; cdk-nag then reports that rule for the resource ("Rule threw an error during
validation ... intrinsic function"), so a value the pack cannot check is reported, not passed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnResource
from cdc_consumer.service_limits import STREAM_RETENTION_SECONDS
from cdk_nag import NagRules

from cdc_constructs.nag.template import Resources
from cdc_constructs.routes.route import TemplateRoute
from cdc_constructs.routes.templates import TEMPLATE_ROUTES

EVENT_SOURCE_MAPPING = "AWS::Lambda::EventSourceMapping"
PIPE = "AWS::Pipes::Pipe"
TABLE_TYPES = frozenset({"AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable"})
FUNCTION_ALIAS_TYPES = frozenset({"AWS::Lambda::Alias", "AWS::Lambda::Version"})

# DynamoDB Streams keep records for 24 hours, fixed (cdc_consumer.service_limits'
# STREAM_RETENTION_SECONDS). A route's stream with a retention property keeps them that many
# hours; one whose retention the template does not say is assumed to keep 24 hours: the
# retention of every DynamoDB stream and of a Kinesis stream left at its default.

# Event source mapping properties that only sources other than the routes' have. A mapping
# with a StartingPosition and none of these polls a route's stream even when its
# EventSourceArn comes from a parameter or an import.
_NON_STREAM_SOURCE_PROPERTIES = (
    "Topics",
    "SelfManagedEventSource",
    "AmazonManagedKafkaEventSourceConfig",
    "SelfManagedKafkaEventSourceConfig",
    "DocumentDBEventSourceConfig",
    "Queues",
)


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
    route: TemplateRoute | None
    """The route of the stream it reads; None: a route's stream, its ARN unknown at synthesis."""
    settings: Mapping[str, Any]
    """The polling settings: the mapping's Properties, or the pipe's *StreamParameters."""
    stream: Mapping[str, Any] | None
    """The source stream's template resource (a table, for a DynamoDB stream), when it is in
    the same template."""
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

    @property
    def reads_table_stream(self) -> bool:
        """Whether it reads a table's own DynamoDB stream (known at synthesis)."""
        return self.route is not None and self.route.reads_table_stream

    @property
    def reads_another_stream(self) -> bool:
        """Whether it reads a stream of another route (known at synthesis)."""
        return self.route is not None and not self.route.reads_table_stream

    @property
    def table(self) -> Mapping[str, Any] | None:
        """The source table's template resource, when it reads its DynamoDB stream."""
        return self.stream if self.reads_table_stream else None

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
        route, source = _classify_source(node, properties.get("EventSourceArn"), resources)
        if route is None:
            polls_a_stream = "StartingPosition" in properties and not any(
                p in properties for p in _NON_STREAM_SOURCE_PROPERTIES
            )
            if not polls_a_stream:
                return None
        return cls(
            resource_type=EVENT_SOURCE_MAPPING,
            route=route,
            settings=properties,
            stream=source,
            filter_criteria=properties.get("FilterCriteria"),
            function=properties.get("FunctionName"),
            resources=resources,
            source_arn=properties.get("EventSourceArn"),
        )

    @classmethod
    def _read_pipe(
        cls, node: CfnResource, properties: Mapping[str, Any], resources: Resources
    ) -> StreamSource | None:
        route, source = _classify_source(node, properties.get("Source"), resources)
        parameters = properties.get("SourceParameters") or {}
        if not isinstance(parameters, Mapping):
            parameters = {}
        settings: Any = {}
        if is_intrinsic(parameters):  # only known at deployment: every rule reading it says so
            settings = parameters
        else:
            for parameter_route in TEMPLATE_ROUTES:
                if parameter_route.pipe_parameters in parameters:
                    route = route or parameter_route
                    settings = parameters[parameter_route.pipe_parameters] or {}
        if route is None:
            return None
        return cls(
            resource_type=PIPE,
            route=route,
            settings=settings,
            stream=source,
            filter_criteria=(
                parameters if is_intrinsic(parameters) else parameters.get("FilterCriteria")
            ),
            function=None,
            resources=resources,
            source_arn=properties.get("Source"),
        )

    @property
    def carries_table_changes(self) -> bool:
        """A source a table of the same template streams its changes into (its route's
        ``table_destination_property``): its records carry a DynamoDB change."""
        return self.feeding_table is not None

    @property
    def feeding_table(self) -> Mapping[str, Any] | None:
        """The table (template resource) whose changes this source carries, when it is in the
        same template: the table of a DynamoDB stream, or the table streaming into another
        route's stream."""
        if self.reads_table_stream or self.stream is None or self.route is None:
            return self.table
        specification = self.route.table_destination_property
        for resource in self.resources.values():
            if specification is None or resource.get("Type") not in TABLE_TYPES:
                continue
            for logical_id in referenced_logical_ids(_specifications(resource, specification)):
                if self.resources.get(logical_id) is self.stream:
                    return resource
        return None

    def retention_seconds(self, node: CfnResource) -> int:
        """How long the source stream keeps a record (see STREAM_RETENTION_SECONDS)."""
        hours_property = self.route.retention_hours_property if self.route else None
        if hours_property is not None and self.stream is not None:
            hours = dig(self.stream, "Properties", hours_property)
            if hours is None:
                return STREAM_RETENTION_SECONDS
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


def _specifications(table: Mapping[str, Any], name: str) -> list[Any]:
    """A table's specification ``name`` of a stream it streams into (a GlobalTable's are on its
    replicas)."""
    properties = table.get("Properties") or {}
    replicas = properties.get("Replicas") if isinstance(properties, Mapping) else None
    found = [dig(properties, name)]
    found += [dig(r, name) for r in replicas or () if isinstance(r, Mapping)]
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
) -> tuple[TemplateRoute | None, Mapping[str, Any] | None]:
    """The route of the stream ``arn`` points at, and its stream's resource when it is in the
    same template (a resource naming its stream, an enhanced fan-out consumer, is followed)."""
    if arn is None:
        return None, None
    target = NagRules.resolve_resource_from_intrinsic(node, arn)
    if isinstance(target, str) and target in resources:
        resource = resources[target]
        resource_type = str(resource.get("Type"))
        route = next((r for r in TEMPLATE_ROUTES if resource_type in r.resource_types), None)
        if route is None or resource_type not in route.stream_properties:
            return route, resource if route is not None else None
        stream_arn = (resource.get("Properties") or {}).get(route.stream_properties[resource_type])
        _, stream = _classify_source(node, stream_arn, resources)
        return route, stream
    text = _literal_text(arn)
    route = next((r for r in TEMPLATE_ROUTES if all(p in text for p in r.arn_parts)), None)
    return route, None
