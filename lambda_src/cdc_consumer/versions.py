"""Versions of changes and their order across routes (docs/design.md §9).

A change's *version* is its creation time in microseconds, then a tie-break:

- the creation time is ``dynamodb.ApproximateCreationDateTime`` in the unit its route gives
  (:mod:`cdc_consumer.routes`): exact to the milli- or microsecond (:func:`format_version`), or
  epoch seconds rounded down to the second, as on a DynamoDB stream: such a change stands at the
  **last** microsecond of its second (``S + 999,999``, :func:`stream_version`; see "Across
  routes");
- the tie-break between changes with the same time is the record's sequence number in its
  route: on a DynamoDB stream the stream's, which orders one item's changes exactly (a route
  that may repeat or reorder changes says what its sequence numbers order).

A version is a string whose order (plain string comparison, as DynamoDB compares String
attributes in a condition) is the order above: the time as 17 zero-padded digits, then the
tie-break's length (3 digits) and the tie-break, so that a longer sequence number sorts after a
shorter one as numbers do. Duplicates of one change carry the same time; a redelivery of the
same record has the same sequence number too.

**Across routes.** One item's changes can reach one view through two routes: a consumer moved
from a route with exact times to the stream, or both feeding one replica. A stream change made
at 12.700 s carries 12 s; at the first microsecond of its second it would sort before an exact
change made at 12.300 s, and the older change would win. Standing at the last microsecond of its
second, it sorts after every exact change created in its second and before every one created in
a later second, so the rule is: across routes, the newer second wins; within one second, the
stream's change wins over the other route's (the order of a move to the stream, the stream
being the later route). Within each route the order is unchanged (a stream's changes of one
second are ordered by their sequence numbers). What it gives up: fed the other way within one
second (a stream change, then a *later* exact change of the same second), the stream's change
still wins; no single string can order them, since the stream does not say where in its second a
change was made. A backfill's snapshot row (``H - 1 µs``, H in whole seconds) keeps its rule: it
wins over every stream change of second H - 1 and loses to every one of H and later.

Upgrade: a view item written from a stream change by an earlier runtime holds its second's first
microsecond. A redelivery of that change (or of an older change of the same second) now stands
later, so it is applied once more: the same image, or an older image of the same second that
the stream's in-order replay then overwrites with the newer one.

The version guard that keeps a view item at its newest version is
:mod:`cdc_consumer.sinks.guarded`.
"""

from __future__ import annotations

from decimal import Decimal, DecimalException
from typing import Any

from cdc_consumer import decimals

#: The view attribute holding the version of the change a view item was last written from.
VERSION_ATTRIBUTE = "cdc_version"
#: Digits of the time part: microseconds since the epoch have 16 digits until the year 2286.
TIME_DIGITS = 17
#: A route's sequence numbers have at most 128 digits: three digits hold the length.
LENGTH_DIGITS = 3

MICROSECONDS_PER_SECOND = 1_000_000
#: Decimal places from seconds to microseconds, and from seconds to milliseconds.
MICROSECOND_PLACES = 6
MILLISECOND_PLACES = 3


def format_version(time_us: int, tie_break: str) -> str:
    """The version string of a change created at ``time_us`` (epoch microseconds)."""
    if time_us < 0:
        raise ValueError(f"a version's time must be >= 0 microseconds, got {time_us}")
    if len(tie_break) >= 10**LENGTH_DIGITS:
        raise ValueError(f"a version's tie-break is at most 999 characters, got {len(tie_break)}")
    return f"{time_us:0{TIME_DIGITS}d}.{len(tie_break):0{LENGTH_DIGITS}d}.{tie_break}"


#: Where a stream change stands in its second: its last microsecond (module docstring).
LAST_MICROSECOND_OF_SECOND = MICROSECONDS_PER_SECOND - 1


def stream_version(time_us: int, tie_break: str) -> str:
    """The version of a change delivered by a DynamoDB stream, whose creation time ``time_us``
    (epoch microseconds) DynamoDB rounded down to the second: the change stands at the last
    microsecond of that second, so it sorts after every exactly timed change of its second
    ("Across routes" in the module docstring)."""
    second_us = time_us - time_us % MICROSECONDS_PER_SECOND
    return format_version(second_us + LAST_MICROSECOND_OF_SECOND, tie_break)


#: A snapshot row's tie-break (docs/backfill.md): the length field of a change's tie-break is at
#: most 128 (the longest sequence number), so ``999.`` sorts after every change's at the same time.
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
    return floored(scaled(value, MICROSECOND_PLACES))


def scaled(value: Any, places: int) -> Decimal:
    """``value`` (a number or numeric string) times ``10**places``, exactly (DynamoDB's
    context). Raises ValueError for what is not a finite number DynamoDB can hold."""
    try:
        return decimals.scale(Decimal(str(value)), places)
    except DecimalException as error:  # NaN, not a number, beyond 38 digits
        raise ValueError(f"not a finite number DynamoDB can hold: {value!r}") from error


def floored(value: Decimal) -> int:
    """The integer at or below ``value``. Raises ValueError for NaN and infinities."""
    try:
        return int(value.to_integral_value(rounding="ROUND_FLOOR"))
    except (DecimalException, OverflowError) as error:  # NaN, Infinity
        raise ValueError(f"not a finite number: {value}") from error
