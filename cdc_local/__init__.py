"""Run a synthesized cdc-constructs stack on this machine, with no AWS account.

The local pipeline starts moto's server on 127.0.0.1, creates the stack's resources there and
runs each DynamoDB-stream event source mapping with its synthesized settings, invoking the
handlers in-process; it also plays DynamoDB's TTL sweeper. Start with :class:`LocalPipeline`::

    with LocalPipeline("cdk.out", "CdcReferenceStack") as pipeline:
        ...  # write to pipeline.client("dynamodb")
        pipeline.run()  # drain the streams, sweep TTL, drain again

or from a shell: ``python -m cdc_local --assembly cdk.out --stack CdcReferenceStack --demo``.
"""

from cdc_local.assembly import CloudAssembly, StackTemplate
from cdc_local.endpoint import LocalEndpoint, patched_environ
from cdc_local.event_source_mapping import EventSourceMapping, MappingCounters, MappingSettings
from cdc_local.exceptions import (
    AssemblyError,
    FunctionLoadError,
    LocalPipelineError,
    PipelineStuck,
    ResolutionError,
)
from cdc_local.faults import FaultPlan, Faults, SimulatedCrash
from cdc_local.filter_patterns import FilterCriteria, FilterPattern, FilterPatternError
from cdc_local.functions import InvocationResult, LambdaContext, LocalFunction
from cdc_local.runner import LocalPipeline, PipelineCounters
from cdc_local.ttl import TtlLedger, TtlSweeper
from cdc_local.workload import OrderWorkload

__all__ = [
    "AssemblyError",
    "CloudAssembly",
    "EventSourceMapping",
    "FaultPlan",
    "Faults",
    "FilterCriteria",
    "FilterPattern",
    "FilterPatternError",
    "FunctionLoadError",
    "InvocationResult",
    "LambdaContext",
    "LocalEndpoint",
    "LocalFunction",
    "LocalPipeline",
    "LocalPipelineError",
    "MappingCounters",
    "MappingSettings",
    "OrderWorkload",
    "PipelineCounters",
    "PipelineStuck",
    "ResolutionError",
    "SimulatedCrash",
    "StackTemplate",
    "TtlLedger",
    "TtlSweeper",
    "patched_environ",
]
