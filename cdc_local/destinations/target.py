"""What every local delivery kind is given (:class:`DeliveryTarget`) and provides
(:class:`DeliveryKind`), and the batch description of an invocation record both routes share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from cdc_consumer.redrive_shapes import OnFailureMessage

__all__ = ["DeliveryKind", "DeliveryTarget", "batch_info"]


def batch_info(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """The batch description of an invocation record: ``DDBStreamBatchInfo`` (DynamoDB stream)
    or ``KinesisBatchInfo`` (Kinesis stream)."""
    return OnFailureMessage.batch_info(record) or record[OnFailureMessage.KINESIS_BATCH_INFO]


@dataclass(frozen=True)
class DeliveryTarget:
    """One mapping's destination: its ARN, its queue's URL (a queue of the stack), and the
    mapping's UUID (an S3 destination's keys name it)."""

    arn: str
    queue_url: str | None
    mapping_uuid: str


class DeliveryKind(Protocol):
    """How the local mapping delivers to one kind of destination (``service``: its ARN's)."""

    service: str

    def check(self, target: DeliveryTarget) -> None:
        """Raise :class:`~cdc_local.exceptions.LocalPipelineError` when it cannot be used."""
        ...

    def bucket(self, target: DeliveryTarget) -> str | None:
        """The bucket's name, when it is one."""
        ...

    def send(
        self,
        client: Any,
        target: DeliveryTarget,
        record: Mapping[str, Any],
        event: Mapping[str, Any],
        now: float,
    ) -> None:
        """Deliver an invocation record with the calls AWS makes (``client``: the function's
        role's; ``event``: the batch)."""
        ...

    def where(self, target: DeliveryTarget) -> str | None:
        """Where a redrive reads it (``Redrive.run``'s location); None: it cannot."""
        ...

    def peek(self, client: Any, target: DeliveryTarget) -> list[dict[str, Any]]:
        """The invocation records it holds, left there."""
        ...

    def describe(self, target: DeliveryTarget) -> str:
        """One line for people: what it is and what it keeps."""
        ...

    def label(self, target: DeliveryTarget) -> str | None:
        """Serve mode's line naming it (``on-failure queue: <url>``); None: nothing to show."""
        ...

    def redrive_options(
        self, target: DeliveryTarget, function_name: str
    ) -> tuple[list[str], list[str]] | None:
        """``cdc-redrive``'s options that read it, and those that scope the run to this
        consumer's batches (its mapping or ``function_name``); None: the redrive cannot."""
        ...

    def beside_quarantine(self, target: DeliveryTarget) -> list[str]:
        """What a quarantine redrive is also told of it (to hold a record behind an earlier
        change it keeps); none for a pointer."""
        ...
