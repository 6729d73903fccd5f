"""Run a synthesized cdc-constructs stack on this machine, with no AWS account.

The local pipeline starts moto's server on 127.0.0.1, creates the stack's resources there and
runs each stream event source mapping (a DynamoDB stream's, a Kinesis stream's:
:mod:`cdc_local.routes`) with its synthesized settings, invoking the handlers in-process; it
also plays DynamoDB's TTL sweeper. Start with :class:`LocalPipeline`::

    with LocalPipeline("cdk.out", "MyStack") as pipeline:
        ...  # write to pipeline.client("dynamodb")
        pipeline.run()  # drain the streams, sweep TTL, drain again

or from a shell: ``cdc-local --assembly cdk.out --stack MyStack`` (serve mode).
"""

import importlib.util
import sys
from pathlib import Path

# The local pipeline uses the consumer runtime's filter matcher and record conversion (one
# implementation serves Lambda and this emulation). In a checkout the runtime is lambda_src/
# beside this package; pytest and an installed wheel already make it importable.
if importlib.util.find_spec("cdc_consumer") is None:  # pragma: no cover - depends on the caller
    sys.path.append(str(Path(__file__).resolve().parent.parent / "lambda_src"))

from cdc_consumer.exceptions import FilterPatternError
from cdc_consumer.filter_patterns import FilterCriteria, FilterPattern

from cdc_local.assembly import CloudAssembly, StackTemplate
from cdc_local.endpoint import LocalEndpoint, patched_environ
from cdc_local.event_source_mapping import EventSourceMapping, MappingCounters, MappingSettings
from cdc_local.exceptions import (
    AccessDeniedError,
    AssemblyError,
    FunctionLoadError,
    LocalPipelineError,
    PipelineStuck,
    ResolutionError,
)
from cdc_local.faults import FaultPlan, Faults, FeedFaults, SimulatedCrash
from cdc_local.functions import InvocationResult, LambdaContext, LocalFunction
from cdc_local.replication import Replication
from cdc_local.runner import LocalPipeline, PipelineCounters, drain_together
from cdc_local.ttl import TtlLedger, TtlSweeper

__all__ = [
    "AccessDeniedError",
    "AssemblyError",
    "CloudAssembly",
    "EventSourceMapping",
    "FaultPlan",
    "Faults",
    "FeedFaults",
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
    "PipelineCounters",
    "PipelineStuck",
    "Replication",
    "ResolutionError",
    "SimulatedCrash",
    "StackTemplate",
    "TtlLedger",
    "TtlSweeper",
    "drain_together",
    "patched_environ",
]
