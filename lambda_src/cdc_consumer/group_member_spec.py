"""A consumer group's member as the constructs declare it in ``CDC_CONSUMER_GROUP``.

StreamConsumer (``members``) encodes it, :class:`cdc_consumer.ConsumerGroup` and the redrive
decode it. Beside :mod:`cdc_consumer.consumer_group`, not in it: the constructs import it, and the
group loads the runtime. Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_consumer.environment_variables import CONSUMER_GROUP_ENV
from cdc_consumer.message_fields import ContractError

__all__ = [
    "GroupMemberSpec",
]


@dataclass(frozen=True)
class GroupMemberSpec:
    """One member of a consumer group as the constructs declare it (:data:`CONSUMER_GROUP_ENV`):
    its consumer name (its markers' namespace, ``Consumer`` metric dimension and quarantine
    messages' ``consumer``) and the Lambda filter patterns of the records it consumes (none:
    every record the mapping delivers)."""

    name: str
    filters: tuple[Mapping[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "filters": [dict(f) for f in self.filters]}

    @classmethod
    def from_dict(cls, data: Any) -> GroupMemberSpec:
        name = data.get("name") if isinstance(data, Mapping) else None
        filters = data.get("filters", []) if isinstance(data, Mapping) else None
        if not isinstance(name, str) or not name or not isinstance(filters, list):
            raise ContractError(
                f"a consumer group member is {{'name': str, 'filters': [pattern, ...]}}, "
                f"got {data!r}"
            )
        if not all(isinstance(f, Mapping) for f in filters):
            raise ContractError(f"member {name!r}: each filter is a JSON object, got {filters!r}")
        return cls(name, tuple(filters))

    @staticmethod
    def encode(members: Sequence[GroupMemberSpec]) -> str:
        """The :data:`CONSUMER_GROUP_ENV` value for ``members``."""
        return json.dumps([member.to_dict() for member in members], separators=(",", ":"))

    @classmethod
    def decode(cls, value: str) -> tuple[GroupMemberSpec, ...]:
        """The members a :data:`CONSUMER_GROUP_ENV` value declares."""
        try:
            data = json.loads(value)
        except ValueError as error:
            raise ContractError(f"{CONSUMER_GROUP_ENV} is not JSON ({error}): {value!r}") from None
        if not isinstance(data, list) or not data:
            raise ContractError(f"{CONSUMER_GROUP_ENV} is a non-empty JSON list, got {value!r}")
        return tuple(cls.from_dict(item) for item in data)
