"""Time-to-live values for DynamoDB: epoch **seconds**, inside the window DynamoDB acts on.

DynamoDB's TTL attribute must be a Number of seconds since the Unix epoch. Two mistakes make
items live forever without any error from DynamoDB:

- a value in milliseconds (``time.time() * 1000``, JavaScript's ``Date.now()``): it lies
  thousands of years ahead, so the item never expires;
- a value more than five years in the past: DynamoDB's TTL process skips it, so the item is
  never deleted either.

:func:`ttl_after` computes a correct value; :func:`validate_ttl` checks one you already have and
raises :class:`TtlValueError` naming the value, why it is wrong and the unit DynamoDB expects.
Pure Python (no boto3), so any code that writes items can use it.
"""

from __future__ import annotations

import math
import numbers
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import cast

from cdc_consumer.exceptions import TtlValueError

__all__ = ["TTL_WINDOW", "TtlValueError", "finer_unit", "ttl_after", "validate_ttl"]

#: How far from now a TTL value may lie, in both directions. DynamoDB's TTL process ignores items
#: whose TTL is more than five years in the past; a value more than five years ahead is almost
#: always a unit mistake (milliseconds, microseconds) and would keep the item for ever in practice.
TTL_WINDOW = timedelta(days=5 * 365)

# Finer units people pass by mistake, largest first, with the factor to seconds.
_FINER_UNITS = (("milliseconds", 10**3), ("microseconds", 10**6), ("nanoseconds", 10**9))

#: A plain number given to :func:`ttl_after` that is a whole number of hours when read as
#: milliseconds (``86400000``: a day in milliseconds, 1,000 days in seconds) is refused: in
#: seconds it would be a multiple of 1,000 hours (41.7 days), which nobody means.
_HOUR_MS = 3_600_000


def _now_seconds(now: datetime | float | int | None) -> float:
    if now is None:
        return time.time()
    if isinstance(now, datetime):
        if now.tzinfo is None:
            raise TtlValueError(
                f"now={now!r} is a naive datetime; give an aware one (e.g. datetime.now(UTC)) "
                "so the epoch is unambiguous"
            )
        return now.timestamp()
    return float(now)


def _iso(seconds: float) -> str:
    if abs(seconds) > 10**12:  # far beyond datetime's range; avoid float overflow
        return "beyond year 9999" if seconds > 0 else "before year 1"
    try:
        return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return "beyond year 9999"


def validate_ttl(value: object, *, now: datetime | float | int | None = None) -> int:
    """Return ``value`` as whole epoch seconds if DynamoDB's TTL would act on it, else raise.

    Accepts ``int``, integral ``float`` and integral ``Decimal`` (what boto3's resource API
    returns for Numbers). ``now`` defaults to the current time (``time.time()``); pass it to
    make the check deterministic. A value in the past is valid while it is inside the window
    (DynamoDB deletes such items soon).

    :param value: the TTL attribute's value to check (epoch seconds, if it is right).
    :param now: the current time, an aware ``datetime`` or epoch seconds. Default: now.

    Raises:
        TtlValueError: not a number; not whole seconds; looks like milliseconds, microseconds or
            nanoseconds; or outside ``now ± TTL_WINDOW``. The message names the value, why, and
            the value in seconds where the unit was wrong.
    """
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, Decimal)):
        raise TtlValueError(
            f"TTL value {value!r} is a {type(value).__name__}; DynamoDB's TTL attribute must be "
            "a Number of epoch seconds (e.g. 1767225600)"
        )
    if isinstance(value, Decimal):
        finite = value.is_finite()
    else:
        finite = isinstance(value, numbers.Integral) or math.isfinite(value)
    if not finite:
        raise TtlValueError(f"TTL value {value!r} is not finite; give whole epoch seconds")
    # numbers.Real is not typed as int()-able; every Real and Decimal is (it truncates).
    seconds = int(cast("float | Decimal", value))
    if value != seconds:
        raise TtlValueError(
            f"TTL value {value!r} has a fractional part; give whole epoch seconds (e.g. {seconds})"
        )
    current = _now_seconds(now)
    window = TTL_WINDOW.total_seconds()
    earliest, latest = math.floor(current - window), math.ceil(current + window)
    if seconds > latest:
        finer = finer_unit(seconds, now=current)
        if finer is not None:
            unit, factor = finer
            raise TtlValueError(
                f"TTL value {seconds} looks like epoch {unit} ({_iso(seconds // factor)}); "
                f"DynamoDB's TTL needs epoch seconds, so the item would never expire: "
                f"use {seconds // factor}"
            )
        raise TtlValueError(
            f"TTL value {seconds} is {_iso(seconds)}, more than five years ahead "
            f"(latest {_iso(latest)}); give epoch seconds within five years of now"
        )
    if seconds < earliest:
        raise TtlValueError(
            f"TTL value {seconds} is {_iso(seconds)}, more than five years in the past "
            f"(earliest {_iso(earliest)}); DynamoDB's TTL ignores such items, so it would never "
            "be deleted. Give epoch seconds within five years of now"
        )
    return seconds


def finer_unit(
    seconds: int, *, now: datetime | float | int | None = None
) -> tuple[str, int] | None:
    """(unit, factor to seconds) when epoch ``seconds`` read in a finer unit (milliseconds,
    microseconds, nanoseconds) lands within :data:`TTL_WINDOW` of ``now``: a unit mistake
    that makes an item never expire. None otherwise (the local pipeline's TTL sweeper asks
    this of every TTL value it meets)."""
    current = _now_seconds(now)
    window = TTL_WINDOW.total_seconds()
    earliest, latest = math.floor(current - window), math.ceil(current + window)
    if seconds <= latest:
        return None
    for unit, factor in _FINER_UNITS:
        if earliest * factor <= seconds <= latest * factor:
            return unit, factor
    return None


def ttl_after(
    duration: timedelta | float | int, *, now: datetime | float | int | None = None
) -> int:
    """Epoch seconds ``duration`` after ``now``: the value to store in a TTL attribute.

    ``duration`` is a ``timedelta`` or a number of seconds; it must be positive and at most
    ``TTL_WINDOW`` (five years). ``now`` defaults to the current time; an aware ``datetime``
    or epoch seconds. The result is rounded up to the next whole second, so an item never
    expires before ``duration`` has passed.

    A number that is a whole number of hours *in milliseconds* (``ttl_after(86400000)``, a day
    in milliseconds, would be 1,000 days in seconds) is refused as a unit mistake: give a
    ``timedelta`` (never ambiguous) or seconds.

    Raises:
        TtlValueError: ``duration`` is not positive, longer than five years, looks like
            milliseconds, or not a duration.
    """
    if isinstance(duration, bool) or not isinstance(duration, (timedelta, numbers.Real)):
        raise TtlValueError(
            f"duration {duration!r} is a {type(duration).__name__}; give a timedelta or a "
            "number of seconds"
        )
    seconds = duration.total_seconds() if isinstance(duration, timedelta) else float(duration)
    if not math.isfinite(seconds) or seconds <= 0:
        raise TtlValueError(
            f"duration {duration!r} must be a positive time span (e.g. timedelta(days=7))"
        )
    if not isinstance(duration, timedelta) and seconds >= _HOUR_MS and seconds % _HOUR_MS == 0:
        as_ms, as_seconds = timedelta(milliseconds=seconds), timedelta(seconds=seconds)
        raise TtlValueError(
            f"duration {duration!r} looks like milliseconds: {seconds:.0f} ms is {as_ms}, but "
            f"ttl_after takes seconds ({seconds:.0f} s is {as_seconds}). Give "
            f"ttl_after({as_ms.total_seconds():.0f}) or a timedelta, which is never ambiguous "
            f"(timedelta(seconds={seconds:.0f}) if you meant {as_seconds})"
        )
    if seconds > TTL_WINDOW.total_seconds():
        raise TtlValueError(
            f"duration {duration!r} ({seconds:.0f} s) is longer than five years "
            f"({TTL_WINDOW.total_seconds():.0f} s); DynamoDB TTL values beyond that are "
            "almost always a unit mistake"
        )
    return validate_ttl(math.ceil(_now_seconds(now) + seconds), now=now)
