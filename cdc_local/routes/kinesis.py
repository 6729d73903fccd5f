"""The Kinesis route, locally (docs/design.md §9): a table's changes delivered to a Kinesis data
stream on the local endpoint (moto's Kinesis), read by Lambda's Kinesis event source mapping.

The stack's Kinesis streams (ON_DEMAND ones with 4 shards) and enhanced fan-out consumers are
created on the endpoint. moto does not stream a table's changes to Kinesis, so each table with
a Kinesis destination gets a feed, :class:`KinesisDelivery`, that plays DynamoDB's part: it
reads the table's DynamoDB stream (moto has one; the changes in commit order) and puts each
change into the Kinesis stream in AWS's published format: base64 JSON without
``SequenceNumber``, ``ApproximateCreationDateTime`` in micro- or milliseconds as the table's
``ApproximateCreationDateTimePrecision`` says (stamped strictly increasing, as DynamoDB's
microsecond times are for one item), the partition key a hash of the item's key. With the fault
plan's ``feed`` (:class:`~cdc_local.faults.FeedFaults`) a change is put late, after later
changes (of its item too), or once more, later: what AWS allows ("The Kinesis data stream
records might appear in a different order than when the item changes occurred. The same item
notifications might also appear more than once in the stream"); or a record that is not a
change is put too.

A mapping reads the Kinesis API: records in Lambda's Kinesis shape, filters matching the
record's fields with ``data`` decoded, the item identifier its Kinesis sequence number, the age
counted from its arrival in the stream (Lambda's rule for Kinesis; the feed's clock when it put
it), checked by the construct against the Kinesis retention, the lane a hash of its partition
key, and ``KinesisBatchInfo`` in the on-failure message. ``cdc-redrive`` does not replay a
Kinesis consumer's quarantine.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections import ChainMap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.redrive.stream_reader import to_lambda_record
from cdc_consumer.redrive_shapes import OnFailureMessage
from cdc_consumer.routes import filter_view
from cdc_consumer.routes.kinesis.replay import to_lambda_kinesis_record
from cdc_consumer.versions import MICROSECONDS_PER_SECOND

from cdc_local.assembly import MAPPING_TYPE, StackTemplate
from cdc_local.authorization import Checks, register_checks, request_body
from cdc_local.destinations import invocation_record
from cdc_local.endpoint import LocalEndpoint
from cdc_local.exceptions import LocalPipelineError
from cdc_local.resources import LocalResources, physical_name
from cdc_local.routes.protocol import Feed, RouteContext, SourceContext
from cdc_local.shard_reader import ShardCalls
from cdc_local.stream_tail import StreamTail
from cdc_local.ttl import TtlLedger

__all__ = [
    "DeliveryCounters",
    "KinesisDelivery",
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
#: PutRecords takes at most 500 records per call.
PUT_RECORDS_LIMIT = 500
#: How many later changes a late or repeated change waits for, at most: wide enough that one
#: item's changes (an order changes every few hundred writes in the reference workload) overtake
#: each other.
MAX_DELAY_CHANGES = 300


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


# --- table -> Kinesis --------------------------------------------------------------------------


@dataclass
class DeliveryCounters:
    changes_read: int = 0
    records_put: int = 0
    reordered: int = 0
    duplicated: int = 0
    poison: int = 0
    #: Records put after a newer change of the same item had been put (out of order per item).
    out_of_order: int = 0


@dataclass
class KinesisDelivery:
    """Reads a table's DynamoDB stream and puts each change into a Kinesis stream, late or twice
    as the probabilities say (seeded). :meth:`pump` moves what is available; a change held back
    is put once ``delay`` later changes were put, or when the table has nothing new (so a drain
    ends with everything delivered)."""

    table_stream_arn: str
    kinesis_stream_name: str
    table_name: str
    precision: str
    streams: Any
    kinesis: Any
    ttl_ledger: TtlLedger | None = None
    reorder_probability: float = 0.0
    duplicate_probability: float = 0.0
    poison_probability: float = 0.0
    seed: int = 0
    clock: Callable[[], float] = time.time
    counters: DeliveryCounters = field(default_factory=DeliveryCounters)
    #: ``stream/shard:sequence`` -> the pipeline clock when it was put (record age counts from it).
    arrivals: dict[str, float] = field(default_factory=dict)
    #: The eventID of every change read from the table (what the consumers must account for).
    event_ids: set[str] = field(default_factory=set)
    _held: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    _tail: StreamTail | None = None
    _last_time: int = 0
    _newest: dict[str, int] = field(default_factory=dict)
    _puts: int = 0
    _random: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def pump(self) -> bool:
        """Read the table's new changes and put what is due; whether anything was put."""
        changes = self._read()
        due: list[dict[str, Any]] = []
        for change in changes:
            self.counters.changes_read += 1
            self.event_ids.add(change["eventID"])
            if self._random.random() < self.poison_probability:
                self.counters.poison += 1
                due.append({"poison": f"not a DynamoDB change {self.counters.poison}"})
            if self._random.random() < self.reorder_probability:
                self.counters.reordered += 1
                self._hold(change)
            else:
                due.append(change)
            if self._random.random() < self.duplicate_probability:
                self.counters.duplicated += 1
                self._hold(change)
        if not changes and self._held:  # nothing new: what waits goes now
            due += [data for _, data in self._held]
            self._held.clear()
        self._put(due)
        return bool(due)

    def _hold(self, data: dict[str, Any]) -> None:
        self._held.append((self._puts + self._random.randint(1, MAX_DELAY_CHANGES), data))

    def _put(self, records: list[dict[str, Any]]) -> None:
        """Put ``records`` in order, each held change right after the put that makes it due."""
        ordered: list[Mapping[str, Any]] = []
        for data in records:
            ordered.append(data)
            self._puts += 1
            released = [d for when, d in self._held if when <= self._puts]
            self._held = [(when, d) for when, d in self._held if when > self._puts]
            ordered += released
        for start in range(0, len(ordered), PUT_RECORDS_LIMIT):
            self._put_batch(ordered[start : start + PUT_RECORDS_LIMIT])

    def _put_batch(self, batch: Sequence[Mapping[str, Any]]) -> None:
        for data in batch:
            if "dynamodb" in data:
                key = json.dumps(data["dynamodb"]["Keys"], sort_keys=True)
                created = data["dynamodb"]["ApproximateCreationDateTime"]
                self.counters.out_of_order += created < self._newest.get(key, created)
                self._newest[key] = max(created, self._newest.get(key, created))
        entries = [
            {
                "Data": json.dumps(data, separators=(",", ":")).encode(),
                "PartitionKey": hashlib.md5(
                    json.dumps(data.get("dynamodb", {}).get("Keys"), sort_keys=True).encode()
                ).hexdigest(),
            }
            for data in batch
        ]
        response = self.kinesis.put_records(StreamName=self.kinesis_stream_name, Records=entries)
        if response.get("FailedRecordCount"):
            raise LocalPipelineError(f"PutRecords failed locally: {response['Records'][:3]}")
        now = self.clock()
        for result in response["Records"]:
            where = f"{self.kinesis_stream_name}/{result['ShardId']}:{result['SequenceNumber']}"
            self.arrivals[where] = now
        self.counters.records_put += len(batch)

    def _read(self) -> list[dict[str, Any]]:
        """The table's new changes, a parent shard's before its children's."""
        if self._tail is None:
            self._tail = StreamTail(self.table_stream_arn, self.streams)
        return [self._data(raw) for raw in self._tail.read()]

    def _data(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """A DynamoDB stream record as the change DynamoDB puts into Kinesis (AWS's format)."""
        created = raw["dynamodb"]["ApproximateCreationDateTime"].timestamp()
        record = to_lambda_record(raw, self.table_stream_arn)
        if self.ttl_ledger is not None:
            record = self.ttl_ledger.annotate(self.table_stream_arn, record)
        step = 1 if self.precision == "MICROSECOND" else 1000
        time_us = max(int(created * MICROSECONDS_PER_SECOND), self._last_time + step)
        self._last_time = time_us
        dynamodb = {
            "ApproximateCreationDateTime": time_us if step == 1 else time_us // 1000,
            "Keys": record["dynamodb"]["Keys"],
            **{
                k: record["dynamodb"][k]
                for k in ("NewImage", "OldImage")
                if k in record["dynamodb"]
            },
            "SizeBytes": record["dynamodb"].get("SizeBytes", 1),
        }
        return {
            "awsRegion": record.get("awsRegion", "us-east-1"),
            "eventID": record["eventID"],
            "eventName": record["eventName"],
            "userIdentity": record.get("userIdentity"),
            "recordFormat": "application/json",
            "tableName": self.table_name,
            "dynamodb": dynamodb,
            "eventSource": "aws:dynamodb",
        }


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
