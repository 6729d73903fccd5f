"""StreamConsumer's props, grouped by concern: each group is an option object with its own
``problems()``; :class:`ConsumerOptions` holds the four and collects every problem at once."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from cdc_constructs.exceptions import Problem
from cdc_constructs.failure_options import FailureHandlingOptions
from cdc_constructs.function_options import FunctionOptions
from cdc_constructs.mapping_options import StreamMappingOptions
from cdc_constructs.monitoring_options import MonitoringOptions

__all__ = ["ConsumerOptions"]

_Options = TypeVar("_Options")


@dataclass(frozen=True)
class ConsumerOptions:
    """The props of one StreamConsumer, by concern."""

    function: FunctionOptions
    mapping: StreamMappingOptions
    failure: FailureHandlingOptions
    monitoring: MonitoringOptions

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> ConsumerOptions:
        """Split StreamConsumer's flat keyword props by concern: each option object takes the
        props named like its fields (a test keeps every prop in exactly one of them)."""
        return cls(
            function=_pick(FunctionOptions, props),
            mapping=_pick(StreamMappingOptions, props),
            failure=_pick(FailureHandlingOptions, props),
            monitoring=_pick(MonitoringOptions, props),
        )

    @classmethod
    def prop_names(cls) -> list[str]:
        """Every prop the four option objects take."""
        groups = (FunctionOptions, StreamMappingOptions, FailureHandlingOptions, MonitoringOptions)
        return [field.name for group in groups for field in dataclasses.fields(group)]

    def problems(self, stream_view_type: str | None) -> list[Problem]:
        """Every problem of every group, in the order the props are documented."""
        found = self.function.problems()
        found += self.mapping.problems(stream_view_type)
        found += self.monitoring.problems(self.mapping.record_age)
        found += self.failure.problems(self.function.consumer_timeout)
        return found


def _pick(options: type[_Options], props: Mapping[str, Any]) -> _Options:
    names = [field.name for field in dataclasses.fields(options)]  # type: ignore[arg-type]
    return options(**{name: props[name] for name in names})
