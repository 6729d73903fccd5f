"""The Kinesis route, locally (docs/design.md §9): a table's changes delivered to a Kinesis data
stream on the local endpoint (moto's Kinesis), read by Lambda's Kinesis event source mapping.

The stack's Kinesis streams (ON_DEMAND ones with 4 shards) and enhanced fan-out consumers are
created on the endpoint. moto does not stream a table's changes to Kinesis: each table with a
Kinesis destination gets a feed (:class:`~cdc_local.routes.kinesis_delivery.KinesisDelivery`).

A mapping reads the Kinesis API: records in Lambda's Kinesis shape, filters matching the
record's fields with ``data`` decoded, the item identifier its Kinesis sequence number, the age
counted from its arrival in the stream (Lambda's rule for Kinesis; the feed's clock when it put
it), checked by the construct against the Kinesis retention, the lane a hash of its partition
key, and ``KinesisBatchInfo`` in the on-failure message. ``cdc-redrive`` does not replay a
Kinesis consumer's quarantine.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_consumer.contract import OnFailureMessage
from cdc_consumer.kinesis import filter_view
from cdc_consumer.redrive.kinesis_reader import to_lambda_kinesis_record

from cdc_local.assembly import MAPPING_TYPE, StackTemplate
from cdc_local.authorization import Checks, register_checks, request_body
from cdc_local.destinations import invocation_record
from cdc_local.endpoint import LocalEndpoint
from cdc_local.exceptions import LocalPipelineError
from cdc_local.resources import LocalResources, physical_name
from cdc_local.routes.kinesis_delivery import KinesisDelivery
from cdc_local.routes.protocol import Feed, RouteContext, SourceContext
from cdc_local.shard_reader import ShardCalls

__all__ = [
    "KinesisRoute",
    "KinesisSource",
    "create_kinesis_resources",
    "kinesis_destinations",
    "kinesis_invocation_record",
    "kinesis_stream_arn",
    "stream_name",
]

KINESIS_STREAM_TYPE = "AWS::Kinesis::Stream"
KINESIS_CONSUMER_TYPE = "AWS::Kinesis::StreamConsumer"
#: Shards of a local on-demand stream (AWS starts on-demand streams with 4).
ON_DEMAND_SHARDS = 4
#: GetRecords returns at most 10,000 records per call.
KINESIS_GET_RECORDS_LIMIT = 10_000


# --- resources ---------------------------------------------------------------------------------


def create_kinesis_resources(resources: LocalResources, endpoint: LocalEndpoint) -> None:
    """Create the stack's Kinesis streams on ``endpoint`` (ON_DEMAND ones with 4 shards) and
    register them and its enhanced fan-out consumers, so references to them resolve."""
    stack = resources.stack
    client = endpoint.client("kinesis")
    for stream in stack.of_type(KINESIS_STREAM_TYPE):
        props = resources.resolve(dict(stream.properties))
        name = props.get("Name") or physical_name(stack.stack_name, stream.logical_id, 128)
        shards = int(props.get("ShardCount") or ON_DEMAND_SHARDS)
        client.create_stream(StreamName=name, ShardCount=shards)
        arn = resources.arn("kinesis", f"stream/{name}")
        resources.refs[stream.logical_id] = name
        resources.attributes[(stream.logical_id, "Arn")] = arn
    for consumer in stack.of_type(KINESIS_CONSUMER_TYPE):
        props = resources.resolve(dict(consumer.properties))
        arn = f"{props['StreamARN']}/consumer/{props['ConsumerName']}:1"
        resources.refs[consumer.logical_id] = arn
        for attribute in ("ConsumerARN", "Arn"):
            resources.attributes[(consumer.logical_id, attribute)] = arn


def kinesis_stream_arn(arn: str) -> str:
    """The stream ARN of a stream or of one of its enhanced fan-out consumers."""
    return arn.split("/consumer/", 1)[0]


def stream_name(arn: str) -> str:
    return kinesis_stream_arn(arn).split(":stream/", 1)[1]


@dataclass(frozen=True)
class KinesisDestinationSpec:
    """A table streaming its changes to a Kinesis stream, as synthesized."""

    table_logical_id: str
    stream_arn: Any
    precision: str


def kinesis_destinations(stack: StackTemplate) -> list[KinesisDestinationSpec]:
    """The tables with a Kinesis streaming destination (Table, or TableV2's replica)."""
    found = []
    for table in stack.tables():
        specs = [table.properties.get("KinesisStreamSpecification")]
        specs += [r.get("KinesisStreamSpecification") for r in table.properties.get("Replicas", ())]
        for spec in specs:
            if spec:
                found.append(
                    KinesisDestinationSpec(
                        table.logical_id,
                        spec["StreamArn"],
                        spec.get("ApproximateCreationDateTimePrecision", "MILLISECOND"),
                    )
                )
    return found


def kinesis_mapping_ids(stack: StackTemplate) -> list[str]:
    """Event source mappings whose source is a Kinesis stream (or fan-out consumer) of the stack,
    or a literal Kinesis ARN."""
    found = []
    for mapping in stack.of_type(MAPPING_TYPE):
        source = mapping.properties.get("EventSourceArn")
        target = source.get("Fn::GetAtt", [None])[0] if isinstance(source, Mapping) else None
        kind = stack.resources.get(target or "", {}).get("Type")
        if kind in (KINESIS_STREAM_TYPE, KINESIS_CONSUMER_TYPE) or (
            isinstance(source, str) and ":kinesis:" in source
        ):
            found.append(mapping.logical_id)
    return found


def _kinesis_response() -> type:
    from moto.kinesis.responses import KinesisResponse

    return KinesisResponse


def kinesis_checks(response: Any, action: str) -> Checks:
    """What IAM checks for a Kinesis request: the stream or the enhanced fan-out consumer ARN
    (``GetRecords``: the stream of its iterator)."""
    body = request_body(response)
    prefix = f"arn:aws:kinesis:{response.region}:{response.current_account}:stream/"
    for key in ("ConsumerARN", "StreamARN"):
        if isinstance(body.get(key), str):
            return [(action, body[key])]
    if isinstance(body.get("StreamName"), str):
        return [(action, prefix + body["StreamName"])]
    if isinstance(body.get("ShardIterator"), str):
        from moto.kinesis.utils import decompose_shard_iterator

        try:
            name = decompose_shard_iterator(body["ShardIterator"])[0]
        except (ValueError, IndexError):
            return [(action, "*")]
        return [(action, prefix + name)]
    return [(action, "*")]


# --- Kinesis -> Lambda ---------------------------------------------------------------------------


class KinesisSource(ShardCalls):
    """A Kinesis stream (or its fan-out consumer, ``arn``) as one mapping reads it, through a
    ``kinesis`` client; a record's arrival is when a feed put it (default: Kinesis'
    ``ApproximateArrivalTimestamp``)."""

    def __init__(self, kinesis: Any, arn: str, context: SourceContext) -> None:
        self.stream_name = stream_name(arn)
        super().__init__(kinesis, {"StreamName": self.stream_name}, KINESIS_GET_RECORDS_LIMIT)
        self.arn = arn
        self.context = context
        self.stream_arn = kinesis_stream_arn(arn)
        self.arrivals: Mapping[str, float] = ChainMap(
            *(feed.arrivals for feed in context.feeds if isinstance(feed, KinesisDelivery))
        )

    def start(self) -> None:
        """Nothing: the shards are listed when the iterators are taken."""

    def listed(self) -> list[dict[str, Any]]:
        shards: list[dict[str, Any]] = self.client.list_shards(StreamName=self.stream_name)[
            "Shards"
        ]
        return shards

    def record(self, shard_id: str, raw: Mapping[str, Any]) -> dict[str, Any]:
        sequence = str(raw["SequenceNumber"])
        arrival = self.arrivals.get(
            f"{self.stream_name}/{shard_id}:{sequence}",
            raw["ApproximateArrivalTimestamp"].timestamp(),
        )
        return to_lambda_kinesis_record(
            raw, shard_id, self.stream_arn, arrival=arrival, function_arn=self.context.function_arn
        )

    def filter_view(self, record: Mapping[str, Any]) -> Mapping[str, Any]:
        return filter_view(record)

    def sequence_number(self, record: Mapping[str, Any]) -> str:
        return str(record["kinesis"]["sequenceNumber"])

    def created_at(self, record: Mapping[str, Any]) -> float:
        return float(record["kinesis"]["approximateArrivalTimestamp"])

    def partition_value(self, record: Mapping[str, Any]) -> str:
        return str(record["kinesis"]["partitionKey"])

    def change_id(self, record: Mapping[str, Any]) -> str | None:
        """The change's eventID (sequence numbers repeat across shards); None for a record
        whose data is not a change."""
        data = filter_view(record).get("data")
        return str(data["eventID"]) if isinstance(data, Mapping) and "eventID" in data else None

    def failure_record(
        self, records: Sequence[Mapping[str, Any]], **context: Any
    ) -> dict[str, Any]:
        return kinesis_invocation_record(records=records, stream_arn=self.stream_arn, **context)


def kinesis_invocation_record(
    *, records: Sequence[Mapping[str, Any]], **context: Any
) -> dict[str, Any]:
    """Lambda's invocation record for a discarded batch of Kinesis ``records`` (in Lambda's
    shape): ``KinesisBatchInfo`` (the same fields as ``DDBStreamBatchInfo``, arrival times from
    the Kinesis records). ``context``: :func:`~cdc_local.destinations.invocation_record`'s
    other arguments."""
    message = invocation_record(
        records=[
            {
                "dynamodb": {
                    "SequenceNumber": record["kinesis"]["sequenceNumber"],
                    "ApproximateCreationDateTime": record["kinesis"]["approximateArrivalTimestamp"],
                }
            }
            for record in records
        ],
        **context,
    )
    message[OnFailureMessage.KINESIS_BATCH_INFO] = message.pop(OnFailureMessage.BATCH_INFO)
    return message


class KinesisRoute:
    """Mappings of a Kinesis stream (:class:`~cdc_local.routes.protocol.Route`)."""

    service: str = "kinesis"
    client_service: str = "kinesis"
    quarantine_note: str | None = (
        "the quarantine's Kinesis records are not redriven by cdc-redrive: replay by hand"
    )
    reader_actions: tuple[str, ...] = (
        "kinesis:DescribeStream",
        "kinesis:DescribeStreamSummary",
        "kinesis:GetRecords",
        "kinesis:GetShardIterator",
        "kinesis:ListShards",
    )
    pipe_parameters: str = "KinesisStreamParameters"

    def mapping_ids(self, stack: StackTemplate) -> list[str]:
        return kinesis_mapping_ids(stack)

    def provision(self, resources: LocalResources, endpoint: LocalEndpoint) -> None:
        create_kinesis_resources(resources, endpoint)

    def feeds(self, context: RouteContext) -> list[Feed]:
        """One feed per table streaming to a Kinesis stream of the stack."""
        return [_delivery(spec, context) for spec in kinesis_destinations(context.resources.stack)]

    def source(self, client: Any, arn: str, context: SourceContext) -> KinesisSource:
        return KinesisSource(client, arn, context)

    def redrive_stream_arn(self, arn: str) -> str:
        return kinesis_stream_arn(arn)  # a fan-out consumer's: its stream's


def _delivery(spec: KinesisDestinationSpec, context: RouteContext) -> KinesisDelivery:
    resources, plan = context.resources, context.faults
    table_stream = resources.attributes.get((spec.table_logical_id, "StreamArn"))
    if table_stream is None:
        raise LocalPipelineError(
            f"table {spec.table_logical_id} streams to Kinesis but has no DynamoDB "
            "stream: the local pipeline reads its changes from one"
        )
    return KinesisDelivery(
        table_stream_arn=table_stream,
        kinesis_stream_name=stream_name(resources.resolve(spec.stream_arn)),
        table_name=resources.table_names[spec.table_logical_id],
        precision=spec.precision,
        streams=context.endpoint.client("dynamodbstreams"),
        kinesis=context.endpoint.client("kinesis"),
        ttl_ledger=context.ttl_ledger,
        reorder_probability=plan.feed.reorder_probability,
        duplicate_probability=plan.feed.duplicate_probability,
        poison_probability=plan.feed.poison_probability,
        seed=plan.seed,
        clock=context.clock,
    )


register_checks(_kinesis_response, kinesis_checks)
