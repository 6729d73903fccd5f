"""DynamoDB's numbers: the one decimal context the runtime computes sums and differences in.

DynamoDB keeps a number with up to 38 significant digits, exactly. Python's default decimal
context rounds at 28: a sum computed there and stored (``1.2345…E+37`` for a 38-digit amount)
is not the number DynamoDB would hold, and a view built from such sums drifts from its
recomputation. Every sum, difference or scaling of a stored number in the runtime (hot
aggregates, contributions, versions' microseconds) is therefore done in :data:`DYNAMODB_CONTEXT`,
boto3's context for DynamoDB numbers: 38 digits, and ``Inexact``, ``Rounded``, ``Overflow``,
``Underflow`` and ``Clamped`` trapped, so a result DynamoDB could not hold raises
(:class:`decimal.DecimalException`) instead of being silently rounded.
"""

from __future__ import annotations

from decimal import Decimal

from boto3.dynamodb.types import DYNAMODB_CONTEXT

__all__ = ["DYNAMODB_CONTEXT", "add", "scale", "subtract"]


def add(earlier: Decimal | int, later: Decimal | int) -> Decimal:
    """``earlier + later`` exactly, or :class:`decimal.DecimalException` when DynamoDB's 38
    digits (or its range) cannot hold the sum."""
    return DYNAMODB_CONTEXT.add(Decimal(earlier), Decimal(later))


def subtract(minuend: Decimal | int, subtrahend: Decimal | int) -> Decimal:
    """``minuend - subtrahend`` exactly, or :class:`decimal.DecimalException` as :func:`add`."""
    return DYNAMODB_CONTEXT.subtract(Decimal(minuend), Decimal(subtrahend))


def scale(value: Decimal, places: int) -> Decimal:
    """``value * 10**places`` exactly (seconds to microseconds, say): the digits kept, the
    exponent moved; :class:`decimal.DecimalException` when DynamoDB's range cannot hold it."""
    return value.scaleb(places, context=DYNAMODB_CONTEXT)
