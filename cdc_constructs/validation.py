"""Checks of construct props, run before any construct is created.

Each ``check_*`` function returns the problems it found (an empty list when the props are
fine); the constructs collect the problems of all their props and raise one
:class:`~cdc_constructs.exceptions.CdcConfigurationError` naming every one of them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Final

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from cdc_consumer.service_limits import STREAM_RETENTION_SECONDS

from cdc_constructs import defaults
from cdc_constructs.exceptions import CdcConfigurationError, Problem

IMAGES_BY_VIEW_TYPE = {
    "KEYS_ONLY": frozenset(),
    "NEW_IMAGE": frozenset({"NewImage"}),
    "OLD_IMAGE": frozenset({"OldImage"}),
    "NEW_AND_OLD_IMAGES": frozenset({"NewImage", "OldImage"}),
}
"""Which images each stream view type carries (filters, templates and the nag pack check
against it)."""


def raise_if_any(
    construct: str,
    problems: Iterable[Problem],
    error: type[CdcConfigurationError] = CdcConfigurationError,
) -> None:
    """Raise one ``error`` naming every problem, if there are any."""
    found = list(problems)
    if found:
        raise error(construct, found)


def seconds(value: Duration | None) -> float | None:
    """A Duration in (possibly fractional) seconds; None for None or anything not a Duration."""
    return value.to_seconds(integral=False) if isinstance(value, Duration) else None


def check_range(
    prop: str, value: Any, low: float, high: float, note: str = "", *, whole: bool = False
) -> list[Problem]:
    """``value`` is a number (not a bool) within ``low..high`` inclusive. Anything that is not
    a number (a Duration for a count, a string, a bool) is named by its type: ``got a
    Duration; retry_attempts is a whole number in 0..10000``."""
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if is_number and math.isfinite(value) and low <= value <= high:
        return []
    allowed = f"a number {_describe_range(low, high)}"
    if not is_number:
        kind = f"a {'whole ' if whole else ''}number {_describe_range(low, high)}"
        allowed = f"{_got(value)}; {prop} is {kind}"
    return [Problem(prop, shown(value), f"{allowed}{'; ' + note if note else ''}")]


def check_whole_number(
    prop: str, value: Any, low: float, high: float, note: str = ""
) -> list[Problem]:
    """``value`` is a whole number (``int``, or a ``float`` with nothing after the point; not a
    bool, NaN or infinity) within ``low..high`` inclusive (``high`` may be ``math.inf``)."""
    problems = check_range(prop, value, low, high, note, whole=True)
    if not problems and not float(value).is_integer():
        allowed = f"a whole number {_describe_range(low, high)}"
        problems = [Problem(prop, value, f"{allowed}{'; ' + note if note else ''}")]
    return problems


class _Shown:
    """A value as an error shows it: an aws-cdk-lib object by what it says
    (``Duration.minutes(5)``), not by its jsii proxy's ``<aws_cdk.Duration object at 0x...>``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def shown(value: Any) -> Any:
    """``value``, or for a Duration a stand-in whose repr is the Duration's own text."""
    if isinstance(value, Duration):
        return _Shown(value.to_string())
    return value


def _got(value: Any) -> str:
    kind = type(value).__name__
    return f"got {'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}"


def check_flag(prop: str, value: Any) -> list[Problem]:
    """``value`` is True or False (a truthy string or number would be read as True by some
    code and refused by CloudFormation elsewhere)."""
    return [] if isinstance(value, bool) else [Problem(prop, value, "True or False")]


def check_instance(prop: str, value: Any, kind: type, described: str) -> list[Problem]:
    """``value`` is None or a ``kind`` (checked before it reaches aws-cdk-lib, whose error
    would name neither the prop nor the value)."""
    return [] if value is None or isinstance(value, kind) else [Problem(prop, value, described)]


def check_removal_policy(value: Any) -> list[Problem]:
    """``removal_policy`` is a RemovalPolicy queues and buckets take (None would leave the
    resource to aws-cdk-lib's default for its type, DESTROY for a queue; SNAPSHOT is for
    databases and volumes only)."""
    if any(value is policy for policy in _RECORD_REMOVAL_POLICIES):
        return []
    return [
        Problem(
            "removal_policy",
            value,
            "RemovalPolicy.RETAIN (the default: it may hold the only copy of a record), "
            "RETAIN_ON_UPDATE_OR_DELETE, or DESTROY to lose what it holds with the stack",
        )
    ]


_RECORD_REMOVAL_POLICIES = (
    RemovalPolicy.RETAIN,
    RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    RemovalPolicy.DESTROY,
)


def check_duration(
    prop: str, value: Duration | None, low: int, high: int, note: str = ""
) -> list[Problem]:
    """``value`` is an ``aws_cdk.Duration`` of whole seconds within ``low..high`` inclusive.

    Checked before any construct is made: a fractional Duration would otherwise fail inside
    aws-cdk-lib, as a jsii error that names neither the prop nor the value.
    """
    in_seconds = seconds(value)
    if in_seconds is not None and low <= in_seconds <= high and float(in_seconds).is_integer():
        return []
    allowed = f"whole seconds in {low}..{high}"
    if in_seconds is None:  # a number of seconds, or anything else that is not a Duration
        allowed = f"{_got(value)}; {prop} is an aws_cdk.Duration of {allowed}"
        return [Problem(prop, value, f"{allowed}{f' ({note})' if note else ''}")]
    return [Problem(prop, f"{in_seconds:g} s", f"{allowed}{f' ({note})' if note else ''}")]


def check_retry_attempts(value: Any) -> list[Problem]:
    low, high = defaults.RETRY_ATTEMPTS_RANGE
    return check_whole_number(
        "retry_attempts",
        value,
        low,
        high,
        "finite: -1 (AWS's default) retries a failing batch until its records expire, "
        "blocking the shard for up to 24 h",
    )


def check_max_record_age(value: Duration | None) -> list[Problem]:
    low, high = defaults.MAX_RECORD_AGE_RANGE_SECONDS
    retention = STREAM_RETENTION_SECONDS
    return check_duration(
        "max_record_age",
        value,
        low,
        retention - 1,
        f"1 minute up to, not including, the 24 h stream retention: AWS accepts up to {high} s, "
        "but an age the stream never reaches means records are never given up on",
    )


def check_batch_size(value: Any) -> list[Problem]:
    return check_whole_number("batch_size", value, *defaults.BATCH_SIZE_RANGE, "whole records")


def check_parallelization_factor(value: Any) -> list[Problem]:
    return check_whole_number(
        "parallelization_factor",
        value,
        *defaults.PARALLELIZATION_FACTOR_RANGE,
        "concurrent batches per shard",
    )


def check_max_batching_window(value: Duration | None) -> list[Problem]:
    return check_duration("max_batching_window", value, *defaults.MAX_BATCHING_WINDOW_RANGE_SECONDS)


def check_tumbling_window(value: Duration | None, parallelization_factor: Any) -> list[Problem]:
    """``tumbling_window``: None (the default), or whole seconds in 0..900; a window (above 0 s)
    only beside a parallelization factor of 1, as AWS refuses it beside a higher one."""
    if value is None:
        return []
    found = check_duration("tumbling_window", value, *defaults.TUMBLING_WINDOW_RANGE_SECONDS)
    factor = parallelization_factor
    if found or not seconds(value) or not isinstance(factor, int) or factor <= 1:
        return found
    return [
        Problem(
            "tumbling_window",
            shown(value),
            f"omitted or Duration.seconds(0) beside parallelization_factor={factor}: AWS refuses "
            f"a tumbling window beside a factor above 1 "
            f"({defaults.WINDOW_WITH_PARALLELIZATION_REFUSAL!r}); without a window the runtime "
            "keeps per-record markers (2 write units a record, docs/design.md §12)",
        )
    ]


def check_function_timeout(prop: str, value: Duration | None) -> list[Problem]:
    """A Lambda function's timeout: whole seconds within Lambda's range."""
    return check_duration(prop, value, *defaults.LAMBDA_TIMEOUT_RANGE_SECONDS, "Lambda's limit")


def check_starting_position(value: lambda_.StartingPosition, allow_latest: bool) -> list[Problem]:
    if value == lambda_.StartingPosition.TRIM_HORIZON:
        return []
    if value == lambda_.StartingPosition.LATEST:
        if allow_latest:
            return []
        return [
            Problem(
                "starting_position",
                "LATEST",
                "TRIM_HORIZON; LATEST skips the records written while the mapping is created "
                "or updated; to accept that, also pass allow_latest_starting_position=True",
            )
        ]
    return [Problem("starting_position", value, "TRIM_HORIZON (or LATEST with opt-in)")]


IMAGES: Final = ("NewImage", "OldImage")
"""The images a stream record can carry (the names Lambda's event uses)."""


def check_reads_images(reads_images: Any, stream_view_type: str | None) -> list[Problem]:
    """The images a handler declares it reads: known names, each carried by the stream's view
    type (when it is known)."""
    if reads_images is None:
        return []
    if isinstance(reads_images, str) or not isinstance(reads_images, Sequence):
        return [
            Problem("reads_images", reads_images, f"a list of image names ({', '.join(IMAGES)})")
        ]
    unknown = [image for image in reads_images if image not in IMAGES]
    if unknown:
        return [
            Problem("reads_images", list(reads_images), f"image names among {', '.join(IMAGES)}")
        ]
    carried = IMAGES_BY_VIEW_TYPE.get(stream_view_type or "")
    missing = [
        image
        for image in IMAGES
        if image in reads_images and carried is not None and image not in carried
    ]
    if not missing:
        return []
    return [
        Problem(
            "reads_images",
            list(reads_images),
            f"images the stream carries: its view type {stream_view_type} has no "
            f"{' and no '.join(missing)}, which the handler reads; use a table whose stream "
            "view type carries them (NEW_AND_OLD_IMAGES carries both; the view type of a "
            "stream cannot change without re-creating it)",
        )
    ]


def check_name(prop: str, value: Any, forbidden: str = "") -> list[Problem]:
    """A non-empty string without any of the ``forbidden`` characters."""
    if isinstance(value, str) and value and not any(c in value for c in forbidden):
        return []
    extra = f" without {' or '.join(repr(c) for c in forbidden)}" if forbidden else ""
    return [Problem(prop, value, f"a non-empty string{extra}")]


def view_type_name(view_type: dynamodb.StreamViewType | str | None) -> str | None:
    """The CloudFormation name of a stream view type (enum member or string)."""
    if view_type is None:
        return None
    return getattr(view_type, "name", None) or str(view_type)


def _describe_range(low: float, high: float) -> str:
    return f">= {low:g}" if math.isinf(high) else f"in {low:g}..{high:g}"
