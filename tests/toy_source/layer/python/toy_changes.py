"""A toy change source, defined outside the library (docs/design.md, "Adding a source"): a
*change log*, a DynamoDB table whose items each carry one change of another table, in order.

The log's ARN is ``arn:aws:toy:<region>:<account>:log/<log table>/<log name>``; its one shard
``shard-0`` holds the items of ``<log name>`` by their ``seq`` (a number). An item carries the
change as JSON in the DynamoDB stream record's shape (``eventID``, ``eventName``, ``dynamodb``)
and when it was logged (``at``, epoch seconds). A delivered record is::

    {"eventSource": "toy:changes", "eventSourceARN": <log ARN>,
     "toy": {"sequenceNumber": "<seq>", "shardId": "shard-0", "arrivedAt": <at>},
     "change": "<the change as JSON>"}

This module is the runtime's side of the source (:class:`ToyRecords`, a
``cdc_consumer.routes`` route) and the redrive's (:class:`ToyReplay`, a
``cdc_consumer.routes.replay`` route). It ships in a layer of the consumer and of its redrive;
importing :mod:`toy_plugin` registers both (the consumer's handler imports it; the redrive's
``CDC_REDRIVE_SOURCE_MODULES`` names it). The local pipeline reads the log through the same
calls (tests/toy_source/local_route.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from cdc_consumer.exceptions import MalformedMessageError, UndecodableRecordError
from cdc_consumer.routes.dynamodb_stream.records import ROUTE as DYNAMODB_STREAM
from cdc_consumer.routes.replay import Change
from cdc_consumer.routes.route import Created, Edit, LanePosition

EVENT_SOURCE = "toy:changes"
SHARD = "shard-0"
#: What a delivered record is found and named by.
SEQUENCE = "sequenceNumber"


def log_of(arn: str) -> tuple[str, str]:
    """The log table and the log name an ARN names."""
    _, table, name = arn.split(":", 5)[5].split("/")
    return table, name


def change_of_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """The change a delivered record carries; UndecodableRecordError when none."""
    try:
        change = json.loads(record["change"])
    except (KeyError, TypeError, ValueError) as error:
        raise UndecodableRecordError(f"toy record holds no change as JSON: {error}") from None
    if not isinstance(change, dict) or not isinstance(change.get("dynamodb"), dict):
        raise UndecodableRecordError(f"toy record's change {change!r} has no 'dynamodb' object")
    return change


class ToyRecords:
    """The runtime's route: a delivered record's identity, change, version and view."""

    name = "toy"
    event_source = EVENT_SOURCE
    identifier_field = f"toy.{SEQUENCE}"

    def recognises(self, record: Any) -> bool:
        return isinstance(record, dict) and record.get("eventSource") == EVENT_SOURCE

    def item_identifier(self, record: Any) -> str | None:
        toy = record.get("toy") if isinstance(record, dict) else None
        return str(toy[SEQUENCE]) if isinstance(toy, dict) and toy.get(SEQUENCE) else None

    def change_document(self, record: Mapping[str, Any]) -> Mapping[str, Any]:
        return change_of_record(record)

    def created(self, stream: Mapping[str, Any], event_id: str) -> Created:
        return DYNAMODB_STREAM.created(stream, event_id)  # the change's time, in seconds

    def version(self, time_us: int, sequence_number: str) -> str:
        return DYNAMODB_STREAM.version(time_us, sequence_number)

    def filter_view(self, record: Mapping[str, Any], edit: Edit | None = None) -> Any:
        change = change_of_record(record)
        return edit(change) if edit is not None else change

    def envelope(self, record: Mapping[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in record.items() if key != "change"}

    def lane_position(self, record: Any) -> LanePosition | None:
        return None  # a marker per change, keyed on its eventID


RECORDS = ToyRecords()


class ToyReplay:
    """The redrive's route: the log read back (Query by ``seq``) and a delivered record's
    identity, item and place in its item's history."""

    name = "toy change log"
    batch_info = "ToyBatchInfo"
    arn_shape = "arn:aws:toy:<region>:<account>:log/<table>/<log>"

    def owns_stream(self, stream_arn: str) -> bool:
        return stream_arn.startswith("arn:aws:toy:")

    def owns_record(self, record: Any) -> bool:
        return RECORDS.recognises(record)

    def owns_raw(self, raw: Any) -> bool:
        return isinstance(raw, dict) and "seq" in raw and "change" in raw

    def client(self, session: Any) -> Any:
        return session.client("dynamodb")

    def shard_iterator(self, client: Any, stream_arn: str, shard_id: str, start: str) -> str:
        return str(int(start) - 1)  # the iterator is the last sequence number read

    def records_page(self, client: Any, stream_arn: str, iterator: str, limit: int) -> Any:
        table, name = log_of(stream_arn)
        items = client.query(
            TableName=table,
            KeyConditionExpression="#l = :l AND seq > :after",
            ExpressionAttributeNames={"#l": "log"},
            ExpressionAttributeValues={":l": {"S": name}, ":after": {"N": iterator}},
            Limit=limit,
        )["Items"]
        records = [
            {"seq": int(i["seq"]["N"]), "at": float(i["at"]["N"]), "change": i["change"]["S"]}
            for i in items
        ]
        return {
            "Records": records,
            "NextShardIterator": str(records[-1]["seq"]) if records else iterator,
        }

    def raw_sequence(self, raw: Mapping[str, Any]) -> int:
        return int(raw["seq"])

    def lambda_record(
        self, raw: Mapping[str, Any], shard_id: str, stream_arn: str
    ) -> dict[str, Any]:
        toy = {SEQUENCE: str(raw["seq"]), "shardId": shard_id, "arrivedAt": raw["at"]}
        return {
            "eventSource": EVENT_SOURCE,
            "eventSourceARN": stream_arn,
            "toy": toy,
            "change": raw["change"],
        }

    def retention_seconds(self, client: Any, stream_arn: str) -> int | None:
        return None  # the log keeps its items

    def shard_parents(
        self, client: Any, stream_arn: str, shards: Iterable[str]
    ) -> dict[str, str | None]:
        return dict.fromkeys(shards)

    def sequence_number(self, record: Any) -> str | None:
        return RECORDS.item_identifier(record)

    def check_record(self, record: Mapping[str, Any], what: str) -> None:
        if not self.owns_record(record) or self.sequence_number(record) is None:
            raise MalformedMessageError(f"{what} is not a toy change log record: {record!r}")

    def filter_view(self, record: Mapping[str, Any]) -> Any:
        return RECORDS.filter_view(record)

    def item_key(self, record: Mapping[str, Any]) -> str:
        return json.dumps(change_of_record(record)["dynamodb"]["Keys"], sort_keys=True)

    def change_of(self, record: Mapping[str, Any]) -> Change:
        created = change_of_record(record)["dynamodb"].get("ApproximateCreationDateTime", 0)
        return int(float(created) * 1_000_000), int(record["toy"][SEQUENCE])

    def written_at(self, record: Mapping[str, Any]) -> float | None:
        return float(record["toy"]["arrivedAt"])


REPLAY = ToyReplay()
