"""The CdcChecks rules: what a safe stream consumer looks like, one rule per setting.

Every rule judges a ``StreamSource`` (a Lambda event source mapping or an EventBridge Pipe that
reads a DynamoDB or Kinesis stream) and returns a ``NagRuleCompliance``. Rule ids are
``CDC-ESM1`` ... ``CDC-ESM11`` for both kinds of consumer: a pipe polls its stream with the same
engine and the same settings, so one id names one concern wherever it appears.

Values a rule needs but that are only known at deployment (parameters, imports, conditions)
make the rule raise; cdk-nag reports the rule for that resource, so an unverifiable setting is
a finding that can be acknowledged with its reason, never a silent pass.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnResource
from cdc_consumer.environment_variables import REPLICATED_TABLE_ENV
from cdk_nag import NagMessageLevel, NagRuleCompliance, NagRules

from cdc_constructs.nag.marker_windows import markers_outlive_replay_windows, runtime_variables
from cdc_constructs.nag.stream_source import (
    StreamSource,
    UnresolvableValueError,
    dig,
    is_intrinsic,
    replica_stream_read,
)
from cdc_constructs.nag.tumbling_windows import (
    ledger_without_window,
    window_beside_parallelization,
    window_cost,
)
from cdc_constructs.record_shape import (
    Fields,
    ShapeProblem,
    shape_problems,
)
from cdc_constructs.ttl_identity import names_identity, requires_identity
from cdc_constructs.validation import IMAGES_BY_VIEW_TYPE

PACK_NAME = "CDC"
"""cdk-nag prefixes each rule id with the pack name: ``CDC-ESM1``."""

COMPLIANT = NagRuleCompliance.COMPLIANT
NON_COMPLIANT = NagRuleCompliance.NON_COMPLIANT
NOT_APPLICABLE = NagRuleCompliance.NOT_APPLICABLE

Check = Callable[[CfnResource, Any], NagRuleCompliance]
"""A rule's judgement of one resource: a StreamSource, or (backfill rules) a BackfillMachine."""


@dataclass(frozen=True)
class CdcRule:
    """One rule of the pack."""

    suffix: str
    """The id after the pack name, e.g. ``ESM1``."""
    level: NagMessageLevel
    info: str
    """The cause, one line."""
    explanation: str
    """Why it matters and what to change."""
    check: Check
    describe: Callable[[CfnResource, Any], str | None] | None = None
    """What this finding is about, put before ``info`` (counts and names), when it says more."""

    @property
    def rule_id(self) -> str:
        """The id findings carry and ``Validations.of(x).acknowledge`` takes, e.g. ``CDC-ESM1``."""
        return f"{PACK_NAME}-{self.suffix}"


def _primitive(node: CfnResource, value: Any) -> Any:
    """``value`` itself; raises (via cdk-nag) when it is only known at deployment."""
    return NagRules.resolve_if_primitive(node, value)


def _is_true(node: CfnResource, value: Any) -> bool:
    return value is not None and str(_primitive(node, value)).lower() == "true"


def finite_retries(node: CfnResource, source: StreamSource) -> NagRuleCompliance:
    """MaximumRetryAttempts is set and not -1 (infinite, the default)."""
    retries = dig(source.settings, "MaximumRetryAttempts")
    if retries is None or int(_primitive(node, retries)) < 0:
        return NON_COMPLIANT
    return COMPLIANT


def record_age_below_retention(node: CfnResource, source: StreamSource) -> NagRuleCompliance:
    """MaximumRecordAgeInSeconds is set, not -1, and below the stream's retention."""
    age = dig(source.settings, "MaximumRecordAgeInSeconds")
    if age is None:
        return NON_COMPLIANT
    seconds = int(_primitive(node, age))
    if seconds < 0 or seconds >= source.retention_seconds(node):
        return NON_COMPLIANT
    return COMPLIANT


def bisect_on_error(node: CfnResource, source: StreamSource) -> NagRuleCompliance:
    """ESM: BisectBatchOnFunctionError true. Pipe: OnPartialBatchItemFailure AUTOMATIC_BISECT."""
    if source.is_pipe:
        mode = dig(source.settings, "OnPartialBatchItemFailure")
        bisects = mode is not None and _primitive(node, mode) == "AUTOMATIC_BISECT"
    else:
        bisects = _is_true(node, dig(source.settings, "BisectBatchOnFunctionError"))
    return COMPLIANT if bisects else NON_COMPLIANT


def on_failure_destination(node: CfnResource, source: StreamSource) -> NagRuleCompliance:
    """ESM: DestinationConfig.OnFailure.Destination. Pipe: DeadLetterConfig.Arn.

    Any value counts, a reference included: the rule asks that there is one.
    """
    if source.is_pipe:
        destination = dig(source.settings, "DeadLetterConfig", "Arn")
    else:
        destination = dig(source.settings, "DestinationConfig", "OnFailure", "Destination")
    return COMPLIANT if destination not in (None, "") else NON_COMPLIANT


#: Template types and ARN services of on-failure destinations that keep only a pointer.
_POINTER_DESTINATION_TYPES = {"AWS::SQS::Queue": "SQS", "AWS::SNS::Topic": "SNS"}
_POINTER_DESTINATION_SERVICES = {":sqs:": "SQS", ":sns:": "SNS"}


def on_failure_keeps_records(node: CfnResource, source: StreamSource) -> NagRuleCompliance:
    """A DynamoDB stream mapping's on-failure destination is not an SQS queue or SNS topic
    (which get the batch's shard and sequence numbers only; S3 also gets the batch).

    Not applicable to pipes (their dead-letter target is SQS only), Kinesis sources (their
    retention can be set up to a year) and mappings without a destination (CDC-ESM4).
    """
    if source.is_pipe or not source.reads_table_stream:
        return NOT_APPLICABLE
    destination = dig(source.settings, "DestinationConfig", "OnFailure", "Destination")
    if destination in (None, ""):
        return NOT_APPLICABLE
    target = NagRules.resolve_resource_from_intrinsic(node, destination)
    if isinstance(target, str) and target in source.resources:
        resource_type = source.resources[target].get("Type")
        return NON_COMPLIANT if resource_type in _POINTER_DESTINATION_TYPES else COMPLIANT
    text = destination if isinstance(destination, str) else ""
    if not text:
        raise UnresolvableValueError(
            f"on-failure destination {destination!r} is only known at deployment"
        )
    if any(service in text for service in _POINTER_DESTINATION_SERVICES):
        return NON_COMPLIANT
    return COMPLIANT


def report_batch_item_failures(node: CfnResource, source: StreamSource) -> NagRuleCompliance:
    """ESM: FunctionResponseTypes contains ReportBatchItemFailures.

    Not applicable to a pipe: a pipe honours a ``batchItemFailures`` response from its Lambda or
    Step Functions target without a setting.
    """
    if source.is_pipe:
        return NOT_APPLICABLE
    types = dig(source.settings, "FunctionResponseTypes") or []
    if is_intrinsic(types):
        raise UnresolvableValueError(f"FunctionResponseTypes {types!r} is only known at deployment")
    if "ReportBatchItemFailures" in (_primitive(node, t) for t in types):
        return COMPLIANT
    return NON_COMPLIANT


def trim_horizon(node: CfnResource, source: StreamSource) -> NagRuleCompliance:
    """StartingPosition is TRIM_HORIZON."""
    position = dig(source.settings, "StartingPosition")
    if position is not None and _primitive(node, position) == "TRIM_HORIZON":
        return COMPLIANT
    return NON_COMPLIANT


def _images_referenced(pattern: Any) -> Iterator[str]:
    """``NewImage``/``OldImage`` keys anywhere in a filter pattern (``$or`` branches included)."""
    if isinstance(pattern, Mapping):
        for key, value in pattern.items():
            if key in ("NewImage", "OldImage"):
                yield key
            yield from _images_referenced(value)
    elif isinstance(pattern, list):
        for item in pattern:
            yield from _images_referenced(item)


def filters_match_stream_view(node: CfnResource, source: StreamSource) -> NagRuleCompliance:
    """Filters use only the images the source table's StreamViewType carries.

    Applies when the source is a DynamoDB table in the same template (its StreamViewType is
    known) and the consumer has filters; a table defined elsewhere cannot be checked.
    """
    if source.table is None:
        return NOT_APPLICABLE
    view = dig(source.table, "Properties", "StreamSpecification", "StreamViewType")
    patterns = source.filter_patterns()
    if view is None or not patterns:
        return NOT_APPLICABLE
    carried = IMAGES_BY_VIEW_TYPE.get(str(_primitive(node, view)), frozenset())
    for pattern in patterns:
        referenced = set(_images_referenced(json.loads(_primitive(node, pattern))))
        if referenced - carried:
            return NON_COMPLIANT
    return COMPLIANT


def _record_shape(source: StreamSource) -> Fields | None:
    """The shape of the records ``source`` filters: a DynamoDB stream record; a Kinesis record,
    with a DynamoDB change as ``data`` when a table of the template streams into it."""
    if source.route is None:
        return None
    return source.route.shape(source.carries_table_changes)


def _shape_problems(node: CfnResource, source: StreamSource) -> list[ShapeProblem]:
    shape = _record_shape(source)
    found: list[ShapeProblem] = []
    for index, pattern in enumerate(source.filter_patterns() if shape else ()):
        try:
            parsed = json.loads(_primitive(node, pattern))
        except (TypeError, ValueError):
            continue  # not a JSON pattern: Lambda and Pipes refuse it at deployment
        if isinstance(parsed, Mapping):
            found += shape_problems(parsed, shape, f"filters[{index}]")  # type: ignore[arg-type]
    return found


def filters_match_record_shape(node: CfnResource, source: StreamSource) -> NagRuleCompliance:
    """Every field and attribute type a filter names is one the record can have, at every
    level whose shape is known (:mod:`cdc_constructs.record_shape`)."""
    if _record_shape(source) is None or not source.filter_patterns():
        return NOT_APPLICABLE
    return NON_COMPLIANT if _shape_problems(node, source) else COMPLIANT


def describe_shape_problems(node: CfnResource, source: StreamSource) -> str | None:
    found = _shape_problems(node, source) if _record_shape(source) is not None else []
    return " ".join(f"{problem}." for problem in found) or None


def _iterator_age_function_dimensions(alarm: Mapping[str, Any]) -> Iterator[Any]:
    """The FunctionName dimension values of the AWS/Lambda IteratorAge metrics an alarm watches,
    as a single metric or inside metric math."""
    properties = alarm.get("Properties") or {}
    metrics = [properties]
    for query in properties.get("Metrics") or []:
        if isinstance(query, Mapping):
            metric = (query.get("MetricStat") or {}).get("Metric")
            if isinstance(metric, Mapping):
                metrics.append(metric)
    for metric in metrics:
        if metric.get("MetricName") != "IteratorAge":
            continue
        if metric.get("Namespace") not in (None, "AWS/Lambda"):
            continue
        for dimension in metric.get("Dimensions") or []:
            if isinstance(dimension, Mapping) and dimension.get("Name") == "FunctionName":
                yield dimension.get("Value")


def iterator_age_alarm(node: CfnResource, source: StreamSource) -> NagRuleCompliance:
    """An AWS::CloudWatch::Alarm in the same template watches the function's IteratorAge.

    The alarm's FunctionName dimension must refer to the mapping's function: the same
    reference (Ref / GetAtt of the function or the alias it is invoked through) or the same
    literal name. Not applicable to a pipe, which publishes no IteratorAge metric.
    """
    if source.is_pipe:
        return NOT_APPLICABLE
    names = source.function_names(node)
    for resource in source.resources.values():
        if resource.get("Type") != "AWS::CloudWatch::Alarm":
            continue
        for value in _iterator_age_function_dimensions(resource):
            if NagRules.resolve_resource_from_intrinsic(node, value) in names:
                return COMPLIANT
    return NON_COMPLIANT


def at_most_two_readers(node: CfnResource, source: StreamSource) -> NagRuleCompliance:
    """The DynamoDB stream has at most two readers (mappings and pipes, across the app's
    stacks), or one when its table has replicas."""
    if source.reads_another_stream or source.readers is None:
        return NOT_APPLICABLE
    stream = source.readers.stream_of(node)
    if stream is None:
        return NOT_APPLICABLE
    return NON_COMPLIANT if stream.over_limit and not stream.accepted else COMPLIANT


def describe_readers(node: CfnResource, source: StreamSource) -> str | None:
    stream = source.readers.stream_of(node) if source.readers is not None else None
    return stream.describe() if stream is not None and stream.over_limit else None


def _replicated(node: CfnResource, table: Mapping[str, Any] | None) -> bool:
    """Whether ``table`` (a template resource) is a global table with more than one replica."""
    if table is None or table.get("Type") != "AWS::DynamoDB::GlobalTable":
        return False
    replicas = dig(table, "Properties", "Replicas")  # a list, its items may hold intrinsics
    return isinstance(replicas, list) and len(replicas) > 1


def ttl_identity_filter_on_replicas(node: CfnResource, source: StreamSource) -> NagRuleCompliance:
    """No filter on the stream of a table with replicas drops replicated TTL deletions: none
    *requires* the TTL identity (``userIdentity``, however written: ``$or`` alternatives and a
    Kinesis record's ``data`` included; :mod:`cdc_constructs.ttl_identity`), since the mapping
    or pipe then drops them before any code sees them; and one that names it otherwise only
    on a consumer running this library's runtime told the table is replicated
    (``CDC_REPLICATED_TABLE``), which recognises replicated expiries (docs/global-tables.md).

    A table with replicas: a global table of the same template with more than one replica, the
    Kinesis stream such a table streams into, or a replica's stream read at deployment by a
    ``DescribeTable`` custom resource (what ReplicaTable makes)."""
    if not _reads_a_replicated_table(node, source):
        return NOT_APPLICABLE
    patterns = [json.loads(_primitive(node, p)) for p in source.filter_patterns()]
    if any(requires_identity(p) for p in patterns):
        return NON_COMPLIANT
    if not any(names_identity(p) for p in patterns):
        return COMPLIANT
    variables = runtime_variables(source, node) or {}
    told = str(variables.get(REPLICATED_TABLE_ENV, "")).lower() == "true"
    return COMPLIANT if told else NON_COMPLIANT


def _reads_a_replicated_table(node: CfnResource, source: StreamSource) -> bool:
    return _replicated(node, source.feeding_table) or _reads_a_replica(node, source)


def _reads_a_replica(node: CfnResource, source: StreamSource) -> bool:
    """Whether the source ARN is a custom resource's ``DescribeTable`` answer: a global table's
    replica's stream, read in its region at deployment (cdc_constructs.ReplicaTable)."""
    return replica_stream_read(source.source_arn, source.resources) is not None


RULES: tuple[CdcRule, ...] = (
    CdcRule(
        "ESM1",
        NagMessageLevel.ERROR,
        "The stream consumer retries a failing batch forever: MaximumRetryAttempts is unset or -1.",
        "With infinite retries one poison record blocks its shard until the stream trims it "
        "(24 hours for DynamoDB Streams), and every later change on that shard waits behind "
        "it. Set a small finite MaximumRetryAttempts (e.g. 5: retry_attempts on a Lambda event "
        "source, maximumRetryAttempts on a pipe's stream parameters), with bisect and an "
        "on-failure destination so failing records are set aside and the shard moves on.",
        finite_retries,
    ),
    CdcRule(
        "ESM2",
        NagMessageLevel.ERROR,
        "The stream consumer's MaximumRecordAgeInSeconds is unset, -1, or not below the "
        "stream's retention.",
        "-1 (the default) or an age at or above the retention means records never expire "
        "before the stream trims them: a stuck shard loses them without a trace instead of "
        "handing them to the on-failure destination. Set it below the retention - DynamoDB "
        "Streams keep 24 hours, Kinesis the stream's RetentionPeriodHours (24 hours assumed "
        "when the stream is not in the same stack) - e.g. 3600 seconds (max_record_age), so an "
        "expired batch is reported while its records can still be read back from the stream.",
        record_age_below_retention,
    ),
    CdcRule(
        "ESM3",
        NagMessageLevel.ERROR,
        "The stream consumer does not split a failing batch: bisect on error is off.",
        "Without bisect one bad record fails its whole batch on every retry, and its "
        "neighbours exhaust their retries with it. On an event source mapping set "
        "BisectBatchOnFunctionError to true (bisect_batch_on_error=True); on a pipe set "
        "OnPartialBatchItemFailure to AUTOMATIC_BISECT.",
        bisect_on_error,
    ),
    CdcRule(
        "ESM4",
        NagMessageLevel.ERROR,
        "The stream consumer has no on-failure destination for the records it gives up on.",
        "When retries or record age run out the batch is skipped; without a destination "
        "nothing records which changes were lost. On an event source mapping set "
        "DestinationConfig.OnFailure (on_failure=SqsDlq(queue) or SnsDlq(topic); an S3 "
        "destination also keeps the records); on a pipe set DeadLetterConfig. SQS and SNS "
        "receive the batch's shard and sequence numbers only: redrive reads the records back "
        "from the stream within its retention.",
        on_failure_destination,
    ),
    CdcRule(
        "ESM5",
        NagMessageLevel.ERROR,
        "The Lambda stream consumer does not report batch item failures: FunctionResponseTypes "
        "lacks ReportBatchItemFailures.",
        "Without it a failure anywhere in a batch retries the whole batch, so records that "
        "already succeeded are processed again and records after the failure may be applied "
        "ahead of it. Add ReportBatchItemFailures (report_batch_item_failures=True) and return "
        '{"batchItemFailures": [{"itemIdentifier": <sequence number of the first failed '
        "record>}]} from the handler.",
        report_batch_item_failures,
    ),
    CdcRule(
        "ESM6",
        NagMessageLevel.WARN,
        "The stream consumer does not start at TRIM_HORIZON.",
        "LATEST starts at the tip of the stream whenever the mapping is created or re-created, "
        "so changes written in between are never delivered; AT_TIMESTAMP skips everything "
        "before its timestamp. Use TRIM_HORIZON with an idempotent consumer, or acknowledge "
        "this rule on the consumer with the reason older changes may be skipped.",
        trim_horizon,
    ),
    CdcRule(
        "ESM7",
        NagMessageLevel.ERROR,
        "The stream consumer filters on NewImage/OldImage that the table's StreamViewType does "
        "not carry.",
        "With KEYS_ONLY, NEW_IMAGE or OLD_IMAGE the missing image is never in the record, so "
        "a filter on it never matches and those changes are dropped without an error. Filter "
        "on what the stream carries (keys, eventName, the image it has), or give the table the "
        "StreamViewType the filter needs (usually NEW_AND_OLD_IMAGES; changing it re-creates "
        "the stream).",
        filters_match_stream_view,
    ),
    CdcRule(
        "ESM8",
        NagMessageLevel.WARN,
        "No IteratorAge alarm watches the stream consumer's function.",
        "IteratorAge is how far behind the consumer is; without an alarm a stuck or slow shard "
        "is noticed only when records expire. Add an alarm on the AWS/Lambda IteratorAge metric "
        "(Maximum) with the dimension FunctionName set to the function, in the same stack, with "
        "a threshold well below MaximumRecordAgeInSeconds - e.g. fn.metric('IteratorAge', "
        "statistic='Maximum').create_alarm(...).",
        iterator_age_alarm,
    ),
    CdcRule(
        "ESM9",
        NagMessageLevel.ERROR,
        "The consumer forgets which records it applied while they can still come back: its "
        "marker lifetime (CDC_MARKER_TTL_SECONDS) is unset or shorter than its replay windows.",
        "A record can come back as long as any copy of it can be delivered or replayed: the "
        "stream holds it (24 h, or the Kinesis stream's RetentionPeriodHours), the mapping gives "
        "up on it after MaximumRecordAgeInSeconds and its batch waits in the on-failure bucket "
        "for the bucket's lifecycle expiration, and a quarantined copy waits for the quarantine "
        "queue's MessageRetentionPeriod. A consumer group's failed batch always holds records "
        "its earlier members applied, so a redrive after their markers expired applies them "
        "again. Set CDC_MARKER_TTL_SECONDS on the function to at least the windows chained plus "
        "a day (cdc_consumer.replay_windows.minimum_marker_lifetime; StreamConsumer and "
        "KinesisConsumer derive it), and give the on-failure bucket a lifecycle expiration.",
        markers_outlive_replay_windows,
    ),
    CdcRule(
        "ESM10",
        NagMessageLevel.WARN,
        "The DynamoDB stream consumer's on-failure destination is SQS or SNS: only a pointer is "
        "kept; after 24 h a redrive can only report the records lost.",
        "An SQS or SNS on-failure destination receives the failed batch's shard and sequence "
        "numbers, not its records: a redrive must read them back from the stream, which trims "
        "them 24 hours after they were written, so a failure noticed late becomes a manual "
        "rebuild. An S3 destination receives the batch itself (the invocation record with its "
        "payload) and keeps it as long as the bucket does. Use "
        "on_failure=S3OnFailureDestination(bucket) (StreamConsumer's default), or acknowledge "
        "this rule with the reason a redrive within 24 hours is assured.",
        on_failure_keeps_records,
    ),
    CdcRule(
        "ESM11",
        NagMessageLevel.ERROR,
        "More processes read this DynamoDB stream than it serves: at most two per shard, one "
        "for a table with replicas (a global table).",
        "DynamoDB Streams throttles a third concurrent reader of a shard "
        "(LimitExceededException); throttled reads raise the iterator age, and past the "
        "maximum record age records go to the on-failure destination instead of the consumer. "
        "AWS's Lambda guide asks for one reader on a global table's stream. Ways out: run "
        "several consumers behind one mapping (StreamConsumer members=[ConsumerGroupMember(...)] "
        "and a cdc_consumer.ConsumerGroup in the handler, each keeping its name, markers, "
        "filter and metrics); fan out once through a Pipe to an "
        "event bus and subscribe the rest there (StreamFanOut); or stream the table into "
        "Kinesis (KinesisConsumer), which serves more readers. If the throttling is accepted, "
        "acknowledge this rule with the reason (StreamConsumer/StreamFanOut "
        "extra_reader_reason does both).",
        at_most_two_readers,
        describe_readers,
    ),
    CdcRule(
        "ESM12",
        NagMessageLevel.ERROR,
        "The stream consumer's filters name a field or attribute type the stream's records "
        "never have, or put rules on an object.",
        "Lambda and Pipes drop every record no filter matches, without an error, so a "
        "misspelled field anywhere in a pattern (dynamodb.NewImgae, a type 's' for 'S') or "
        "rules on an object (an attribute without its type, an image; exists only works on "
        "values) leaves the consumer receiving nothing it expects. Spell the fields as the "
        "record has them - a DynamoDB stream record: eventName, userIdentity, dynamodb with "
        "Keys, NewImage, OldImage, SequenceNumber, StreamViewType...; each attribute's value "
        "keyed by its type (S, N, B, BOOL, NULL, M, L, SS, NS, BS); a Kinesis record: "
        "partitionKey, data... - and give rules to values, e.g. "
        '{"dynamodb": {"NewImage": {"status": {"S": ["PAID"]}}}} (StreamFilters builds these).',
        filters_match_record_shape,
        describe_shape_problems,
    ),
    CdcRule(
        "ESM13",
        NagMessageLevel.ERROR,
        "The stream consumer filters on the TTL identity (userIdentity) on the stream of a "
        "table with replicas: it requires the identity, or names it without a runtime that "
        "tells replicated expiries.",
        "A TTL deletion carries the service identity only in the region where DynamoDB's TTL "
        "process deleted the item; every other replica's stream receives it as a plain REMOVE. "
        "A filter on userIdentity therefore misses the expiries of other regions (an archive "
        "sees its own region's only) or lets them through as user deletes, and a filter cannot "
        "compare the TTL attribute with the record's time. A filter requiring the identity "
        "(any condition on userIdentity only the identity meets, e.g. principalId alone) drops "
        "them in the mapping, before any code runs. Use StreamConsumer on the "
        "ChangeCaptureTable (or a ReplicaTable): it widens the filter and sets "
        "CDC_REPLICATED_TABLE and CDC_TTL_ATTRIBUTE, so the runtime tells replicated expiries "
        "by the item's TTL attribute; for a function of your own, set those variables and "
        "apply the filter in the code; a pipe cannot, so do not filter one on userIdentity "
        "(docs/global-tables.md).",
        ttl_identity_filter_on_replicas,
    ),
    CdcRule(
        "ESM14",
        NagMessageLevel.ERROR,
        "The event source mapping has a tumbling window beside a ParallelizationFactor above 1, "
        "which AWS refuses.",
        "CreateEventSourceMapping answers such a mapping 'Parallelization factor must be equal "
        "to 1 when tumbling window period is configured' (InvalidParameterValueException), so "
        "the deployment fails. Set ParallelizationFactor to 1, or TumblingWindowInSeconds to 0 "
        "(StreamConsumer: tumbling_window=Duration.seconds(0), or leave it out: it has a window "
        "only at a factor of 1).",
        window_beside_parallelization,
    ),
    CdcRule(
        "ESM15",
        NagMessageLevel.WARN,
        "The DynamoDB stream consumer has a ledger table but its mapping has no tumbling "
        "window: the runtime keeps per-record markers (2 write units per record).",
        "Lambda names the shard of each event (shardId) only when the mapping has a tumbling "
        "window; the runtime's ledger keeps one lane per shard, so without a shard it keeps a "
        "processed-marker per record instead: 2 write units per record in a transaction, "
        "instead of about one ledger entry (2 units) per transaction. AWS allows a window only "
        "at a ParallelizationFactor of 1. If more throughput per shard is worth that price, "
        "acknowledge this rule with the reason; else set the factor to 1 (StreamConsumer then "
        "gives the mapping a 15-minute window) and scale by shards (docs/design.md §12).",
        ledger_without_window,
        window_cost,
    ),
)
