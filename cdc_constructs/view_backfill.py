"""ViewBackfill: a new view over a table that already holds data, or a view rebuilt, while the
stream keeps flowing.

A view is exact only from its consumer's first record, and the stream holds 24 hours. A
backfill reads the table's present state and hands each item to the consumer's own projections
as a *snapshot change*, reconciled with the stream by a time horizon (the runtime's side,
``cdc_consumer.backfill``; docs/backfill.md). This construct provisions the engine: a Step
Functions state machine whose Distributed Map runs one Lambda invocation per parallel-scan
segment (:mod:`~cdc_constructs.backfill_state_machine`), the segment function, alarms and a
dashboard widget.
"""

from __future__ import annotations

import json

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from cdc_consumer.environment_variables import (
    BACKFILL_EXECUTION_TIMEOUT_ENV,
    BACKFILL_ITEMS_PER_SECOND_ENV,
    BACKFILL_MAX_CONCURRENCY_ENV,
    BACKFILL_PAGE_SIZE_ENV,
    BACKFILL_SKEW_SECONDS_ENV,
    BACKFILL_TABLE_ENV,
    CONSUMER_FILTERS_ENV,
    CONSUMER_FUNCTION_NAME_ENV,
    CONSUMER_NAME_ENV,
    CONSUMER_PROGRESS_ENV,
    IDEMPOTENCY_TABLE_ENV,
    MARKER_TTL_ENV,
    METRICS_NAMESPACE_ENV,
    STREAM_ARN_ENV,
)
from cdc_consumer.handler_paths import BACKFILL_HANDLER
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.acknowledge import acknowledge
from cdc_constructs.backfill_monitoring import BackfillMonitoring
from cdc_constructs.backfill_options import BackfillOptions
from cdc_constructs.backfill_sources import BackfillSource
from cdc_constructs.backfill_state_machine import (
    acknowledge_engine,
    backfill_definition,
    let_list_executions,
    own_map_policy,
    task_timeout,
)
from cdc_constructs.function import make_function, make_log_group
from cdc_constructs.permissions import (
    BACKFILL_MAPPING_ACTIONS,
    BACKFILL_PROGRESS_ACTIONS,
    BACKFILL_SCAN_ACTIONS,
    INVOKE_ACTIONS,
    STREAM_KEY_ACTIONS,
    TABLE_KEY_ACTIONS,
    allow,
    grant_key,
)
from cdc_constructs.runtime_layer import ConsumerRuntimeLayer
from cdc_constructs.stream_consumer import StreamConsumer
from cdc_constructs.validation import raise_if_any

__all__ = ["ViewBackfill"]


class ViewBackfill(Construct):
    """A backfill of one consumer's view from its table: a Step Functions state machine with a
    Distributed Map over the table's parallel-scan segments. Start an execution (input ``{}``,
    or ``{"backfillId": ..., "totalSegments": ..., "horizon": ...}``) to backfill; starting the
    same ``backfillId`` again (a new execution, any name) resumes it under the horizon and
    segment count it was first planned with, and is a no-op for what was done; another horizon
    is refused before anything is written, and so is a second execution while one runs it.

    The segment function (the runtime layer's backfill handler) scans its segment with
    ``ConsistentRead`` page after page, records its progress after each, and hands each page
    to the consumer function as snapshot changes; the consumer gets ``CDC_RECORD_PROGRESS=1``
    (how far it has applied the stream, which the start step checks the horizon against).

    :param consumer: the :class:`StreamConsumer` whose view is backfilled (its table is
        scanned, its function applies the rows). A ``KinesisConsumer`` is refused: the horizon
        is checked against the consumer's progress on the table's own stream.
    :param member: with a consumer group (``StreamConsumer(members=...)``), the
        ``consumer_name`` of the one member backfilled. Required with a group, refused
        without one. Default: none (the consumer itself).
    :param total_segments: the parallel scan's ``TotalSegments`` (1..10,000). Default: the
        start step's, from the table's size when the backfill starts (DescribeTable): one
        segment per 2 GB, at least ``max_concurrency`` while the table has a page of items for
        each. An execution's input ``totalSegments`` overrides it.
    :param max_concurrency: segments scanned at once (the Map's ``MaxConcurrency``). Default
        10. The segment function's reserved concurrency is this plus one (the start step),
        so two executions at once cannot double the load.
    :param items_per_second: the read rate over all segments; each segment invocation is
        paced to this divided by ``max_concurrency``. Default 1,000 (about 250 read units/s of
        1 KB items: the application keeps the table's capacity). None: no limit.
    :param page_size: items per Scan page and per consumer invocation. Default 1,000.
    :param clock_skew_margin: how far below the start time the default horizon lies, at
        least 1 s (DynamoDB stamps a change rounded down to the second). Default: the
        runtime's (5 s).
    :param timeout: the longest a backfill runs: the execution then times out and its alarm
        fires (a new execution with the same ``backfillId`` resumes). Default 24 hours.
    :param segment_timeout: the segment function's timeout. Default 15 minutes (Lambda's
        maximum: fewer turns of the loop); the runtime stops a page before the deadline. Each
        task of the state machine times out a minute after it.
    :param memory_size: the segment function's memory. Default 256 MB.
    :param alarm_topic: the topic the alarms notify. Default: the consumer's.
    :param dashboard: add the backfill's widgets here. Default: the consumer's (if any).
    :param log_retention: the segment function's and the state machine's logs. Default: the
        consumer function's.

    Escape hatches: :attr:`state_machine`, :attr:`function`, :attr:`role`,
    :attr:`log_group` (the function's), :attr:`state_machine_log_group`, :attr:`alarms`,
    :attr:`consumer_name` (the consumer or member backfilled), :attr:`total_segments`,
    :attr:`options`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        consumer: StreamConsumer,
        member: str | None = None,
        total_segments: int | None = None,
        max_concurrency: int = defaults.BACKFILL_MAX_CONCURRENCY,
        items_per_second: float | None = defaults.BACKFILL_ITEMS_PER_SECOND,
        page_size: int = defaults.BACKFILL_PAGE_SIZE,
        clock_skew_margin: Duration | None = None,
        timeout: Duration | None = None,
        segment_timeout: Duration | None = None,
        memory_size: int = defaults.BACKFILL_MEMORY_SIZE_MB,
        alarm_topic: sns.ITopic | None = None,
        dashboard: cloudwatch.Dashboard | None = None,
        log_retention: logs.RetentionDays | None = None,
    ) -> None:
        props = dict(locals())
        for name in ("self", "scope", "construct_id", "__class__"):
            props.pop(name, None)
        options = BackfillOptions(**props)
        raise_if_any(f"ViewBackfill {construct_id!r}", options.problems())
        super().__init__(scope, construct_id)
        self.options = options
        self.source = BackfillSource.of(consumer, member)
        self.consumer_name = self.source.consumer_name
        self.total_segments = options.segments
        self._make_function()
        self._make_state_machine()
        consumer.function.add_environment(CONSUMER_PROGRESS_ENV, "1")
        self.monitoring = BackfillMonitoring(
            self,
            "Monitoring",
            state_machine=self.state_machine,
            function=self.function,
            consumer_name=self.consumer_name,
            metrics_namespace=consumer.metrics_namespace,
            alarm_topic=alarm_topic or consumer.alarm_topic,
            dashboard=dashboard or _dashboard_of(consumer),
        )
        self.alarms = self.monitoring.alarms

    @property
    def _log_retention(self) -> logs.RetentionDays:
        consumer = self.source.consumer
        return self.options.log_retention or consumer.options.function.log_retention

    def _make_function(self) -> None:
        consumer, options = self.source.consumer, self.options
        worker = Construct(self, "SegmentFunction")
        self.role, self.log_group, self.function = make_function(
            worker,
            description=f"cdc-constructs backfill of {self.consumer_name}",
            # The handler lives in the runtime layer; the function's own code is a pointer.
            code=lambda_.Code.from_inline(f"# The backfill handler is {BACKFILL_HANDLER}.\n"),
            handler=BACKFILL_HANDLER,
            layers=[ConsumerRuntimeLayer.of(self)],
            environment=self._environment(),
            memory_size=int(options.memory_size),
            timeout=options.function_timeout,
            log_retention=self._log_retention,
            log_encryption_key=consumer.options.function.log_encryption_key,
            invoked_by=f"Invoked by the backfill state machine {self.node.path}",
            reserved_concurrent_executions=int(options.max_concurrency) + 1,
        )
        self._grant(self.function)

    def _environment(self) -> dict[str, str]:
        consumer, options = self.source.consumer, self.options
        variables = {
            BACKFILL_TABLE_ENV: self.source.table.table_name,
            STREAM_ARN_ENV: self.source.stream_arn,
            CONSUMER_FUNCTION_NAME_ENV: consumer.function.function_name,
            CONSUMER_NAME_ENV: self.consumer_name,
            IDEMPOTENCY_TABLE_ENV: consumer.idempotency_table.table_name,
            # Its progress records in the consumer's idempotency table live as its markers do.
            MARKER_TTL_ENV: str(int(consumer.marker_lifetime.to_seconds())),
            METRICS_NAMESPACE_ENV: consumer.metrics_namespace,
            BACKFILL_PAGE_SIZE_ENV: str(int(options.page_size)),
            BACKFILL_MAX_CONCURRENCY_ENV: str(int(options.max_concurrency)),
            BACKFILL_EXECUTION_TIMEOUT_ENV: str(int(options.execution_timeout.to_seconds())),
        }
        filters = consumer.options.mapping.filter_patterns
        if filters:  # a snapshot batch is invoked directly: the mapping's filter is not applied
            variables[CONSUMER_FILTERS_ENV] = json.dumps([dict(f) for f in filters])
        rate = options.segment_items_per_second
        if rate is not None:
            variables[BACKFILL_ITEMS_PER_SECOND_ENV] = f"{rate:g}"
        if options.clock_skew_margin is not None:
            skew = options.clock_skew_margin.to_seconds()
            variables[BACKFILL_SKEW_SECONDS_ENV] = str(int(skew))
        return variables

    def _grant(self, function: lambda_.Function) -> None:
        """Scan this table, keep progress in the consumer's idempotency table, invoke this
        consumer, list mappings (no resource-level permission): nothing else."""
        consumer, table = self.source.consumer, self.source.table
        for actions, resource in (
            (BACKFILL_SCAN_ACTIONS, table.table_arn),
            (BACKFILL_PROGRESS_ACTIONS, consumer.idempotency_table.table_arn),
            (INVOKE_ACTIONS, consumer.function.function_arn),
            (BACKFILL_MAPPING_ACTIONS, "*"),
        ):
            function.add_to_role_policy(allow(actions, [resource]))
        grant_key(function, table.encryption_key, STREAM_KEY_ACTIONS)
        grant_key(function, consumer.idempotency_table.encryption_key, TABLE_KEY_ACTIONS)
        acknowledge(
            self.role,
            "AwsSolutions-IAM5[Resource::*]",
            "lambda:ListEventSourceMappings only (the start step checks the consumer has an "
            "enabled mapping on the stream): Lambda has no resource-level permission for it.",
        )

    def _make_state_machine(self) -> None:
        scope = Construct(self, "Engine")
        self.state_machine_log_group = make_log_group(
            scope, self._log_retention, self.source.consumer.options.function.log_encryption_key
        )
        definition = backfill_definition(
            scope,
            self.function,
            self.total_segments,
            int(self.options.max_concurrency),
            task_timeout(self.options.function_timeout),
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            comment=f"cdc-constructs backfill of {self.consumer_name}",
            definition_body=sfn.DefinitionBody.from_chainable(definition),
            state_machine_type=sfn.StateMachineType.STANDARD,
            timeout=self.options.execution_timeout,
            logs=sfn.LogOptions(
                destination=self.state_machine_log_group,
                level=sfn.LogLevel.ALL,
                include_execution_data=False,  # resume keys and errors quote items
            ),
        )
        own_map_policy(self.state_machine)
        let_list_executions(self, self.state_machine, self.role)
        acknowledge_engine(self.state_machine, self.function)
        if self.options.items_per_second is None:
            acknowledge(
                self.state_machine,
                "CDC-BF3",
                "items_per_second=None was given to this ViewBackfill: its segments read as "
                "fast as the table serves them, by choice.",
            )


def _dashboard_of(consumer: StreamConsumer) -> cloudwatch.Dashboard | None:
    return consumer.monitoring.dashboard if consumer.monitoring else None
