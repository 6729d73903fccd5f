"""Create a stack's tables, queues, buckets and topics on a local endpoint, and resolve the
template's intrinsic functions (Ref, Fn::GetAtt, Fn::Join, Fn::Select, Fn::Split, Fn::Sub) to the
local values.

Physical names are derived from the stack name and the logical id, as CloudFormation does (without
its random suffix), unless the template names the resource itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.service_limits import MAX_QUEUE_MESSAGE_BYTES

from cdc_local.assembly import (
    FUNCTION_TYPE,
    LAYER_TYPE,
    STATE_MACHINE_TYPE,
    Resource,
    StackTemplate,
)
from cdc_local.endpoint import LocalEndpoint
from cdc_local.exceptions import ResolutionError

#: moto's default account: every resource it creates lives there.
LOCAL_ACCOUNT_ID = "123456789012"
PARTITION = "aws"

#: SQS queue attributes copied from the template; the rest (KMS keys, policies) have no local
#: effect.
QUEUE_ATTRIBUTES = (
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout",
    "FifoQueue",
    "ContentBasedDeduplication",
    "SqsManagedSseEnabled",
)


def physical_name(
    stack_name: str, logical_id: str, max_length: int, lowercase: bool = False
) -> str:
    """``{stack}-{logical id}``, cut to ``max_length`` and made valid for the service."""
    name = f"{stack_name}-{logical_id}"
    if lowercase:
        name = re.sub(r"[^a-z0-9.-]", "-", name.lower())
    return name[:max_length].strip("-.")


@dataclass
class LocalResources:
    """What was created on the endpoint: each logical id's Ref value and attributes."""

    stack: StackTemplate
    region: str
    refs: dict[str, str] = field(default_factory=dict)
    attributes: dict[tuple[str, str], str] = field(default_factory=dict)
    table_names: dict[str, str] = field(default_factory=dict)
    queue_urls: dict[str, str] = field(default_factory=dict)
    bucket_names: dict[str, str] = field(default_factory=dict)
    topic_arns: dict[str, str] = field(default_factory=dict)

    def arn(self, service: str, resource: str) -> str:
        return f"arn:{PARTITION}:{service}:{self.region}:{LOCAL_ACCOUNT_ID}:{resource}"

    def resolve(self, value: Any) -> Any:
        """``value`` with every intrinsic function replaced by its local value."""
        return Resolver(self).resolve(value)

    def queue_url_for_arn(self, arn: str) -> str | None:
        for logical_id, url in self.queue_urls.items():
            if self.attributes.get((logical_id, "Arn")) == arn:
                return url
        return None

    def bucket_for_arn(self, arn: str) -> str | None:
        prefix = "arn:aws:s3:::"
        return arn[len(prefix) :] if arn.startswith(prefix) else None


class Resolver:
    """Resolves the intrinsic functions the CDK emits in environments and mapping properties."""

    def __init__(self, resources: LocalResources) -> None:
        self.r = resources

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, Mapping):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            handler = _FUNCTIONS.get(key)
            if handler is not None:
                return handler(self, arg)
            if key.startswith("Fn::") or key == "Ref":
                raise ResolutionError(
                    f"{key} is not supported by the local pipeline (value {json.dumps(value)}); "
                    f"it resolves {', '.join(sorted(_FUNCTIONS))}"
                )
        return {k: self.resolve(v) for k, v in value.items()}

    def ref(self, name: str) -> str:
        pseudo = {
            "AWS::Region": self.r.region,
            "AWS::AccountId": LOCAL_ACCOUNT_ID,
            "AWS::Partition": PARTITION,
            "AWS::StackName": self.r.stack.stack_name,
            "AWS::StackId": self.r.arn("cloudformation", f"stack/{self.r.stack.stack_name}/local"),
            "AWS::URLSuffix": "amazonaws.com",
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.r.refs:
            return self.r.refs[name]
        if name in self.r.stack.parameters:
            parameter = self.r.stack.parameters[name]
            if "Default" not in parameter:
                raise ResolutionError(
                    f"parameter {name} has no Default; the local pipeline passes none"
                )
            return str(parameter["Default"])
        if name in self.r.stack.resources:
            return physical_name(self.r.stack.stack_name, name, 64)
        raise ResolutionError(f"Ref {name!r}: no such resource, parameter or pseudo parameter")

    def get_att(self, arg: Any) -> str:
        target, attribute = arg.split(".", 1) if isinstance(arg, str) else (arg[0], arg[1])
        if (target, attribute) in self.r.attributes:
            return self.r.attributes[(target, attribute)]
        if target not in self.r.stack.resources:
            raise ResolutionError(f"Fn::GetAtt {target}.{attribute}: no resource {target!r}")
        resource_type = self.r.stack.resources[target]["Type"]
        if attribute == "Arn" or attribute.endswith("Arn"):
            # A resource the local pipeline does not create (a role, a key): a well-formed ARN.
            service = resource_type.split("::")[1].lower()
            return self.r.arn(service, f"{target}")
        raise ResolutionError(
            f"Fn::GetAtt {target}.{attribute}: {resource_type} {target} is not created locally and "
            "only its Arn can be stood in for"
        )

    def join(self, arg: Any) -> str:
        delimiter, values = arg
        return str(delimiter).join(str(self.resolve(v)) for v in self.resolve(values))

    def select(self, arg: Any) -> Any:
        index, values = arg
        values = self.resolve(values)
        return values[int(self.resolve(index))]

    def split(self, arg: Any) -> list[str]:
        delimiter, source = arg
        return str(self.resolve(source)).split(delimiter)

    def sub(self, arg: Any) -> str:
        template, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
        variables = {k: self.resolve(v) for k, v in variables.items()}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return str(variables[name])
            if "." in name:
                return self.get_att(name)
            return self.ref(name)

        return re.sub(r"\$\{([^}]+)\}", replace, template)


_FUNCTIONS = {
    "Ref": Resolver.ref,
    "Fn::GetAtt": Resolver.get_att,
    "Fn::Join": Resolver.join,
    "Fn::Select": Resolver.select,
    "Fn::Split": Resolver.split,
    "Fn::Sub": Resolver.sub,
}


def create_resources(stack: StackTemplate, endpoint: LocalEndpoint) -> LocalResources:
    """Create the stack's tables, buckets, topics and queues on ``endpoint``; register the
    names of its functions and layers so references to them resolve."""
    resources = LocalResources(stack=stack, region=endpoint.region)
    for table in stack.tables():
        _create_table(resources, endpoint, table)
    for bucket in stack.buckets():
        _create_bucket(resources, endpoint, bucket)
    for topic in stack.topics():
        _create_topic(resources, endpoint, topic)
    # Queues with a redrive policy point at another queue: create those after the others.
    queues = sorted(stack.queues(), key=lambda q: "RedrivePolicy" in q.properties)
    for queue in queues:
        _create_queue(resources, endpoint, queue)
    for function in stack.of_type(FUNCTION_TYPE):
        name = resources.resolve(function.properties.get("FunctionName")) or physical_name(
            stack.stack_name, function.logical_id, 64
        )
        resources.refs[function.logical_id] = name
        resources.attributes[(function.logical_id, "Arn")] = resources.arn(
            "lambda", f"function:{name}"
        )
    for layer in stack.of_type(LAYER_TYPE):
        name = physical_name(stack.stack_name, layer.logical_id, 64)
        resources.refs[layer.logical_id] = resources.arn("lambda", f"layer:{name}:1")
    for machine in stack.of_type(STATE_MACHINE_TYPE):
        # Not run locally (a ViewBackfill's engine is played in process), but a policy names
        # it: Ref is its ARN, as CloudFormation gives it.
        name = physical_name(stack.stack_name, machine.logical_id, 80)
        resources.refs[machine.logical_id] = resources.arn("states", f"stateMachine:{name}")
        resources.attributes[(machine.logical_id, "Name")] = name
    return resources


def _create_table(resources: LocalResources, endpoint: LocalEndpoint, table: Resource) -> None:
    props = resources.resolve(dict(table.properties))
    name = props.get("TableName") or physical_name(
        resources.stack.stack_name, table.logical_id, 255
    )
    description = create_table(endpoint, name, props)
    resources.table_names[table.logical_id] = name
    resources.refs[table.logical_id] = name
    resources.attributes[(table.logical_id, "Arn")] = description["TableArn"]
    if "LatestStreamArn" in description:
        resources.attributes[(table.logical_id, "StreamArn")] = description["LatestStreamArn"]


def create_table(endpoint: LocalEndpoint, name: str, props: Mapping[str, Any]) -> dict[str, Any]:
    """Create table ``name`` in the endpoint's region from its resolved template properties
    (keys, indexes, stream, TTL); its description."""
    request: dict[str, Any] = {
        "TableName": name,
        "KeySchema": props["KeySchema"],
        "AttributeDefinitions": props["AttributeDefinitions"],
        # Capacity has no meaning on a local endpoint; on-demand needs no throughput settings.
        "BillingMode": "PAY_PER_REQUEST",
    }
    gsis = [_index(i) for i in props.get("GlobalSecondaryIndexes", ())]
    lsis = [_index(i) for i in props.get("LocalSecondaryIndexes", ())]
    if gsis:
        request["GlobalSecondaryIndexes"] = gsis
    if lsis:
        request["LocalSecondaryIndexes"] = lsis
    view_type = props.get("StreamSpecification", {}).get("StreamViewType")
    if view_type:
        request["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": view_type}
    ddb = endpoint.client("dynamodb")
    description: dict[str, Any] = ddb.create_table(**request)["TableDescription"]
    ttl = props.get("TimeToLiveSpecification")
    if ttl and ttl.get("Enabled"):
        ddb.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
        )
    return description


def _index(index: Mapping[str, Any]) -> dict[str, Any]:
    return {k: index[k] for k in ("IndexName", "KeySchema", "Projection") if k in index}


def _create_bucket(resources: LocalResources, endpoint: LocalEndpoint, bucket: Resource) -> None:
    props = resources.resolve(dict(bucket.properties))
    name = props.get("BucketName") or physical_name(
        resources.stack.stack_name, bucket.logical_id, 63, lowercase=True
    )
    s3 = endpoint.client("s3")
    if endpoint.region == "us-east-1":
        s3.create_bucket(Bucket=name)
    else:
        s3.create_bucket(
            Bucket=name, CreateBucketConfiguration={"LocationConstraint": endpoint.region}
        )
    resources.bucket_names[bucket.logical_id] = name
    resources.refs[bucket.logical_id] = name
    resources.attributes[(bucket.logical_id, "Arn")] = f"arn:aws:s3:::{name}"
    resources.attributes[(bucket.logical_id, "DomainName")] = f"{name}.s3.amazonaws.com"
    resources.attributes[(bucket.logical_id, "RegionalDomainName")] = (
        f"{name}.s3.{endpoint.region}.amazonaws.com"
    )


def _create_topic(resources: LocalResources, endpoint: LocalEndpoint, topic: Resource) -> None:
    props = resources.resolve(dict(topic.properties))
    name = props.get("TopicName") or physical_name(
        resources.stack.stack_name, topic.logical_id, 256
    )
    arn = endpoint.client("sns").create_topic(Name=name)["TopicArn"]
    resources.topic_arns[topic.logical_id] = arn
    resources.refs[topic.logical_id] = arn
    resources.attributes[(topic.logical_id, "TopicArn")] = arn
    resources.attributes[(topic.logical_id, "TopicName")] = name


def _create_queue(resources: LocalResources, endpoint: LocalEndpoint, queue: Resource) -> None:
    props = resources.resolve(dict(queue.properties))
    fifo = bool(props.get("FifoQueue"))
    name = props.get("QueueName") or physical_name(
        resources.stack.stack_name, queue.logical_id, 75 if fifo else 80
    ) + (".fifo" if fifo else "")
    attributes = {k: _attribute(props[k]) for k in QUEUE_ATTRIBUTES if k in props}
    # SQS refuses a message over the queue's MaximumMessageSize, 256 KiB unless the template
    # says otherwise; moto's default is 1 MiB, which would accept what AWS refuses.
    attributes.setdefault("MaximumMessageSize", str(MAX_QUEUE_MESSAGE_BYTES))
    if "RedrivePolicy" in props:
        attributes["RedrivePolicy"] = json.dumps(props["RedrivePolicy"])
    sqs = endpoint.client("sqs")
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    resources.queue_urls[queue.logical_id] = url
    resources.refs[queue.logical_id] = url
    resources.attributes[(queue.logical_id, "Arn")] = arn
    resources.attributes[(queue.logical_id, "QueueUrl")] = url
    resources.attributes[(queue.logical_id, "QueueName")] = name


def _attribute(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
