"""Versions of changes, and the version guard on view writes (docs/design.md §9).

A change's *version* is its creation time in microseconds, then a tie-break:

- the creation time is ``dynamodb.ApproximateCreationDateTime``: epoch seconds on a DynamoDB
  stream (rounded down to the second), milli- or microseconds in a Kinesis record (the table's
  ``ApproximateCreationDateTimePrecision``; the constructs set MICROSECOND);
- the tie-break between changes with the same time is the record's sequence number: on a
  DynamoDB stream the stream's, which orders one item's changes exactly; on Kinesis the Kinesis
  sequence number, the order in which the shard received the records. With MICROSECOND
  precision two changes of one item do not share a time in practice; with MILLISECOND precision
  two changes of one item within the same millisecond fall back to that arrival order, which a
  redelivered older change can break (so keep MICROSECOND).

A version is a string whose order (plain string comparison, as DynamoDB compares String
attributes in a condition) is the order above: the time as 17 zero-padded digits, then the
tie-break's length (3 digits) and the tie-break, so that a longer sequence number sorts after a
shorter one as numbers do. Duplicates of one Kinesis record carry the same DynamoDB change and the
same time; a redelivery of the same Kinesis record has the same sequence number too.

A *version guard* is a condition on a view write, ``attribute_not_exists(v) OR v < :version``:
the write takes effect only when the view holds an older version of the item (or none). A change
older than or equal to what the view holds is then a no-op, so the view converges to the newest
change whatever the delivery order and however often a change is delivered. When the guard does
not hold, DynamoDB cancels the transaction; the runtime recognizes a guarded action by its
attribute name placeholder (:data:`GUARD_PLACEHOLDER`), drops it as stale (the record's other
actions and its marker still commit) and commits the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, DecimalException
from typing import Any

from cdc_consumer import decimals

#: The view attribute holding the version of the change a view item was last written from.
VERSION_ATTRIBUTE = "cdc_version"
#: The attribute name placeholder every version-guarded action uses for the version attribute;
#: the runtime reads a failed condition on an action that has it as "stale: a no-op".
GUARD_PLACEHOLDER = "#cdcVersion"
#: The value placeholder of the version in a guarded action.
GUARD_VALUE = ":cdcVersion"
#: The attribute name placeholder of a *swap*: a write conditioned on the version it replaces
#: (:class:`cdc_consumer.contributions.Contributions`). Its failed condition means "another
#: writer replaced that version meanwhile": transient, the record is retried and reads again.
SWAP_PLACEHOLDER = "#cdcExpected"
#: Digits of the time part: microseconds since the epoch have 16 digits until the year 2286.
TIME_DIGITS = 17
#: Kinesis sequence numbers have at most 128 digits: three digits hold the length.
LENGTH_DIGITS = 3

MICROSECONDS_PER_SECOND = 1_000_000
#: Decimal places from seconds to microseconds, and from seconds to milliseconds.
MICROSECOND_PLACES = 6
MILLISECOND_PLACES = 3
#: A Kinesis record's ApproximateCreationDateTime at or above this is in microseconds (in
#: milliseconds it would be after the year 5138); below it, milliseconds.
MICROSECONDS_FROM = 10**14
#: Below this a Kinesis record's time is neither milli- nor microseconds after 1973 (epoch
#: seconds, say): refused, as a version built from it would sort before every real change.
MILLISECONDS_FROM = 10**11


def format_version(time_us: int, tie_break: str) -> str:
    """The version string of a change created at ``time_us`` (epoch microseconds)."""
    if time_us < 0:
        raise ValueError(f"a version's time must be >= 0 microseconds, got {time_us}")
    if len(tie_break) >= 10**LENGTH_DIGITS:
        raise ValueError(f"a version's tie-break is at most 999 characters, got {len(tie_break)}")
    return f"{time_us:0{TIME_DIGITS}d}.{len(tie_break):0{LENGTH_DIGITS}d}.{tie_break}"


#: A snapshot row's tie-break (docs/backfill.md): the length field of a change's tie-break is at
#: most 128 (a Kinesis sequence number), so ``999.`` sorts after every change's at the same time.
SNAPSHOT_TIE_BREAK = f"{10**LENGTH_DIGITS - 1}."


def snapshot_version(horizon_us: int) -> str:
    """The version of a snapshot row read after the horizon ``horizon_us`` (epoch microseconds):
    below every change created at or after the horizon, above every change created before it
    (the rule of docs/backfill.md: stream changes win ties)."""
    if horizon_us <= 0:
        raise ValueError(f"a horizon is a positive number of microseconds, got {horizon_us}")
    return f"{horizon_us - 1:0{TIME_DIGITS}d}.{SNAPSHOT_TIE_BREAK}"


def seconds_to_us(value: Any) -> int:
    """Epoch seconds (int, float or a numeric string) as integer microseconds, exactly for the
    decimal digits given (``Decimal(str(value))``, so 1.000001 stays 1000001; the digits are
    shifted in DynamoDB's context, not rounded at Python's default 28)."""
    return _integer(_scaled(value, MICROSECOND_PLACES))


def kinesis_time_to_us(value: Any) -> int:
    """A Kinesis record's ``ApproximateCreationDateTime`` (milli- or microseconds) in
    microseconds. Raises ValueError for anything else (a string, seconds, a negative number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise ValueError(f"expected a number of milli- or microseconds, got {value!r}")
    number = Decimal(str(value))
    if number >= MICROSECONDS_FROM:
        return _integer(number)
    if number >= MILLISECONDS_FROM:
        return _integer(_scaled(number, MICROSECOND_PLACES - MILLISECOND_PLACES))
    raise ValueError(
        f"{value!r} is not epoch milli- or microseconds (below {MILLISECONDS_FROM}: seconds?)"
    )


def _scaled(value: Any, places: int) -> Decimal:
    try:
        return decimals.scale(Decimal(str(value)), places)
    except DecimalException as error:  # NaN, not a number, beyond 38 digits
        raise ValueError(f"not a finite number DynamoDB can hold: {value!r}") from error


def _integer(value: Decimal) -> int:
    try:
        return int(value.to_integral_value(rounding="ROUND_FLOOR"))
    except (DecimalException, OverflowError) as error:  # NaN, Infinity
        raise ValueError(f"not a finite number: {value}") from error


class GuardedAction(dict):  # type: ignore[type-arg]
    """A version-guarded action (a plain dict to boto3) that also says which item it writes:
    ``item_key`` (DynamoDB JSON), so the runtime keeps two writes of one item out of one
    transaction even for a Put, whose key it cannot otherwise tell from the item."""

    item_key: Mapping[str, Any] | None = None


def guard(
    action: Mapping[str, Any],
    version: str,
    attribute: str = VERSION_ATTRIBUTE,
    *,
    key: Mapping[str, Any] | None = None,
) -> GuardedAction:
    """``action`` (a Put or Update in boto3's client shape) guarded by ``version``.

    A Put gets the version in its item; an Update gets ``SET <attribute> = :version``. Both get
    the condition ``attribute_not_exists(<attribute>) OR <attribute> < :version``, joined with
    ``AND`` to a condition the action already has. Use it for any view write that must not be
    overwritten by an older change (a replica, a search document); :class:`LatestImage` does.
    ``key``: the item's key in DynamoDB JSON (give it for a Put: see :class:`GuardedAction`).
    """
    if not isinstance(action, Mapping) or len(action) != 1:
        raise ValueError(f"expected one TransactWriteItems action, got {action!r:.200}")
    ((kind, body),) = action.items()
    if kind not in ("Put", "Update"):
        raise ValueError(f"only a Put or an Update can be version-guarded, got {kind}")
    body = dict(body)
    names = {**body.get("ExpressionAttributeNames", {}), GUARD_PLACEHOLDER: attribute}
    values = {**body.get("ExpressionAttributeValues", {}), GUARD_VALUE: {"S": version}}
    condition = (
        f"(attribute_not_exists({GUARD_PLACEHOLDER}) OR {GUARD_PLACEHOLDER} < {GUARD_VALUE})"
    )
    if body.get("ConditionExpression"):
        condition = f"({body['ConditionExpression']}) AND {condition}"
    if kind == "Put":
        body["Item"] = {**body["Item"], attribute: {"S": version}}
    else:
        update = body.get("UpdateExpression", "")
        assignment = f"{GUARD_PLACEHOLDER} = {GUARD_VALUE}"
        body["UpdateExpression"] = (
            update.replace("SET ", f"SET {assignment}, ", 1)
            if "SET " in update
            else f"SET {assignment} {update}".strip()
        )
    body.update(
        ConditionExpression=condition,
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values,
    )
    guarded = GuardedAction({kind: body})
    guarded.item_key = key if key is not None else body.get("Key")
    return guarded


def is_guarded(action: Any) -> bool:
    """Whether ``action`` is version-guarded (its failed condition means "stale: a no-op")."""
    if not isinstance(action, Mapping) or len(action) != 1:
        return False
    ((_, body),) = action.items()
    names = body.get("ExpressionAttributeNames") if isinstance(body, Mapping) else None
    return isinstance(names, Mapping) and GUARD_PLACEHOLDER in names


def is_swap(action: Any) -> bool:
    """Whether ``action`` is a swap (see :data:`SWAP_PLACEHOLDER`): it makes its record
    idempotent (applied once, the version it expects is gone), so the record needs no marker."""
    if not isinstance(action, Mapping) or len(action) != 1:
        return False
    ((_, body),) = action.items()
    names = body.get("ExpressionAttributeNames") if isinstance(body, Mapping) else None
    return isinstance(names, Mapping) and SWAP_PLACEHOLDER in names
