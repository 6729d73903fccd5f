"""The toy change log as the local pipeline reads it (a ``cdc_local.routes`` route registered
by the test): its one shard read through the redrive route's own calls (a Query of the log
table by ``seq``), its records in the runtime's shape, and a discarded batch described by
``ToyBatchInfo``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from cdc_consumer.redrive_shapes import OnFailureMessage

from cdc_local.assembly import MAPPING_TYPE, StackTemplate
from cdc_local.destinations import invocation_record
from cdc_local.endpoint import LocalEndpoint
from cdc_local.resources import LocalResources
from cdc_local.routes import Feed, RouteContext, SourceContext
from tests.toy_source.layer.python.toy_changes import REPLAY, SEQUENCE, SHARD, change_of_record


class ToySource:
    """The log as one mapping reads it."""

    def __init__(self, client: Any, arn: str) -> None:
        self.client = client
        self.arn = arn

    def start(self) -> None:
        """Nothing to list: the log has one shard."""

    def shards(self) -> list[tuple[str, str | None]]:
        return [(SHARD, None)]

    def iterator(self, shard_id: str, position: str) -> str:
        if position == "TRIM_HORIZON":
            return "0"
        page = REPLAY.records_page(self.client, self.arn, "0", 10_000)  # LATEST: after the last
        return str(page["NextShardIterator"])

    def page(self, iterator: str) -> tuple[list[dict[str, Any]], str | None]:
        page = REPLAY.records_page(self.client, self.arn, iterator, 100)
        return page["Records"], page["NextShardIterator"]

    def record(self, shard_id: str, raw: Mapping[str, Any]) -> dict[str, Any]:
        return REPLAY.lambda_record(raw, shard_id, self.arn)

    def filter_view(self, record: Mapping[str, Any]) -> Mapping[str, Any]:
        view: Mapping[str, Any] = REPLAY.filter_view(record)
        return view

    def sequence_number(self, record: Mapping[str, Any]) -> str:
        return str(record["toy"][SEQUENCE])

    def created_at(self, record: Mapping[str, Any]) -> float:
        return float(record["toy"]["arrivedAt"])

    def partition_value(self, record: Mapping[str, Any]) -> str:
        return json.dumps(change_of_record(record)["dynamodb"]["Keys"], sort_keys=True)

    def change_id(self, record: Mapping[str, Any]) -> str | None:
        return str(change_of_record(record)["eventID"])

    def failure_record(
        self, records: Sequence[Mapping[str, Any]], **context: Any
    ) -> dict[str, Any]:
        positions = [
            {
                "dynamodb": {
                    "SequenceNumber": r["toy"][SEQUENCE],
                    "ApproximateCreationDateTime": r["toy"]["arrivedAt"],
                }
            }
            for r in records
        ]
        message = invocation_record(records=positions, stream_arn=self.arn, **context)
        message[REPLAY.batch_info] = message.pop(OnFailureMessage.BATCH_INFO)
        return message


class ToyLocalRoute:
    """Mappings of a toy change log (``arn:aws:toy:...``), read with the function's role."""

    service = "toy"
    client_service = "dynamodb"
    quarantine_note: str | None = None
    reader_actions = ("dynamodb:Query",)
    pipe_parameters = "ToyParameters"

    def mapping_ids(self, stack: StackTemplate) -> list[str]:
        return [
            mapping.logical_id
            for mapping in stack.of_type(MAPPING_TYPE)
            if str(mapping.properties.get("EventSourceArn")).startswith("arn:aws:toy:")
        ]

    def provision(self, resources: LocalResources, endpoint: LocalEndpoint) -> None:
        """Nothing: the log table is the stack's."""

    def feeds(self, context: RouteContext) -> list[Feed]:
        return []  # the test writes the log

    def source(self, client: Any, arn: str, context: SourceContext) -> ToySource:
        return ToySource(client, arn)

    def redrive_stream_arn(self, arn: str) -> str:
        return arn
