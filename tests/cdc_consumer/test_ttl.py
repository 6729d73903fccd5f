from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from cdc_consumer.ttl import TTL_WINDOW, TtlValueError, finer_unit, ttl_after, validate_ttl
from hypothesis import assume, given, settings
from hypothesis import strategies as st

NOW = datetime(2026, 1, 1, tzinfo=UTC)
NOW_S = int(NOW.timestamp())  # 1767225600
WINDOW_S = int(TTL_WINDOW.total_seconds())


def test_ttl_after_is_epoch_seconds_from_now() -> None:
    assert ttl_after(timedelta(days=7), now=NOW) == NOW_S + 7 * 86400
    assert ttl_after(3600, now=NOW_S) == NOW_S + 3600


def test_ttl_after_rounds_up_so_the_item_never_expires_early() -> None:
    assert ttl_after(timedelta(seconds=1), now=NOW_S + 0.25) == NOW_S + 2


def test_ttl_after_defaults_to_the_current_time() -> None:
    before = int(datetime.now(UTC).timestamp())
    value = ttl_after(timedelta(hours=1))
    after = int(datetime.now(UTC).timestamp()) + 1
    assert before + 3600 <= value <= after + 3600


@pytest.mark.parametrize(
    ("duration", "expected"),
    [
        (timedelta(0), "must be a positive time span"),
        (-5, "must be a positive time span"),
        (float("nan"), "must be a positive time span"),
        (TTL_WINDOW + timedelta(days=1), "longer than five years"),
        ("7d", "give a timedelta or a number of seconds"),
        (True, "give a timedelta or a number of seconds"),
    ],
)
def test_ttl_after_rejects_durations_with_a_clear_error(duration: object, expected: str) -> None:
    with pytest.raises(TtlValueError, match=expected) as raised:
        ttl_after(duration, now=NOW)  # type: ignore[arg-type]
    assert repr(duration) in str(raised.value)


def test_ttl_after_accepts_exactly_five_years() -> None:
    assert ttl_after(TTL_WINDOW, now=NOW_S + 0.5) == NOW_S + WINDOW_S + 1


def test_validate_accepts_seconds_in_the_window_and_returns_an_int() -> None:
    assert validate_ttl(NOW_S + 60, now=NOW) == NOW_S + 60
    assert validate_ttl(Decimal(NOW_S + 60), now=NOW) == NOW_S + 60
    assert validate_ttl(float(NOW_S + 60), now=NOW) == NOW_S + 60
    # In the past but inside the window: DynamoDB deletes it soon, so it is valid.
    assert validate_ttl(NOW_S - 86400, now=NOW) == NOW_S - 86400


def test_validate_names_milliseconds_and_gives_the_value_in_seconds() -> None:
    millis = (NOW_S + 3600) * 1000
    with pytest.raises(TtlValueError) as raised:
        validate_ttl(millis, now=NOW)
    message = str(raised.value)
    assert str(millis) in message
    assert "milliseconds" in message
    assert "never expire" in message
    assert f"use {NOW_S + 3600}" in message
    assert "epoch seconds" in message


@pytest.mark.parametrize(("unit", "factor"), [("microseconds", 10**6), ("nanoseconds", 10**9)])
def test_validate_names_finer_units(unit: str, factor: int) -> None:
    with pytest.raises(TtlValueError, match=f"looks like epoch {unit}.*use {NOW_S}"):
        validate_ttl(NOW_S * factor, now=NOW)


def test_validate_rejects_more_than_five_years_in_the_past() -> None:
    value = NOW_S - WINDOW_S - 86400
    with pytest.raises(TtlValueError, match="more than five years in the past") as raised:
        validate_ttl(value, now=NOW)
    assert str(value) in str(raised.value)
    assert "never be deleted" in str(raised.value)


def test_validate_rejects_more_than_five_years_ahead_that_is_no_finer_unit() -> None:
    value = NOW_S + WINDOW_S + 86400
    with pytest.raises(TtlValueError, match="more than five years ahead"):
        validate_ttl(value, now=NOW)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1767225600", "is a str"),
        (None, "is a NoneType"),
        (True, "is a bool"),
        (NOW_S + 0.5, "fractional part"),
        (Decimal("NaN"), "not finite"),
        (float("inf"), "not finite"),
        (10**400, "more than five years ahead"),
    ],
)
def test_validate_rejects_non_seconds_with_a_clear_error(value: object, expected: str) -> None:
    with pytest.raises(TtlValueError, match=expected):
        validate_ttl(value, now=NOW)


def test_naive_now_is_rejected() -> None:
    with pytest.raises(TtlValueError, match="naive datetime"):
        ttl_after(60, now=datetime(2026, 1, 1))


@settings(max_examples=200, deadline=None)
@given(offset=st.integers(min_value=-WINDOW_S, max_value=WINDOW_S))
def test_every_second_in_the_window_is_valid(offset: int) -> None:
    assert validate_ttl(NOW_S + offset, now=NOW) == NOW_S + offset


@settings(max_examples=200, deadline=None)
@given(offset=st.integers(min_value=-WINDOW_S, max_value=WINDOW_S))
def test_the_same_instant_in_milliseconds_is_always_rejected(offset: int) -> None:
    with pytest.raises(TtlValueError, match="milliseconds"):
        validate_ttl((NOW_S + offset) * 1000, now=NOW)


@settings(max_examples=200, deadline=None)
@given(seconds=st.integers(min_value=1, max_value=WINDOW_S))
def test_ttl_after_round_trips_through_validate(seconds: int) -> None:
    assume(seconds % 3_600_000 != 0)  # whole hours in milliseconds: refused, tested below
    value = ttl_after(seconds, now=NOW)
    assert value == NOW_S + seconds
    assert validate_ttl(value, now=NOW) == value


@pytest.mark.parametrize(
    ("duration", "meant"),
    [(86_400_000, "1 day"), (3_600_000, "1:00:00"), (43_200_000, "12:00:00")],
)
def test_ttl_after_refuses_a_duration_that_looks_like_milliseconds(
    duration: int, meant: str
) -> None:
    """ttl_after(86400000) (a day in milliseconds) would be 1,000 days out, without a word."""
    with pytest.raises(TtlValueError) as raised:
        ttl_after(duration, now=NOW)
    message = str(raised.value)
    assert f"duration {duration} looks like milliseconds" in message
    assert meant in message and f"ttl_after({duration // 1000})" in message


def test_a_timedelta_is_never_taken_for_milliseconds() -> None:
    assert ttl_after(timedelta(seconds=86_400_000), now=NOW) == NOW_S + 86_400_000


def test_finer_unit_names_the_unit_of_a_mistaken_value() -> None:
    assert finer_unit(NOW_S * 1000, now=NOW) == ("milliseconds", 1000)
    assert finer_unit(NOW_S * 10**6, now=NOW) == ("microseconds", 10**6)
    assert finer_unit(NOW_S + 86400, now=NOW) is None
