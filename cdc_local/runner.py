"""The local pipeline: a synthesized stack's change data capture, run on this machine.

``LocalPipeline(assembly_dir, stack_name)`` starts moto's server on 127.0.0.1 (or uses the
endpoint given), creates the stack's tables, queues, buckets and topics there (and what its
routes need: :mod:`cdc_local.routes`), and runs every event source mapping of a route (a
DynamoDB stream's, a Kinesis stream's) with its synthesized settings, invoking the handlers
in-process with their environments resolved to the local resources. ``drain()`` runs until
every stream is read to its end and every batch is settled; ``sweep_ttl()`` plays DynamoDB's
TTL sweeper; ``roll_shards()`` plays DynamoDB's shard rollover (a parent shard closes and a
child opens; :mod:`cdc_local.shards`); ``trim_streams()`` its 24-hour retention. A stack runs
in the region of its ``env``; one that makes a global table keeps its replicas in their regions
in step, and one that reads a replica (ReplicaTable) reads the local replica
(:mod:`cdc_local.replication`; :func:`drain_together` drains both stacks' pipelines).
"""

from __future__ import annotations

import functools
import json
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from cdc_consumer.metric_names import CONSUMER_DIMENSION
from cdc_consumer.service_limits import MAX_STREAM_READERS, MAX_STREAM_READERS_WITH_REPLICAS

from cdc_local.assembly import CloudAssembly, StackTemplate
from cdc_local.authorization import ENFORCEMENT
from cdc_local.destinations import OnFailureDestination
from cdc_local.endpoint import LOCAL_REGION, LocalEndpoint
from cdc_local.event_source_mapping import EventSourceMapping, MappingCounters, MappingSettings
from cdc_local.exceptions import LocalPipelineError
from cdc_local.faults import FaultPlan, Faults
from cdc_local.functions import LocalFunction
from cdc_local.lambda_invoke import LocalInvoke
from cdc_local.replication import Replication, resolve_replica_reads
from cdc_local.resources import LocalResources, create_resources
from cdc_local.retention import STREAM_RETENTION_SECONDS, StreamRetention
from cdc_local.roles import RoleSessions, create_roles
from cdc_local.routes import ROUTES, Feed, RouteContext, SourceContext, route_of
from cdc_local.service_roles import check_service_roles
from cdc_local.shards import roll_shards
from cdc_local.ttl import TtlLedger, TtlSweeper

#: How many lines of handler output the pipeline keeps for inspection (``recent_output``).
OUTPUT_LINES_KEPT = 2000


@dataclass(frozen=True)
class PipelineCounters:
    """Totals over every mapping of the stack, plus the TTL sweeper's deletions."""

    records_read: int
    records_filtered_out: int
    records_delivered: int
    records_succeeded: int
    records_expired: int
    records_discarded: int
    invocations: int
    final_invocations: int
    failed_invocations: int
    partial_failures: int
    bisections: int
    duplicate_deliveries: int
    on_failure_messages: int
    on_failure_records: int
    ttl_deletions: int

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class LocalPipeline:
    """Run a stack's stream consumers locally (every route's: :mod:`cdc_local.routes`).

    Args:
        assembly_dir: the cloud assembly (``cdk.out``).
        stack_name: the stack's artifact id, name or display name.
        endpoint: a running :class:`LocalEndpoint` to use; default: start one (stopped on close).
        faults: faults to inject (:mod:`cdc_local.faults`); default none.
        clock: epoch seconds, for record age, batching windows and TTL; default ``time.time``.
        clock_speed: how much faster than the wall clock a handler's remaining time runs out;
            default 1.0 (real time).
        capture_output: keep handler output out of the terminal (it is parsed for EMF metrics
            and the last lines are kept in ``recent_output``); default True.
        flush_windows: send batches without waiting out ``MaximumBatchingWindowInSeconds``;
            default False (wait, as Lambda does).
        track_records: keep the sequence numbers each mapping's function acknowledged
            (``EventSourceMapping.acknowledged``), for accounting; default False (memory grows
            with the stream).
        stream_retention_seconds: how long the streams keep a record, on ``clock``
            (:meth:`trim_streams` trims them); default DynamoDB's 24 hours.
        enforce_iam: create the template's roles and run each function with credentials of its
            own role (its code, its mapping's reads and its on-failure destination), on an
            endpoint that enforces IAM; a denied call raises
            :class:`~cdc_local.exceptions.AccessDeniedError` and fails the run. Default True, so
            the local run refuses what AWS would (docs/local.md says what moto checks); False
            only for speed where IAM is not what is tested.
    """

    def __init__(
        self,
        assembly_dir: str | Path,
        stack_name: str,
        endpoint: LocalEndpoint | None = None,
        *,
        faults: FaultPlan | None = None,
        clock: Callable[[], float] = time.time,
        clock_speed: float = 1.0,
        capture_output: bool = True,
        flush_windows: bool = False,
        track_records: bool = False,
        stream_retention_seconds: float = STREAM_RETENTION_SECONDS,
        enforce_iam: bool = True,
    ) -> None:
        self.stack: StackTemplate = CloudAssembly(assembly_dir).stack(stack_name)
        # A stack with a region runs in that region of the endpoint's server (a global table's
        # replica lives in another region of the same server: cdc_local.replication).
        self.endpoint = (
            endpoint.in_region(self.stack.region)
            if endpoint is not None and self.stack.region
            else endpoint
        )
        self._owns_endpoint = endpoint is None
        self.faults = Faults(faults) if faults is not None else None
        self.clock = clock
        self.clock_speed = clock_speed
        self.capture_output = capture_output
        self.flush_windows = flush_windows
        self.track_records = track_records
        self.ttl_ledger = TtlLedger()
        #: EMF metric totals over every function, and per ``Consumer`` dimension.
        self.metrics: Counter[str] = Counter()
        self.consumer_metrics: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.recent_output: deque[str] = deque(maxlen=OUTPUT_LINES_KEPT)
        self.resources: LocalResources | None = None
        self.functions: dict[str, LocalFunction] = {}
        self.mappings: dict[str, EventSourceMapping] = {}
        #: How many mappings :meth:`replace_mapping` made of each logical id, the template's
        #: included (a retired one's name, and its UUID, is never taken again).
        self._made: dict[str, int] = {}
        self.sweeper: TtlSweeper | None = None
        #: The stack's global tables' replicas, kept in step (None before provision()).
        self.replication: Replication | None = None
        #: The global tables' replicas this stack reads in its region (a ReplicaTable's custom
        #: resource's logical id -> the table's name).
        self.replica_tables: dict[str, str] = {}
        #: What fills the routes' sources where AWS would (a table's Kinesis destination):
        #: pumped before the mappings read (cdc_local.routes).
        self.feeds: list[Feed] = []
        self.retention = StreamRetention(stream_retention_seconds, clock)
        self.enforce_iam = enforce_iam
        #: Each function's role session (with IAM enforced; None without).
        self.roles: RoleSessions | None = None
        self._enforcing = False
        #: Called with each function's own boto3 default session when the function makes it (its
        #: first client): to watch or intercept what the functions' code calls (each function
        #: has its own session, as each Lambda function has its own process, so hooks on this
        #: process's default session do not see its calls).
        self.session_hooks: list[Callable[[Any], None]] = []

    # -- lifecycle -----------------------------------------------------------------------------

    def provision(self) -> LocalResources:
        """Start the endpoint if needed and create the stack's resources on it (once)."""
        if self.endpoint is None:
            self.endpoint = LocalEndpoint(region=self.stack.region or LOCAL_REGION).start()
        if self.resources is None:
            self.resources = create_resources(self.stack, self.endpoint)
            self.replica_tables = resolve_replica_reads(self.resources, self.endpoint)
            self.replication = Replication.create(self.resources, self.endpoint)
            # Ref of a mapping is its UUID (whatever its route): the redrive lists
            # aws/lambda/<UUID>/, where the destination writes.
            for logical_id in self._mapping_ids():
                self.resources.refs.setdefault(
                    logical_id, _uuid_of(self.stack.stack_name, logical_id)
                )
            for route in ROUTES.values():
                route.provision(self.resources, self.endpoint)
            if self.enforce_iam:
                create_roles(self.resources, self.endpoint)
                check_service_roles(self.resources)
        return self.resources

    def start(self) -> LocalPipeline:
        """Provision, then start every mapping (a LATEST mapping reads from this moment on)."""
        self.provision()
        assert self.endpoint is not None
        if self.enforce_iam and self.roles is None:
            self.roles = RoleSessions(self._resources, self.endpoint)
        self.functions = {
            logical_id: self._function(logical_id) for logical_id in self.stack.functions()
        }
        context = RouteContext(
            self._resources,
            self.endpoint,
            self.ttl_ledger,
            self.faults.plan if self.faults else FaultPlan(),
            self.clock,
        )
        self.feeds = [feed for route in ROUTES.values() for feed in route.feeds(context)]
        for logical_id in self._mapping_ids():
            self.mappings[logical_id] = self._mapping(logical_id)
        if self.roles is not None and not self._enforcing:
            ENFORCEMENT.hold()  # from the mappings' first reads on
            self._enforcing = True
        try:
            for mapping in self.mappings.values():
                try:
                    mapping.start()
                finally:  # a read denied at the start (ListStreams, DescribeStream) is named
                    self.check_access()
        except BaseException:
            self.close()  # not left holding moto's enforcement on
            raise
        self.sweeper = TtlSweeper(self.endpoint, self._ttl_tables(), self.ttl_ledger, self.clock)
        return self

    def close(self) -> None:
        if self._enforcing:
            ENFORCEMENT.release()
            self._enforcing = False
        if self._owns_endpoint and self.endpoint is not None:
            self.endpoint.stop()
            self.endpoint = None

    def __enter__(self) -> LocalPipeline:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def reader_warnings(self) -> list[str]:
        """One line per table whose stream has more readers (mappings and Pipes of this stack)
        than DynamoDB Streams serves: two per shard, one for a table with replicas. The local
        pipeline runs every mapping all the same; it cannot throttle like AWS, so it says so."""
        warnings = []
        for table, readers in sorted(self.stack.stream_readers().items()):
            limit = (
                MAX_STREAM_READERS_WITH_REPLICAS
                if self.stack.has_replicas(table)
                else MAX_STREAM_READERS
            )
            if len(readers) > limit:
                warnings.append(
                    f"the stream of table {table} has {len(readers)} readers "
                    f"({', '.join(readers)}); DynamoDB Streams serves {limit} per shard and "
                    "throttles the others. The local pipeline cannot throttle like AWS: it runs "
                    "them all, so this works here and may lag or lose records to the "
                    "on-failure destination on AWS"
                )
        return warnings

    @property
    def warnings(self) -> list[str]:
        """What the pipeline warns about so far, one line each: :attr:`reader_warnings`, then
        the TTL traps met (a TTL value in milliseconds, a mapping whose filters drop TTL
        deletions: :class:`cdc_local.ttl.TtlLedger`), in the order met."""
        return [*self.reader_warnings, *self.ttl_ledger.warnings]

    # -- running -------------------------------------------------------------------------------

    def poll(self) -> bool:
        """Give every mapping one turn; return whether anything happened."""
        progressed = self.replication.pump() if self.replication is not None else False
        for feed in self.feeds:  # what fills a source, before it is read
            progressed = feed.pump() or progressed
        for mapping in self.mappings.values():
            try:
                progressed = mapping.poll(flush=self.flush_windows) or progressed
            finally:  # a denied read or send fails the run, named, whatever it raised
                self.check_access()
        self._collect_output()
        return progressed

    @property
    def iam_enforced(self) -> bool:
        """Whether the functions run under their own roles with IAM enforced."""
        return self._enforcing

    def check_access(self, function_name: str | None = None) -> None:
        """Raise :class:`~cdc_local.exceptions.AccessDeniedError` for a call denied to a
        function's role (``function_name``'s only, when given) since the last check; the
        pipeline checks after every invocation and every mapping turn, and code that runs a
        function's work itself (the local backfill) calls it too."""
        if self.roles is not None:
            self.roles.check(function_name)

    def drain(self, on_progress: Callable[[PipelineCounters], None] | None = None) -> None:
        """Run until every stream is read to its end and every batch is settled (delivered,
        or discarded to its on-failure destination). Batching windows are waited out unless
        ``flush_windows`` was set."""
        while True:
            progressed = self.poll()
            if on_progress is not None:
                on_progress(self.counters)
            if progressed:
                continue
            if not any(m.pending for m in self.mappings.values()):
                return
            time.sleep(0.01)  # a batching window is open: wait for it (or more records)

    def sweep_ttl(self) -> int:
        """Delete the items whose TTL has passed, as DynamoDB's sweeper does; return how many."""
        assert self.sweeper is not None, "start() the pipeline first"
        return self.sweeper.sweep()

    def trim_streams(self) -> int:
        """Trim the records older than the stream retention on the pipeline's clock, as
        DynamoDB Streams does after 24 hours; return how many (see :mod:`cdc_local.retention`)."""
        return self.retention.trim()

    def roll_shards(self, table_logical_id_prefix: str | None = None) -> dict[str, str]:
        """Close the open shard of each table's stream (or of the table whose logical id starts
        with ``table_logical_id_prefix``) and open its child, as DynamoDB does about every four
        hours; return each table's new open shard id, by local table name. The mappings read a
        child once its parent is read to its end and settled, and the on-failure destinations
        name the shard a batch was read from (see :mod:`cdc_local.shards`). The child's id
        carries the pipeline's clock."""
        table = (
            None if table_logical_id_prefix is None else self.table_name(table_logical_id_prefix)
        )
        return roll_shards(table, now=self.clock())

    def replace_mapping(self, logical_id: str, **changes: Any) -> EventSourceMapping:
        """Create a new mapping of ``logical_id``'s function and stream beside the old one, as
        CloudFormation does when an update replaces an ``AWS::Lambda::EventSourceMapping`` (a
        changed starting position, stream or function): the new one, with a new UUID (its own
        prefix in an S3 on-failure destination), reads the stream from TRIM_HORIZON while the
        old one still runs; both deliver the same records until :meth:`retire_mapping`
        deletes the old one. ``changes``: :class:`MappingSettings` fields the new mapping has
        otherwise (``tumbling_window_seconds=0``, ...). Returns the new mapping, kept in
        :attr:`mappings` as ``<logical id>~<n>`` (its n-th mapping, the template's the first)."""
        self._made[logical_id] = self._made.get(logical_id, 1) + 1  # the template's the first
        name = f"{logical_id}~{self._made[logical_id]}"
        changes = {"starting_position": "TRIM_HORIZON", **changes}
        mapping = self._mapping(logical_id, name=name, changes=changes)
        self.mappings[name] = mapping
        try:
            mapping.start()
        finally:
            self.check_access()
        return mapping

    def retire_mapping(self, name: str) -> None:
        """Delete the mapping ``name`` (the old one, once its replacement runs): it reads and
        invokes nothing more. The records it read and had not settled are its successor's to
        deliver (it reads the stream from its start)."""
        if name not in self.mappings:
            raise LocalPipelineError(
                f"no mapping {name!r} in stack {self.stack.stack_name}; its mappings are "
                f"{sorted(self.mappings)}"
            )
        del self.mappings[name]

    def run(self) -> PipelineCounters:
        """Drain, sweep TTL, drain again (the TTL deletions' REMOVE records); return the totals."""
        self.drain()
        if self.sweep_ttl():
            self.drain()
        return self.counters

    # -- what happened ---------------------------------------------------------------------------

    @property
    def counters(self) -> PipelineCounters:
        totals = Counter[str]()
        for mapping in self.mappings.values():
            for f in fields(MappingCounters):
                totals[f.name] += getattr(mapping.counters, f.name)
        ttl = self.sweeper.deleted if self.sweeper is not None else 0
        return PipelineCounters(
            **{f.name: totals[f.name] for f in fields(MappingCounters)}, ttl_deletions=ttl
        )

    def table_name(self, logical_id_prefix: str) -> str:
        """The local name of the table whose logical id starts with ``logical_id_prefix``."""
        return self._named(self._resources.table_names, logical_id_prefix, "table")

    def queue_url(self, logical_id_prefix: str) -> str:
        return self._named(self._resources.queue_urls, logical_id_prefix, "queue")

    def bucket_name(self, logical_id_prefix: str) -> str:
        return self._named(self._resources.bucket_names, logical_id_prefix, "bucket")

    def client(self, service: str) -> Any:
        assert self.endpoint is not None, "start() the pipeline first"
        return self.endpoint.client(service)

    # -- building --------------------------------------------------------------------------------

    @property
    def _resources(self) -> LocalResources:
        if self.resources is None:
            raise LocalPipelineError("start() the pipeline first")
        return self.resources

    def _named(self, names: Mapping[str, str], prefix: str, kind: str) -> str:
        matches = [name for logical_id, name in names.items() if logical_id.startswith(prefix)]
        if len(matches) != 1:
            raise LocalPipelineError(
                f"{len(matches)} {kind}s have a logical id starting with {prefix!r} in stack "
                f"{self.stack.stack_name} (its {kind}s: {sorted(names)}); give a longer prefix"
            )
        return matches[0]

    def _function(self, logical_id: str) -> LocalFunction:
        resources = self._resources
        spec = self.stack.functions()[logical_id]
        layers = self.stack.layers()
        layer_dirs = []
        for layer in spec.layers:
            if isinstance(layer, Mapping) and layer.get("Ref") in layers:
                layer_dirs.append(layers[layer["Ref"]].asset_dir)
        environment = {
            name: str(resources.resolve(value)) for name, value in spec.environment.items()
        }
        assert self.endpoint is not None
        name = resources.refs[logical_id]
        session = self.roles.of(spec, name) if self.roles is not None else None
        return LocalFunction(
            spec=spec,
            name=name,
            arn=resources.attributes[(logical_id, "Arn")],
            environment=environment,
            layer_dirs=tuple(layer_dirs),
            endpoint_environment=self.endpoint.environment(),
            credentials=session.environment() if session is not None else {},
            check_access=(lambda function: self.check_access(function.name))
            if session is not None
            else None,
            boto3_setup=functools.partial(
                self._hook_session, LocalInvoke(self._functions_by_reference, session)
            ),
            clock=self.clock,
            clock_speed=self.clock_speed,
            capture_output=self.capture_output,
            faults=self.faults,
        )

    def _mapping(
        self, logical_id: str, name: str | None = None, changes: Mapping[str, Any] | None = None
    ) -> EventSourceMapping:
        """The mapping ``logical_id`` of the template, or (with ``name``) a replacement of it
        whose settings differ by ``changes``."""
        resources = self._resources
        properties = resources.resolve(dict(self.stack.resources[logical_id]["Properties"]))
        settings = replace(MappingSettings.from_properties(properties), **(changes or {}))
        name = name or logical_id
        function = self._function_of(self.stack.resources[logical_id]["Properties"]["FunctionName"])
        # Lambda reads the stream and sends to the destination with the function's role.
        credentials = (
            self.roles.sessions[function.spec.logical_id].client_credentials()
            if self.roles is not None
            else None
        )
        destination = None
        if settings.on_failure_arn:
            assert self.endpoint is not None
            destination = OnFailureDestination(
                settings.on_failure_arn,
                self.endpoint,
                queue_url=resources.queue_url_for_arn(settings.on_failure_arn),
                mapping_uuid=_uuid_of(self.stack.stack_name, name),
                credentials=credentials,
            )
        assert self.endpoint is not None
        arn = properties["EventSourceArn"]
        route = route_of(arn)
        client = self.endpoint.client(route.client_service, credentials=credentials)
        return EventSourceMapping(
            name=name,
            source=route.source(
                client, arn, SourceContext(function.arn, self.ttl_ledger, self.feeds)
            ),
            function=function,
            settings=settings,
            destination=destination,
            ttl_ledger=self.ttl_ledger,
            faults=self.faults,
            clock=self.clock,
            track_records=self.track_records,
        )

    def _mapping_ids(self) -> list[str]:
        """The stack's event source mappings, route by route."""
        return [i for route in ROUTES.values() for i in route.mapping_ids(self.stack)]

    def _hook_session(self, invoke: LocalInvoke, session: Any) -> None:
        """A function's own boto3 session: Invoke of the stack's functions answered in process,
        the faults injected into its calls, and :attr:`session_hooks`."""
        invoke.register(session)
        if self.faults is not None:
            self.faults.hook(session)
        for hook in self.session_hooks:
            hook(session)

    def _functions_by_reference(self) -> dict[str, LocalFunction]:
        """The stack's functions by name and by ARN (what Lambda's Invoke accepts)."""
        found = {function.name: function for function in self.functions.values()}
        found.update({function.arn: function for function in self.functions.values()})
        return found

    def _function_of(self, reference: Any) -> LocalFunction:
        if isinstance(reference, Mapping) and "Ref" in reference:
            return self.functions[reference["Ref"]]
        if isinstance(reference, Mapping) and "Fn::GetAtt" in reference:
            return self.functions[reference["Fn::GetAtt"][0]]
        for function in self.functions.values():
            if reference in (function.name, function.arn):
                return function
        raise LocalPipelineError(
            f"event source mapping FunctionName {reference!r} is not a function of stack "
            f"{self.stack.stack_name}"
        )

    def _ttl_tables(self) -> dict[str, str]:
        """The tables the sweeper expires items of: the stack's with TTL, and the replicas it
        reads in its region (each region's TTL process deletes its own replica's items)."""
        tables = {}
        for table in self.stack.tables():
            ttl = self._resources.resolve(dict(table.properties)).get("TimeToLiveSpecification")
            if ttl and ttl.get("Enabled"):
                tables[self._resources.table_names[table.logical_id]] = ttl["AttributeName"]
        assert self.endpoint is not None
        ddb = self.endpoint.client("dynamodb")
        for name in self.replica_tables.values():
            ttl = ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
            if ttl.get("TimeToLiveStatus") == "ENABLED":
                tables[name] = ttl["AttributeName"]
        return tables

    def _collect_output(self) -> None:
        for function in self.functions.values():
            while function.outputs:
                text = function.outputs.popleft()
                for line in text.splitlines():
                    self.recent_output.append(line)
                    consumer, values = emf_metrics(line)
                    self.metrics.update(values)
                    if consumer is not None:
                        self.consumer_metrics[consumer].update(values)


def drain_together(pipelines: list[LocalPipeline]) -> None:
    """Drain several pipelines on one endpoint as one: each polls in turn until none has
    anything to do, so a write one pipeline's replication copies into another's region is read
    there in the same drain (global tables: docs/local.md). Start the pipeline of the stack that
    makes the global table first."""
    while True:
        progressed = False
        for pipeline in pipelines:
            progressed = pipeline.poll() or progressed
        if progressed:
            continue
        if not any(m.pending for p in pipelines for m in p.mappings.values()):
            return
        time.sleep(0.01)  # a batching window is open: wait for it (or more records)


def emf_metrics(line: str) -> tuple[str | None, dict[str, float]]:
    """The ``Consumer`` dimension and the metric values of one CloudWatch embedded-metric-format
    log line (``(None, {})`` if it is not one)."""
    if not line.startswith("{") or '"_aws"' not in line:
        return None, {}
    try:
        document = json.loads(line)
    except json.JSONDecodeError:
        return None, {}
    values: dict[str, float] = {}
    for directive in document.get("_aws", {}).get("CloudWatchMetrics", []):
        for metric in directive.get("Metrics", []):
            value = document.get(metric.get("Name"))
            if isinstance(value, int | float):
                values[metric["Name"]] = values.get(metric["Name"], 0) + value
            elif isinstance(value, list):
                values[metric["Name"]] = values.get(metric["Name"], 0) + sum(value)
    consumer = document.get(CONSUMER_DIMENSION)
    return (consumer if isinstance(consumer, str) else None), values


def _uuid_of(stack_name: str, logical_id: str) -> str:
    import uuid

    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"cdc-local:{stack_name}:{logical_id}"))
