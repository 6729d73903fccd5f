"""Checks of filter patterns at synthesis, in the grammar the runtime matches them with.

One grammar serves three places: synthesis (here), the runtime's matcher and the redrive
(``cdc_consumer.filter_patterns``, which redrive uses to replay only what the mapping would have
delivered). A pattern the matcher cannot read would make every redrive invocation fail, so it is
refused here with the matcher's own words; ``$or`` is accepted wherever the matcher accepts it.

Patterns are accepted as plain dicts (what :class:`~cdc_constructs.StreamFilters` builds) or as
aws-cdk-lib's ``lambda_.FilterCriteria.filter({...})`` output (``{"pattern": "<json>"}``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from cdc_consumer.exceptions import FilterPatternError
from cdc_consumer.filter_patterns import FilterPattern

from cdc_constructs import defaults
from cdc_constructs.exceptions import Problem
from cdc_constructs.record_shape import DYNAMODB_STREAM_RECORD, Fields, shape_problems
from cdc_constructs.validation import IMAGES_BY_VIEW_TYPE

__all__ = ["as_pattern", "check_filter_pattern", "check_filters"]

_CDK_FILTER_KEY = "pattern"
"""``lambda_.FilterCriteria.filter`` returns ``{"pattern": "<the pattern as JSON>"}``."""


def as_pattern(item: Any) -> Any:
    """The pattern as a dict: ``item`` itself, or the JSON inside
    ``lambda_.FilterCriteria.filter(...)`` output. Anything else is returned as given (and
    refused by :func:`check_filter_pattern`)."""
    if isinstance(item, Mapping) and set(item) == {_CDK_FILTER_KEY}:
        text = item[_CDK_FILTER_KEY]
        if isinstance(text, str):
            try:
                return json.loads(text)
            except ValueError:
                return item
    return item


def check_filters(
    filters: Any, stream_view_type: str | None, shape: Fields = DYNAMODB_STREAM_RECORD
) -> list[Problem]:
    """At most 5 patterns, each valid in the runtime's grammar, on fields and types the
    record has at every level (``shape``: a DynamoDB stream record by default; see
    :mod:`~cdc_constructs.record_shape`), with finite numbers, within AWS's length, and on
    images the stream carries."""
    if isinstance(filters, Mapping | str | bytes) or not isinstance(filters, Sequence):
        return [Problem("filters", filters, "a list of filter patterns (dicts)")]
    problems: list[Problem] = []
    if len(filters) > defaults.MAX_FILTERS:
        problems.append(
            Problem(
                "filters",
                f"{len(filters)} patterns",
                f"at most {defaults.MAX_FILTERS} patterns per event source mapping or pipe "
                "(AWS limit)",
            )
        )
    for index, pattern in enumerate(filters):
        problems += check_filter_pattern(f"filters[{index}]", pattern, stream_view_type, shape)
    return problems


def check_filter_pattern(
    prop: str, item: Any, stream_view_type: str | None, shape: Fields = DYNAMODB_STREAM_RECORD
) -> list[Problem]:
    """One filter pattern (see :func:`check_filters`)."""
    pattern = as_pattern(item)
    if not isinstance(pattern, Mapping) or not pattern:
        return [Problem(prop, item, "a non-empty dict (a filter pattern)")]
    try:
        # Refused before any aws-cdk-lib call: NaN or infinity would crash the jsii kernel.
        text = json.dumps(pattern, allow_nan=False)
    except ValueError:
        return [Problem(prop, pattern, "finite numbers only: NaN and infinity are not JSON")]
    except TypeError:
        return [Problem(prop, pattern, "JSON-serializable values only")]
    try:
        FilterPattern(pattern, prop)
    except FilterPatternError as error:
        return [Problem(prop, pattern, f"a pattern Lambda accepts: {error}")]
    problems = []
    if len(text) > defaults.MAX_FILTER_PATTERN_LENGTH:
        problems.append(
            Problem(
                prop,
                f"{len(text)} characters as JSON",
                f"at most {defaults.MAX_FILTER_PATTERN_LENGTH} characters (AWS limit)",
            )
        )
    for found in shape_problems(pattern, shape, prop):
        problems.append(Problem(found.path, found.value, found.reason))
    return problems + _check_images(prop, pattern, stream_view_type)


def _branches(pattern: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The pattern's top-level fields, ``$or`` alternatives' included (each a mapping of
    fields; ``$or`` itself is not a field)."""
    yield {key: value for key, value in pattern.items() if key != "$or"}
    for alternative in pattern.get("$or") or ():
        if isinstance(alternative, Mapping):
            yield from _branches(alternative)


def _check_images(
    prop: str, pattern: Mapping[str, Any], stream_view_type: str | None
) -> list[Problem]:
    images = IMAGES_BY_VIEW_TYPE.get(stream_view_type or "")
    if images is None:
        return []
    named: set[str] = set()
    for branch in _branches(pattern):
        body = branch.get("dynamodb")
        for inner in _branches(body) if isinstance(body, Mapping) else ():
            named.update(image for image in ("NewImage", "OldImage") if image in inner)
    missing = sorted(named - images)
    if not missing:
        return []
    return [
        Problem(
            prop,
            pattern,
            f"a stream with view type {stream_view_type} carries no "
            f"{' or '.join(missing)}, so this pattern never matches; filter on "
            f"{', '.join(['Keys', *sorted(images)])} or use a stream view type with the image",
        )
    ]
