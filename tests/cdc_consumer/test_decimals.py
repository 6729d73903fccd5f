"""Every sum and difference of the runtime in DynamoDB's number context (38 exact digits), on
the streaming path and a backfill's alike: Python's default context rounds at 28 digits and a
38-digit amount was stored and added as ``1.2345…E+37`` (issue 31)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from cdc_consumer import Change, Contributions, PermanentError, decimals
from cdc_consumer.routes.kinesis.records import kinesis_time_to_us
from cdc_consumer.snapshots import SnapshotChange, snapshot_record
from cdc_consumer.testing import TableStream, serialize
from cdc_consumer.versions import seconds_to_us

from tests.reference_app.handlers.orders import handler_module

AMOUNT = Decimal("12345678901234567890123456789012345678")  # 38 digits, as DynamoDB keeps it
HALF = Decimal("6172839450617283945061728394506172839")
LESS_ONE = Decimal("12345678901234567890123456789012345677")  # (no arithmetic here: 28 digits)


class NoContributionYet:
    """A DynamoDB client whose idempotency table holds no contribution: the swap's and the
    view's numbers are then exactly what the projection computed."""

    def get_item(self, **_: Any) -> dict[str, Any]:
        return {}


class StoredContribution(NoContributionYet):
    def __init__(self, shares: list[list[str]]) -> None:
        self.shares = shares

    def get_item(self, **_: Any) -> dict[str, Any]:
        return {"Item": {"cdc_version": {"S": "0"}, "shares": {"S": json.dumps(self.shares)}}}


def shares(image: dict[str, Any] | None) -> list[Any]:
    assert image is not None
    return [("view", {"pk": "total"}, {"amount": image["amount"], "again": image["amount"]})]


def twice(image: dict[str, Any] | None) -> list[Any]:
    assert image is not None
    return [("view", {"pk": "total"}, {"amount": image["amount"]})] * 2


def contributions(contribution: Any, client: Any) -> Contributions:
    return Contributions("stats", contribution, table_name="idempotency", dynamodb_client=client)


def stream_change(amount: Decimal) -> Change:
    record = TableStream(clock=lambda: 1_000).put({"pk": "ORDER#1", "amount": amount})
    assert record is not None
    return Change.from_record(record)


def snapshot_change(amount: Decimal) -> Change:
    row = serialize({"pk": "ORDER#1", "amount": amount})
    record = snapshot_record(
        row,
        {"pk": row["pk"]},
        backfill_id="b1",
        horizon=1_000,
        sequence_number="1",
        stream_arn=None,
    )
    return SnapshotChange.from_record(record)


def written(actions: list[dict[str, Any]]) -> tuple[list[list[str]], dict[str, Any]]:
    swap, addition = actions
    return json.loads(swap["Put"]["Item"]["shares"]["S"]), addition["Update"]


@pytest.mark.parametrize("change", [stream_change, snapshot_change], ids=["stream", "snapshot"])
def test_a_38_digit_contribution_is_stored_and_added_exactly(change: Any) -> None:
    actions = contributions(shares, NoContributionYet())(change(AMOUNT))

    stored, update = written(actions)

    assert [share[3] for share in stored] == [str(AMOUNT), str(AMOUNT)]
    assert sorted(v["N"] for v in update["ExpressionAttributeValues"].values()) == [
        str(AMOUNT),
        str(AMOUNT),
    ]


def test_a_38_digit_difference_is_exact() -> None:
    stored = [["view", json.dumps({"pk": {"S": "total"}}), "amount", "1"]]
    actions = contributions(twice, StoredContribution(stored))(stream_change(HALF))

    shares_written, update = written(actions)

    assert shares_written[0][3] == str(AMOUNT)
    assert [v["N"] for v in update["ExpressionAttributeValues"].values()] == [str(LESS_ONE)]


def test_a_sum_beyond_38_digits_is_the_records_fault_not_rounded() -> None:
    change = stream_change(Decimal("9" * 38))

    with pytest.raises(PermanentError, match="38 significant digits") as refused:
        contributions(twice, NoContributionYet())(change)

    # Unreadable: the swap takes the item's contribution out, with nothing rounded in the view.
    swap, *additions = refused.value.actions
    assert swap["Put"]["Item"]["shares"]["S"] == "[]"
    assert additions == []


def test_the_reference_delta_projection_moves_the_view_exactly() -> None:
    order_stats = handler_module("order_stats")
    old = ("c1", {"paid_amount": Decimal(1)})
    new = ("c1", {"paid_amount": AMOUNT})

    assert order_stats._deltas(new, old) == {"c1": {"paid_amount": LESS_ONE}}


def test_seconds_are_shifted_to_microseconds_not_rounded() -> None:
    just_before = "1700000000." + "9" * 28  # 38 digits: rounding at 28 made it a second later

    assert seconds_to_us(just_before) == 1_700_000_000_999_999
    assert kinesis_time_to_us(Decimal("1700000000999." + "9" * 25)) == 1_700_000_000_999_999


def test_the_runtime_has_one_number_context_dynamodbs() -> None:
    from boto3.dynamodb.types import DYNAMODB_CONTEXT

    assert decimals.DYNAMODB_CONTEXT is DYNAMODB_CONTEXT
    assert decimals.DYNAMODB_CONTEXT.prec == 38
