"""Read a synthesized cloud assembly (``cdk.out``): one stack's template and its asset directories.

Only what the local pipeline needs is read: DynamoDB tables, SQS queues, S3 buckets, SNS topics,
Lambda functions and layers, and the event source mappings whose source is a DynamoDB stream.
Values stay as synthesized (intrinsic functions included); :mod:`cdc_local.resources` resolves them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc_consumer.environment_variables import USER_HANDLER_ENV
from cdc_consumer.handler_paths import WINDOW_HANDLER

from cdc_local.exceptions import AssemblyError

TABLE_TYPES = ("AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable")
QUEUE_TYPE = "AWS::SQS::Queue"
BUCKET_TYPE = "AWS::S3::Bucket"
TOPIC_TYPE = "AWS::SNS::Topic"
FUNCTION_TYPE = "AWS::Lambda::Function"
LAYER_TYPE = "AWS::Lambda::LayerVersion"
MAPPING_TYPE = "AWS::Lambda::EventSourceMapping"
PIPE_TYPE = "AWS::Pipes::Pipe"
STATE_MACHINE_TYPE = "AWS::StepFunctions::StateMachine"

#: Lambda's defaults for a function, used when the template leaves the property out
#: (CloudFormation does the same): 3 s timeout, 128 MB memory.
DEFAULT_TIMEOUT_SECONDS = 3
DEFAULT_MEMORY_MB = 128
#: Where inline (ZipFile) function code is written out, inside the assembly directory.
INLINE_CODE_DIR = ".local-inline-code"


@dataclass(frozen=True)
class Resource:
    """One template resource: its logical id, type and properties as synthesized."""

    logical_id: str
    type: str
    properties: Mapping[str, Any]


@dataclass(frozen=True)
class LayerSpec:
    logical_id: str
    asset_dir: Path


@dataclass(frozen=True)
class FunctionSpec:
    """A Lambda function: where its code is and how it runs (values still unresolved)."""

    logical_id: str
    handler: str
    runtime: str
    asset_dir: Path
    timeout_seconds: int
    memory_mb: int
    environment: Mapping[str, Any]
    layers: tuple[Any, ...]
    function_name: Any = None

    @property
    def own_handler(self) -> str:
        """The handler of the function's own code: behind the runtime's window handler (a
        StreamConsumer whose mapping has a tumbling window) it is named in the function's
        environment (``CDC_HANDLER``); else it is ``handler``. What to tell functions apart by;
        ``handler`` is what runs."""
        own = self.environment.get(USER_HANDLER_ENV)
        return own if self.handler == WINDOW_HANDLER and isinstance(own, str) else self.handler


@dataclass(frozen=True)
class MappingSpec:
    """An event source mapping (``AWS::Lambda::EventSourceMapping``) as synthesized."""

    logical_id: str
    function_ref: Any
    event_source_arn: Any
    properties: Mapping[str, Any]


@dataclass
class StackTemplate:
    """One stack of a cloud assembly: its template and where its assets live."""

    stack_name: str
    template: Mapping[str, Any]
    assembly_dir: Path
    _asset_paths: Mapping[str, Path] = field(default_factory=dict, repr=False)
    region: str | None = None
    """The stack's region (its ``env``), or None for an environment-agnostic stack."""

    @property
    def resources(self) -> Mapping[str, Mapping[str, Any]]:
        return self.template.get("Resources", {})

    @property
    def parameters(self) -> Mapping[str, Mapping[str, Any]]:
        return self.template.get("Parameters", {})

    def of_type(self, *types: str) -> Iterator[Resource]:
        for logical_id, body in self.resources.items():
            if body.get("Type") in types:
                yield Resource(logical_id, body["Type"], body.get("Properties", {}))

    def tables(self) -> list[Resource]:
        return list(self.of_type(*TABLE_TYPES))

    def queues(self) -> list[Resource]:
        return list(self.of_type(QUEUE_TYPE))

    def buckets(self) -> list[Resource]:
        return list(self.of_type(BUCKET_TYPE))

    def topics(self) -> list[Resource]:
        return list(self.of_type(TOPIC_TYPE))

    def layers(self) -> dict[str, LayerSpec]:
        return {
            r.logical_id: LayerSpec(
                r.logical_id, self.asset_dir(r.logical_id, r.properties["Content"])
            )
            for r in self.of_type(LAYER_TYPE)
        }

    def functions(self) -> dict[str, FunctionSpec]:
        specs = {}
        for r in self.of_type(FUNCTION_TYPE):
            props = r.properties
            if "Handler" not in props or "ImageUri" in props.get("Code", {}):
                raise AssemblyError(
                    f"function {r.logical_id} has no Handler (container image functions cannot "
                    "run in-process); the local pipeline runs zip-packaged Python functions"
                )
            specs[r.logical_id] = FunctionSpec(
                logical_id=r.logical_id,
                handler=props["Handler"],
                runtime=props.get("Runtime", ""),
                asset_dir=self.asset_dir(r.logical_id, props.get("Code", {})),
                timeout_seconds=int(props.get("Timeout", DEFAULT_TIMEOUT_SECONDS)),
                memory_mb=int(props.get("MemorySize", DEFAULT_MEMORY_MB)),
                environment=props.get("Environment", {}).get("Variables", {}),
                layers=tuple(props.get("Layers", ())),
                function_name=props.get("FunctionName"),
            )
        return specs

    def stream_mappings(self) -> list[MappingSpec]:
        """Event source mappings whose source is a DynamoDB stream of a table in this stack."""
        mappings = []
        for r in self.of_type(MAPPING_TYPE):
            source = r.properties.get("EventSourceArn")
            if _is_table_stream(source, self.resources):
                mappings.append(
                    MappingSpec(
                        r.logical_id, r.properties.get("FunctionName"), source, r.properties
                    )
                )
        return mappings

    def stream_readers(self) -> dict[str, list[str]]:
        """Each table of this stack with a stream (or replica it reads: the custom resource
        reading its stream) -> the event source mappings and Pipes that read it (logical ids):
        the readers DynamoDB Streams counts per shard."""
        readers: dict[str, list[str]] = {}
        for resource_type, source_property in (
            (MAPPING_TYPE, "EventSourceArn"),
            (PIPE_TYPE, "Source"),
        ):
            for r in self.of_type(resource_type):
                source = r.properties.get(source_property)
                if isinstance(source, Mapping) and "Fn::GetAtt" in source:
                    target, _ = _getatt_parts(source["Fn::GetAtt"])
                    if _is_table_stream(source, self.resources):  # a table's, or a replica's
                        readers.setdefault(target, []).append(r.logical_id)
        return readers

    def replica_reads(self) -> dict[str, str]:
        """Each custom resource that reads a global table's replica's stream ARN in this stack's
        region at deployment (``DescribeTable``, attribute ``Table.LatestStreamArn``: what
        cdc_constructs' ReplicaTable makes) -> the table's name."""
        reads = {}
        for logical_id, body in self.resources.items():
            table_name = _described_table(body)
            if table_name is not None:
                reads[logical_id] = table_name
        return reads

    def has_replicas(self, table_logical_id: str) -> bool:
        """Whether the table (a TableV2: AWS::DynamoDB::GlobalTable) has replicas; a replica
        read by a custom resource (:meth:`replica_reads`) is one of a table with replicas."""
        if _described_table(self.resources.get(table_logical_id, {})) is not None:
            return True
        properties = self.resources.get(table_logical_id, {}).get("Properties") or {}
        replicas = properties.get("Replicas")
        return isinstance(replicas, list) and len(replicas) > 1

    def asset_dir(self, logical_id: str, code: Mapping[str, Any]) -> Path:
        """The directory of a function's or layer's code asset.

        The ``aws:asset:path`` resource metadata wins when present (the CDK CLI adds it); else the
        code's S3 key is matched with the stack's asset manifest (``<stack>.assets.json``), which
        every synthesis writes, so an assembly made by ``App().synth()`` works too.
        """
        metadata = self.resources[logical_id].get("Metadata", {})
        if isinstance(code.get("ZipFile"), str):
            # Inline code: Lambda stores it as index.py (Python runtimes); do the same.
            path = self.assembly_dir / INLINE_CODE_DIR / logical_id
            path.mkdir(parents=True, exist_ok=True)
            (path / "index.py").write_text(code["ZipFile"])
        elif "aws:asset:path" in metadata:
            path = self.assembly_dir / metadata["aws:asset:path"]
        else:
            key = code.get("S3Key")
            if not isinstance(key, str) or key not in self._asset_paths:
                raise AssemblyError(
                    f"{logical_id}: cannot find its code asset (S3Key {key!r} is not in the "
                    "stack's "
                    f"asset manifest under {self.assembly_dir}); assets outside the assembly are "
                    "not supported"
                )
            path = self._asset_paths[key]
        if not path.is_dir():
            raise AssemblyError(f"{logical_id}: asset directory {path} does not exist")
        return path


#: The attribute of a ``DescribeTable`` custom resource that is a replica's stream ARN.
REPLICA_STREAM_ATTRIBUTE = "Table.LatestStreamArn"


def _described_table(body: Mapping[str, Any]) -> str | None:
    """The table a custom resource (``Custom::*``) describes with ``DescribeTable`` to read its
    stream ARN, as aws-cdk-lib's AwsCustomResource writes the call; None for anything else."""
    if not str(body.get("Type", "")).startswith("Custom::"):
        return None
    create = (body.get("Properties") or {}).get("Create")
    try:
        call = json.loads(create) if isinstance(create, str) else None
    except json.JSONDecodeError:
        return None
    if not isinstance(call, Mapping) or str(call.get("action")).lower() != "describetable":
        return None
    name = (call.get("parameters") or {}).get("TableName")
    return name if isinstance(name, str) else None


def _is_table_stream(source: Any, resources: Mapping[str, Mapping[str, Any]]) -> bool:
    if isinstance(source, Mapping) and "Fn::GetAtt" in source:
        target, attribute = _getatt_parts(source["Fn::GetAtt"])
        if attribute == REPLICA_STREAM_ATTRIBUTE:  # a replica's, read at deployment
            return _described_table(resources.get(target, {})) is not None
        return attribute == "StreamArn" and resources.get(target, {}).get("Type") in TABLE_TYPES
    return isinstance(source, str) and ":dynamodb:" in source and "/stream/" in source


def _getatt_parts(value: Any) -> tuple[str, str]:
    if isinstance(value, str):
        target, _, attribute = value.partition(".")
        return target, attribute
    return value[0], value[1]


class CloudAssembly:
    """A cloud assembly directory, as ``cdk synth`` or ``App(outdir=...).synth()`` writes it."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        manifest_path = self.directory / "manifest.json"
        if not manifest_path.is_file():
            raise AssemblyError(
                f"{self.directory} is not a cloud assembly: no manifest.json in it "
                "(run `cdk synth` first, or pass the directory it wrote, usually cdk.out)"
            )
        self.manifest = json.loads(manifest_path.read_text())

    def stack_names(self) -> list[str]:
        return [name for name, _, _ in self._stacks()]

    def stack(self, name: str) -> StackTemplate:
        """The stack whose artifact id, stack name or display name is ``name``."""
        for stack_name, directory, artifact in self._stacks():
            props = artifact.get("properties", {})
            if name in (stack_name, props.get("stackName"), artifact.get("displayName")):
                template = json.loads((directory / props["templateFile"]).read_text())
                return StackTemplate(
                    stack_name=props.get("stackName", stack_name),
                    template=template,
                    assembly_dir=directory,
                    _asset_paths=_asset_paths(directory, artifact),
                    region=_region(artifact),
                )
        raise AssemblyError(
            f"no stack {name!r} in the cloud assembly {self.directory}; "
            f"it has: {', '.join(self.stack_names()) or 'no stacks'}"
        )

    def _stacks(self) -> Iterator[tuple[str, Path, Mapping[str, Any]]]:
        yield from _walk(self.directory, self.manifest)


def _region(artifact: Mapping[str, Any]) -> str | None:
    """The region of a stack artifact's ``environment`` (``aws://account/region``); None when
    the stack is environment-agnostic (``unknown-region``)."""
    environment = str(artifact.get("environment", ""))
    region = environment.rsplit("/", 1)[-1] if environment.startswith("aws://") else ""
    return None if not region or region.startswith("unknown-") else region


def _walk(
    directory: Path, manifest: Mapping[str, Any]
) -> Iterator[tuple[str, Path, Mapping[str, Any]]]:
    for artifact_id, artifact in manifest.get("artifacts", {}).items():
        if artifact.get("type") == "aws:cloudformation:stack":
            yield artifact_id, directory, artifact
        elif artifact.get("type") == "cdk:cloud-assembly":  # a Stage: a nested assembly
            nested = directory / artifact["properties"]["directoryName"]
            yield from _walk(nested, json.loads((nested / "manifest.json").read_text()))


def _asset_paths(directory: Path, stack_artifact: Mapping[str, Any]) -> dict[str, Path]:
    """S3 object key -> asset directory, from the stack's asset manifest."""
    paths: dict[str, Path] = {}
    for dependency in stack_artifact.get("dependencies", ()):
        assets_file = directory / f"{dependency}.json"
        if not dependency.endswith(".assets") or not assets_file.is_file():
            continue
        for asset in json.loads(assets_file.read_text()).get("files", {}).values():
            source = directory / asset["source"]["path"]
            for destination in asset.get("destinations", {}).values():
                paths[destination["objectKey"]] = source
    return paths
