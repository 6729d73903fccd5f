"""What CloudFormation deployed, read back from the emulator's APIs.

Nothing here knows the reference stack's logical ids: the stack's resources come from
CloudFormation (ListStackResources, DescribeStacks), its functions from Lambda
(GetFunctionConfiguration), its stream consumers from their event source mappings, and the
order-stats consumer's tables and queue from its environment (docs/interfaces.md §2). So the
flow survives the reference app being moved, split or given other destinations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.environment_variables import (
    CONSUMER_GROUP_ENV,
    CONSUMER_NAME_ENV,
    IDEMPOTENCY_TABLE_ENV,
    QUARANTINE_QUEUE_ENV,
)
from cdc_consumer.group_member_spec import GroupMemberSpec

from cdc_local.arns import stream_table_name
from deploy_local.exceptions import StepFailed
from reference_app.handlers.orders_schema import ORDER_STATS_CONSUMER, VIEW_TABLE_ENV

# VIEW_TABLE_ENV, the order-stats handler's view table (docs/interfaces.md §2), is the variable
# that marks the order-stats consumer among the stack's stream consumers.

CONSUMER_ENV = (CONSUMER_NAME_ENV, IDEMPOTENCY_TABLE_ENV, QUARANTINE_QUEUE_ENV)
"""What every consumer function's environment must hold (docs/interfaces.md §2)."""

ClientFactory = Callable[[str], Any]


@dataclass(frozen=True)
class StackResource:
    logical_id: str
    type: str
    physical_id: str
    status: str


@dataclass(frozen=True)
class DeployedFunction:
    name: str
    handler: str
    runtime: str
    architectures: tuple[str, ...]
    layers: tuple[str, ...]
    environment: Mapping[str, str]
    log_group: str = ""


@dataclass(frozen=True)
class StreamMapping:
    """An event source mapping from a DynamoDB stream to a function of the stack."""

    uuid: str
    function_name: str
    stream_arn: str
    settings: Mapping[str, Any]

    @property
    def table_name(self) -> str:
        return stream_table_name(self.stream_arn)


@dataclass(frozen=True)
class DeployedStack:
    name: str
    status: str
    resources: tuple[StackResource, ...]
    outputs: Mapping[str, str]
    functions: Mapping[str, DeployedFunction] = field(default_factory=dict)
    mappings: tuple[StreamMapping, ...] = ()

    @classmethod
    def read(cls, client: ClientFactory, stack_name: str) -> DeployedStack:
        cfn, lam = client("cloudformation"), client("lambda")
        stack = cfn.describe_stacks(StackName=stack_name)["Stacks"][0]
        resources = tuple(
            StackResource(
                r["LogicalResourceId"],
                r["ResourceType"],
                r.get("PhysicalResourceId", ""),
                r["ResourceStatus"],
            )
            for page in cfn.get_paginator("list_stack_resources").paginate(StackName=stack_name)
            for r in page["StackResourceSummaries"]
        )
        functions = {
            r.physical_id: _function(lam.get_function_configuration(FunctionName=r.physical_id))
            for r in resources
            if r.type == "AWS::Lambda::Function"
        }
        mappings = tuple(
            _mapping(lam.get_event_source_mapping(UUID=r.physical_id))
            for r in resources
            if r.type == "AWS::Lambda::EventSourceMapping"
        )
        return cls(
            name=stack_name,
            status=stack["StackStatus"],
            resources=resources,
            outputs={o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])},
            functions=functions,
            mappings=tuple(m for m in mappings if ":dynamodb:" in m.stream_arn),
        )

    @property
    def created(self) -> int:
        """Resources in a COMPLETE state (created or updated)."""
        return sum(1 for r in self.resources if r.status.endswith("_COMPLETE"))

    @property
    def not_created(self) -> list[StackResource]:
        return [r for r in self.resources if not r.status.endswith("_COMPLETE")]

    def stream_consumers(self) -> list[DeployedFunction]:
        """The functions an event source mapping feeds from a DynamoDB stream."""
        names = sorted({m.function_name for m in self.mappings})
        return [self.functions[n] for n in names if n in self.functions]

    def mapping_of(self, function: DeployedFunction) -> StreamMapping:
        found = [m for m in self.mappings if m.function_name == function.name]
        if len(found) != 1:
            raise StepFailed(
                "discover resources",
                f"expected one stream mapping for {function.name}, found {len(found)}",
            )
        return found[0]


@dataclass(frozen=True)
class OrderStatsWiring:
    """Where the order-stats consumer's pieces are: the consumer function whose environment
    names a view table."""

    function: DeployedFunction
    consumer_name: str
    source_table: str
    view_table: str
    idempotency_table: str
    quarantine_queue_url: str

    @classmethod
    def of(cls, stack: DeployedStack) -> OrderStatsWiring:
        found = [f for f in stack.stream_consumers() if VIEW_TABLE_ENV in f.environment]
        if len(found) != 1:
            raise StepFailed(
                "discover resources",
                f"expected one stream consumer with {VIEW_TABLE_ENV} in its environment in "
                f"stack {stack.name}, found {len(found)}",
            )
        function = found[0]
        env = function.environment
        missing = [name for name in CONSUMER_ENV if name not in env]
        if missing:
            raise StepFailed(
                "discover resources",
                f"function {function.name} lacks the environment variables {missing}",
            )
        return cls(
            function=function,
            consumer_name=_order_stats_name(env),
            source_table=stack.mapping_of(function).table_name,
            view_table=env[VIEW_TABLE_ENV],
            idempotency_table=env[IDEMPOTENCY_TABLE_ENV],
            quarantine_queue_url=env[QUARANTINE_QUEUE_ENV],
        )


def _order_stats_name(env: Mapping[str, str]) -> str:
    """The order-stats consumer's name (its markers' namespace): the function's, or, when the
    function hosts a consumer group (CdcReferenceStack: order-stats and the TTL archive), its
    order-stats member's."""
    group = env.get(CONSUMER_GROUP_ENV)
    if group and ORDER_STATS_CONSUMER in [m.name for m in GroupMemberSpec.decode(group)]:
        return ORDER_STATS_CONSUMER
    return env[CONSUMER_NAME_ENV]


def _function(config: Mapping[str, Any]) -> DeployedFunction:
    return DeployedFunction(
        name=config["FunctionName"],
        handler=config.get("Handler", ""),
        runtime=config.get("Runtime", ""),
        architectures=tuple(config.get("Architectures", ())),
        layers=tuple(layer["Arn"] for layer in config.get("Layers", ())),
        environment=dict(config.get("Environment", {}).get("Variables", {})),
        log_group=config.get("LoggingConfig", {}).get("LogGroup")
        or f"/aws/lambda/{config['FunctionName']}",
    )


def _mapping(config: Mapping[str, Any]) -> StreamMapping:
    return StreamMapping(
        uuid=config["UUID"],
        function_name=config["FunctionArn"].rsplit(":", 1)[1],
        stream_arn=config.get("EventSourceArn", ""),
        settings={k: v for k, v in config.items() if k != "ResponseMetadata"},
    )
