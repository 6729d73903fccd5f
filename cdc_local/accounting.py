"""Where every record of a consumer's stream ended up, on the local pipeline.

- :class:`ConsumerWiring` finds one consumer's tables and queues from what was synthesized: the
  mapping whose function runs a given handler, its stream's table, its on-failure destination,
  and the function's environment (docs/interfaces.md), so nothing here depends on the
  constructs' logical ids.
- :func:`account` checks that no change was lost: every record on the source stream must have
  the consumer's processed-marker (``{consumer}#{eventID}`` in the idempotency table) or be
  listed by one of its ledger entries (``cdc_consumer.ledger``), be in the
  quarantine queue with its payload, lie in the range of an on-failure message, or - for a change
  with nothing to project (the runtime writes no marker when a projection returns no actions) -
  have been acknowledged by the function to the mapping (the pipeline must run with
  ``track_records=True``). Records the mapping's filters drop are not the consumer's.
- :func:`on_failure_batches` reads the discarded batches where the destination keeps them.
- :func:`redrive_on_failure` replays on-failure batches with the runtime's redrive
  (``cdc_consumer.redrive``), through the consumer's handler contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.environment_variables import (
    CONSUMER_GROUP_ENV,
    CONSUMER_NAME_ENV,
    IDEMPOTENCY_TABLE_ENV,
    LEDGER_TABLE_ENV,
    QUARANTINE_QUEUE_ENV,
)
from cdc_consumer.filter_patterns import FilterCriteria
from cdc_consumer.group_member_spec import GroupMemberSpec
from cdc_consumer.lane_registry import REGISTRY_SUFFIX
from cdc_consumer.ledger import RECORDS_ATTRIBUTE, SORT_ATTRIBUTE, unpack
from cdc_consumer.quarantine_shapes import QuarantineMessage
from cdc_consumer.redrive import CallableInvoker, Redrive, RedriveReport, to_lambda_record
from cdc_consumer.redrive_shapes import ON_FAILURE_S3_PREFIX, OnFailureMessage

from cdc_local.arns import stream_table_name
from cdc_local.event_source_mapping import EventSourceMapping
from cdc_local.exceptions import LocalPipelineError
from cdc_local.functions import LocalFunction
from cdc_local.peek import peek_messages
from cdc_local.runner import LocalPipeline
from cdc_local.ttl import TtlAnnotatedStreams


@dataclass(frozen=True)
class ConsumerWiring:
    """Where one consumer's pieces live on the local endpoint."""

    mapping: EventSourceMapping
    function: LocalFunction
    consumer_name: str
    source_table: str
    idempotency_table: str
    quarantine_queue_url: str
    on_failure_queue_url: str | None
    on_failure_bucket: str | None = None
    """The S3 on-failure destination (the default): its objects hold the failed batches."""
    on_failure_prefix: str = ""
    """Where this mapping's objects are in the bucket: ``aws/lambda/<mapping UUID>/``."""
    members: tuple[GroupMemberSpec, ...] = ()
    """The consumers behind the mapping (``CDC_CONSUMER_GROUP``); none: the one consumer
    named ``consumer_name``."""
    ledger_table: str | None = None
    """The ledger table (``CDC_LEDGER_TABLE_NAME``): one entry per transaction, listing the
    records it applied; None: per-record markers only."""

    @property
    def consumers(self) -> tuple[GroupMemberSpec, ...]:
        """Each consumer behind the mapping with its filter: the group's members, or the
        consumer itself (no filter: the mapping's)."""
        return self.members or (GroupMemberSpec(self.consumer_name),)

    @classmethod
    def of(cls, pipeline: LocalPipeline, handler: str) -> ConsumerWiring:
        """The wiring of the (one) mapping whose function runs ``handler``."""
        found = [m for m in pipeline.mappings.values() if m.function.spec.own_handler == handler]
        if len(found) != 1:
            raise LocalPipelineError(
                f"expected one stream mapping whose function's handler is {handler!r} in stack "
                f"{pipeline.stack.stack_name}, found {len(found)}"
            )
        mapping = found[0]
        env = mapping.function.environment
        missing = [
            name
            for name in (CONSUMER_NAME_ENV, IDEMPOTENCY_TABLE_ENV, QUARANTINE_QUEUE_ENV)
            if name not in env
        ]
        if missing:
            raise LocalPipelineError(
                f"function {mapping.function.name} lacks the environment variables {missing} "
                "that StreamConsumer sets (docs/interfaces.md §2)"
            )
        destination = mapping.destination
        return cls(
            mapping=mapping,
            function=mapping.function,
            consumer_name=env[CONSUMER_NAME_ENV],
            members=GroupMemberSpec.decode(env[CONSUMER_GROUP_ENV])
            if env.get(CONSUMER_GROUP_ENV)
            else (),
            source_table=stream_table_name(mapping.stream_arn),
            idempotency_table=env[IDEMPOTENCY_TABLE_ENV],
            ledger_table=env.get(LEDGER_TABLE_ENV) or None,
            quarantine_queue_url=env[QUARANTINE_QUEUE_ENV],
            on_failure_queue_url=destination.queue_url if destination is not None else None,
            on_failure_bucket=(
                destination.bucket if destination is not None and destination.bucket else None
            ),
            on_failure_prefix=(
                f"{ON_FAILURE_S3_PREFIX}{destination.mapping_uuid}/"
                if destination is not None
                else ""
            ),
        )


def scan(ddb: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in ddb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        items += page["Items"]
    return items


def processed_markers(ddb: Any, idempotency_table: str, consumer_name: str) -> set[str]:
    """The eventIDs ``consumer_name`` has processed: its markers ``{consumer}#{eventID}`` in
    the idempotency table (docs/interfaces.md §7)."""
    prefix = f"{consumer_name}#"
    return {
        item["id"]["S"][len(prefix) :]
        for item in scan(ddb, idempotency_table)
        if item["id"]["S"].startswith(prefix)
    }


def ledger_listed(ddb: Any, ledger_table: str | None) -> set[tuple[str, int]]:
    """(consumer, sequence number) of every record a ledger entry lists (an entry's partition
    is its lane, ``{consumer}#{stream ARN}#{shard id}``: ``cdc_consumer.ledger``); empty without a
    ledger table. A lane's head, the time the ledger took over and the consumer's registry of its
    lanes (``{consumer}#~lanes``: ``cdc_consumer.lane_registry``) list no record."""
    if ledger_table is None:
        return set()
    listed: set[tuple[str, int]] = set()
    for item in scan(ddb, ledger_table):
        if item[SORT_ATTRIBUTE]["S"].startswith("~") or item["id"]["S"].endswith(REGISTRY_SUFFIX):
            continue
        consumer = item["id"]["S"].rpartition("#arn:")[0] or item["id"]["S"].rpartition("#")[0]
        numbers = unpack(bytes(item[RECORDS_ATTRIBUTE]["B"]))
        listed.update((consumer, number) for number in numbers)
    return listed


def on_failure_batches(pipeline: LocalPipeline, wiring: ConsumerWiring) -> list[dict[str, Any]]:
    """The invocation records of the consumer's discarded batches, left where they are (its
    destination's kind reads them: the on-failure queue's messages, or the bucket's objects,
    each with its ``payload``)."""
    destination = wiring.mapping.destination
    if destination is None:
        return []
    return destination.peek(pipeline.client(destination.service))


@dataclass
class Accounting:
    """Where each record of the source stream ended up."""

    records: int = 0
    processed: int = 0
    acknowledged_without_marker: int = 0
    quarantined: int = 0
    on_failure: int = 0
    lost: list[str] = field(default_factory=list)
    quarantine_messages: list[dict[str, Any]] = field(default_factory=list)
    on_failure_messages: list[dict[str, Any]] = field(default_factory=list)


def stream_records(pipeline: LocalPipeline, table: str) -> list[dict[str, Any]]:
    """Every record of the table's stream on the local endpoint, from TRIM_HORIZON."""
    return read_stream(pipeline.client("dynamodb"), pipeline.client("dynamodbstreams"), table)


def read_stream(ddb: Any, streams: Any, table: str) -> list[dict[str, Any]]:
    """Every record of the table's stream, read from the start (TRIM_HORIZON), with the
    ``dynamodb`` and ``dynamodbstreams`` clients given (the local pipeline's or any endpoint's)."""
    arn = ddb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while iterator:
            response = streams.get_records(ShardIterator=iterator, Limit=1000)
            if not response["Records"]:
                break
            records += response["Records"]
            iterator = response.get("NextShardIterator")
    return records


def account(pipeline: LocalPipeline, wiring: ConsumerWiring) -> Accounting:
    """Account for every record of the consumer's source stream; unaccounted ones are lost.

    Behind a consumer group, a record is processed when every member its filter gives it to
    has its marker (or a ledger entry lists it for that member), and quarantined when one of
    them quarantined it."""
    ddb, sqs = pipeline.client("dynamodb"), pipeline.client("sqs")
    markers = {item["id"]["S"] for item in scan(ddb, wiring.idempotency_table)}
    listed = ledger_listed(ddb, wiring.ledger_table)
    result = Accounting()
    result.quarantine_messages = peek_messages(sqs, wiring.quarantine_queue_url)
    quarantined = {
        (message.consumer, message.record["eventID"])
        for message in map(QuarantineMessage.from_dict, result.quarantine_messages)
    }
    result.on_failure_messages = on_failure_batches(pipeline, wiring)
    acknowledged = wiring.mapping.acknowledged
    if acknowledged is None:
        raise LocalPipelineError(
            "accounting needs the sequence numbers the function acknowledged: start the "
            "LocalPipeline with track_records=True"
        )
    batches = [OnFailureMessage.from_dict(m).batch for m in result.on_failure_messages]
    ranges = [
        (int(batch.start_sequence_number), int(batch.end_sequence_number)) for batch in batches
    ]
    consumers = [
        (spec.name, FilterCriteria(list(spec.filters), where=spec.name))
        for spec in wiring.consumers
    ]
    for record in stream_records(pipeline, wiring.source_table):
        result.records += 1
        sequence, event_id = int(record["dynamodb"]["SequenceNumber"]), record["eventID"]
        delivered = to_lambda_record(record, wiring.mapping.stream_arn)
        due = [name for name, criteria in consumers if criteria.matches(delivered)]
        # Quarantine first: a poison record whose projection compensated (PermanentError with
        # actions) has a marker too, and is still a quarantined record.
        if any((name, event_id) in quarantined for name in due):
            result.quarantined += 1
        elif due and all(
            f"{name}#{event_id}" in markers or (name, sequence) in listed for name in due
        ):
            result.processed += 1
        elif any(first <= sequence <= last for first, last in ranges):
            result.on_failure += 1
        elif record["dynamodb"]["SequenceNumber"] in acknowledged:
            result.acknowledged_without_marker += 1
        elif wiring.mapping.settings.filters.matches(delivered):
            result.lost.append(record["dynamodb"]["SequenceNumber"])
    return result


def redrive_on_failure(pipeline: LocalPipeline, wiring: ConsumerWiring) -> RedriveReport | None:
    """Replay the on-failure destination's batches with ``cdc_consumer.redrive``, through the
    consumer's handler contract, wherever its kind keeps them (the bucket's objects hold each
    batch; the queue's pointers are read back from the stream); return its report (None
    without a destination the redrive reads)."""
    destination = wiring.mapping.destination
    where = destination.where if destination is not None else None
    if where is None:
        return None
    runner = Redrive(
        invoker=CallableInvoker(
            handler=wiring.function.as_handler(), function_name=wiring.function.name
        ),
        stream_arn=wiring.mapping.stream_arn,
        sqs_client=pipeline.client("sqs"),
        streams_client=TtlAnnotatedStreams(
            pipeline.client("dynamodbstreams"), pipeline.ttl_ledger, wiring.mapping.stream_arn
        ),
        consumer_name=wiring.consumer_name,
        member_names=[spec.name for spec in wiring.members],
        receive_wait_seconds=0,
        filters=[p.pattern for p in wiring.mapping.settings.filters.patterns],
        s3_client=pipeline.client("s3"),
        function_name=wiring.function.name,
        # The consumer's redrive lease, as the redrive function takes it (one redrive at a time).
        lease_table=wiring.function.environment.get(IDEMPOTENCY_TABLE_ENV),
        dynamodb_client=pipeline.client("dynamodb"),
    )
    return runner.run(where)
