"""What a consumer of a table with replicas (a global table) needs: the runtime told that the
table is replicated and which attribute is its TTL, and filters on the TTL identity widened.

A TTL deletion carries the service identity (``userIdentity``) only in the region where
DynamoDB's TTL process deleted the item; every other replica's stream gets it as a plain
REMOVE. A filter pattern cannot compare the item's TTL attribute with the record's creation
time, so the check moves into the runtime (``cdc_consumer.expiry``):

- a pattern that *requires* the TTL identity (``StreamFilters.ttl_deletions_only()``) is
  widened on the mapping to REMOVEs whose old image has the TTL attribute, and the runtime
  applies the pattern as written once it has recognised replicated expiries;
- a pattern that *excludes* it (``StreamFilters.exclude_ttl_deletions()``) stays: replicated
  expiries pass it, and the runtime drops them.

Either way synthesis says so (a warning on the consumer). A pipe (StreamFanOut) runs no code, so
its filters cannot be widened: synthesis warns that such a filter misses, or mislabels, the other
regions' expiries (:meth:`Replication.warn_pipe`). See docs/global-tables.md.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Annotations, Stack
from aws_cdk import aws_dynamodb as dynamodb
from cdc_consumer.contract import RECORD_FILTERS_ENV, REPLICATED_TABLE_ENV, TTL_ATTRIBUTE_ENV
from constructs import IConstruct

from cdc_constructs.filter_checks import as_pattern

__all__ = ["REPLICATED_FILTER_WARNING", "Replication"]

REPLICATED_FILTER_WARNING = "cdc:ReplicatedTtlFilter"
"""The id of the synthesis warning on a consumer whose filter names the TTL identity on a table
with replicas."""

_TTL_IDENTITY = {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]}


@dataclass(frozen=True)
class Replication:
    """A table with replicas, as its consumers must read it. ``ttl_attribute``: its TTL
    attribute (None: the table has no TTL, so nothing expires)."""

    ttl_attribute: str | None

    @classmethod
    def of(cls, table: Any) -> Replication | None:
        """The replication of ``table`` (a ChangeCaptureTable, a ReplicaTable or a TableV2 with
        replicas); None for a single-region table or one whose replicas cannot be seen (an
        imported table: give it as a ReplicaTable)."""
        replicated = getattr(table, "replicated", None)
        if isinstance(replicated, bool):  # ChangeCaptureTable, ReplicaTable
            return cls(getattr(table, "time_to_live_attribute", None)) if replicated else None
        child = table.node.default_child if hasattr(table, "node") else None
        if not isinstance(child, dynamodb.CfnGlobalTable):
            return None
        resolved = Stack.of(table).resolve(child._cfn_properties)  # as given, before synthesis
        if len(resolved.get("replicas") or []) < 2:
            return None
        ttl = resolved.get("timeToLiveSpecification") or {}
        return cls(ttl.get("attributeName") if ttl.get("enabled") else None)

    def mapping_filters(self, patterns: Sequence[Any]) -> list[Any]:
        """``patterns`` as the mapping must have them: one requiring the TTL identity widened to
        REMOVEs whose old image has the TTL attribute; every other one as given."""
        return [self._widened(as_pattern(p)) for p in patterns]

    def _widened(self, pattern: Any) -> Any:
        if isinstance(pattern, Mapping) and isinstance(pattern.get("data"), Mapping):
            # A Kinesis record's pattern: the change is under ``data`` (KinesisFilters.on_data).
            return {**pattern, "data": self._widened(pattern["data"])}
        if not isinstance(pattern, Mapping) or pattern.get("userIdentity") != _TTL_IDENTITY:
            return pattern
        widened = copy.deepcopy(dict(pattern))
        del widened["userIdentity"]
        widened.setdefault("eventName", ["REMOVE"])
        if self.ttl_attribute is not None:
            old_image = widened.setdefault("dynamodb", {}).setdefault("OldImage", {})
            old_image.setdefault(self.ttl_attribute, {"N": [{"exists": True}]})
        return widened

    def environment(self, filters: Sequence[Any], *, group: bool) -> dict[str, str]:
        """What the runtime reads: the table is replicated, its TTL attribute, and (a consumer
        of its own, not a group: the group applies its members' filters) the filters as
        written when the mapping's had to change."""
        variables = {REPLICATED_TABLE_ENV: "true"}
        if self.ttl_attribute is not None:
            variables[TTL_ATTRIBUTE_ENV] = self.ttl_attribute
        declared = [as_pattern(p) for p in filters]
        if not group and any(_names_identity(p) for p in declared):
            variables[RECORD_FILTERS_ENV] = json.dumps(declared)
        return variables

    def warn(self, scope: IConstruct, reader: str, patterns: Sequence[Any]) -> None:
        """Say at synthesis (on ``scope``, naming ``reader``, a Lambda consumer) that a filter on
        the TTL identity is checked in the runtime."""
        _warn(
            scope,
            reader,
            patterns,
            "The mapping's filter is widened where it required the identity, and the runtime "
            "applies the filters as written after telling replicated expiries by the TTL "
            "attribute (CDC_REPLICATED_TABLE, docs/global-tables.md)",
        )

    def warn_pipe(self, scope: IConstruct, reader: str, patterns: Sequence[Any]) -> None:
        """Say at synthesis (on ``scope``, naming ``reader``, an EventBridge pipe) that a filter
        on the TTL identity misses or mislabels replicated expiries: a pipe has no runtime to
        tell them by the TTL attribute."""
        _warn(
            scope,
            reader,
            patterns,
            "A pipe applies its filters as written and runs no code that could tell a "
            "replicated expiry by the TTL attribute: a filter requiring the identity forwards "
            "this region's expiries only, one excluding it forwards the other regions' "
            "expiries as deletes. Read expiries with a StreamConsumer, whose runtime tells "
            "them, or filter the pipe on something else (docs/global-tables.md; CdcChecks "
            "rule CDC-ESM13)",
        )


def _warn(scope: IConstruct, reader: str, patterns: Sequence[Any], consequence: str) -> None:
    named = [i for i, p in enumerate(patterns) if _names_identity(as_pattern(p))]
    if not named:
        return
    Annotations.of(scope).add_warning_v2(
        REPLICATED_FILTER_WARNING,
        f"{reader}: filters {named} name the TTL identity (userIdentity), but the table has "
        "replicas: a TTL deletion replicated from another region arrives without it, and a "
        f"filter cannot compare the item's TTL attribute with the record's time. {consequence}",
    )


def _names_identity(pattern: Any) -> bool:
    """Whether ``pattern`` names the TTL identity: at its top (a DynamoDB stream record's
    pattern) or under ``data`` (a Kinesis record's)."""
    if not isinstance(pattern, Mapping):
        return False
    return "userIdentity" in pattern or _names_identity(pattern.get("data"))
