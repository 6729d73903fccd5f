"""An event source mapping's settings as synthesized (:class:`MappingSettings`, with Lambda's
defaults) and what it counts (:class:`MappingCounters`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.filter_patterns import FilterCriteria

from cdc_local.exceptions import LocalPipelineError
from cdc_local.tumbling_windows import check_tumbling_window

__all__ = ["MappingCounters", "MappingSettings"]


@dataclass(frozen=True)
class MappingSettings:
    """The ESM properties the emulation follows, with Lambda's defaults for stream sources."""

    batch_size: int = 100
    maximum_batching_window_seconds: float = 0.0
    starting_position: str = "TRIM_HORIZON"
    bisect_batch_on_function_error: bool = False
    maximum_retry_attempts: int = -1
    maximum_record_age_seconds: int = -1
    report_batch_item_failures: bool = False
    parallelization_factor: int = 1
    filters: FilterCriteria = field(default_factory=FilterCriteria)
    on_failure_arn: str | None = None
    enabled: bool = True
    tumbling_window_seconds: int = 0

    def __post_init__(self) -> None:
        check_tumbling_window(self.tumbling_window_seconds, self.parallelization_factor)

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> MappingSettings:
        """From an ``AWS::Lambda::EventSourceMapping``'s (resolved) properties."""
        if "StartingPositionTimestamp" in properties:
            raise LocalPipelineError(
                "event source mapping property StartingPositionTimestamp is not emulated by the "
                "local pipeline (DynamoDB streams do not support AT_TIMESTAMP)"
            )
        position = properties.get("StartingPosition", "TRIM_HORIZON")
        if position not in ("TRIM_HORIZON", "LATEST"):
            raise LocalPipelineError(
                f"StartingPosition {position!r}: a DynamoDB stream mapping starts at "
                "TRIM_HORIZON or LATEST"
            )
        destination = ((properties.get("DestinationConfig") or {}).get("OnFailure") or {}).get(
            "Destination"
        )
        return cls(
            batch_size=int(properties.get("BatchSize", 100)),
            maximum_batching_window_seconds=float(
                properties.get("MaximumBatchingWindowInSeconds", 0)
            ),
            starting_position=position,
            bisect_batch_on_function_error=bool(
                properties.get("BisectBatchOnFunctionError", False)
            ),
            maximum_retry_attempts=int(properties.get("MaximumRetryAttempts", -1)),
            maximum_record_age_seconds=int(properties.get("MaximumRecordAgeInSeconds", -1)),
            report_batch_item_failures="ReportBatchItemFailures"
            in (properties.get("FunctionResponseTypes") or ()),
            parallelization_factor=int(properties.get("ParallelizationFactor", 1)),
            filters=FilterCriteria.from_properties(properties),
            on_failure_arn=destination,
            enabled=bool(properties.get("Enabled", True)),
            tumbling_window_seconds=int(properties.get("TumblingWindowInSeconds", 0)),
        )


@dataclass
class MappingCounters:
    """What one mapping did; every count is of records unless it says invocations or messages."""

    records_read: int = 0
    records_filtered_out: int = 0
    records_delivered: int = 0
    records_succeeded: int = 0
    records_expired: int = 0
    records_discarded: int = 0
    invocations: int = 0
    #: Of them, final invocations of a tumbling window (no records).
    final_invocations: int = 0
    failed_invocations: int = 0
    partial_failures: int = 0
    bisections: int = 0
    duplicate_deliveries: int = 0
    on_failure_messages: int = 0
    on_failure_records: int = 0

    def event_counts(self) -> dict[str, int]:
        """The counts Lambda publishes as the mapping's event-count metrics (``MetricsConfig``
        ``EventCount``; namespace AWS/Lambda, dimension EventSourceMappingUUID), where this
        emulation counts the same thing: ``DroppedEventCount`` is the records given up on
        (retries exhausted or record age exceeded), ``OnFailureDestinationDeliveredEventCount``
        those of them sent to the on-failure destination."""
        return {
            "PolledEventCount": self.records_read,
            "FilteredOutEventCount": self.records_filtered_out,
            "InvokedEventCount": self.records_delivered,
            "DroppedEventCount": self.records_discarded + self.records_expired,
            "OnFailureDestinationDeliveredEventCount": self.on_failure_records,
        }
