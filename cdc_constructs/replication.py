"""What a consumer of a table with replicas (a global table) needs: the runtime told that the
table is replicated and which attribute is its TTL, and filters on the TTL identity widened.

A TTL deletion carries the service identity (``userIdentity``) only in the region where
DynamoDB's TTL process deleted the item; every other replica's stream gets it as a plain
REMOVE. A filter pattern cannot compare the item's TTL attribute with the record's creation
time, so the check moves into the runtime (``cdc_consumer.expiry``):

- a pattern that *requires* the TTL identity (``StreamFilters.ttl_deletions_only()``, or any
  condition on ``userIdentity`` only the identity meets, however written:
  :mod:`cdc_constructs.ttl_identity`) is widened on the mapping to REMOVEs whose old image has
  the TTL attribute, and the runtime applies the pattern as written once it has recognised
  replicated expiries; one that requires it inside ``$or`` cannot be widened as one pattern and
  is refused, saying how to write it (:meth:`Replication.problems`);
- a pattern that *excludes* it (``StreamFilters.exclude_ttl_deletions()``) stays: replicated
  expiries pass it, and the runtime drops them.

Either way synthesis says so (a warning on the consumer). A pipe (StreamFanOut) runs no code, so
its filters cannot be widened: one requiring the identity would never forward another region's
expiry and is refused (:meth:`Replication.pipe_problems`); one excluding it forwards them as
deletes, which synthesis warns of (:meth:`Replication.warn_pipe`). See docs/global-tables.md.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Annotations, Stack
from aws_cdk import aws_dynamodb as dynamodb
from cdc_consumer.environment_variables import (
    RECORD_FILTERS_ENV,
    REPLICATED_TABLE_ENV,
    TTL_ATTRIBUTE_ENV,
)
from constructs import IConstruct

from cdc_constructs.exceptions import Problem
from cdc_constructs.filter_checks import as_pattern
from cdc_constructs.ttl_identity import IdentityUse, alternatives, identity_uses, names_identity

__all__ = ["REPLICATED_FILTER_WARNING", "Replication"]

REPLICATED_FILTER_WARNING = "cdc:ReplicatedTtlFilter"
"""The id of the synthesis warning on a consumer whose filter names the TTL identity on a table
with replicas."""


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

    def problems(self, patterns: Sequence[Any], prop: str = "filters") -> list[Problem]:
        """A pattern that requires the identity in one ``$or`` alternative only cannot be
        widened without admitting more than that alternative: refused, saying how to write it."""
        return [
            Problem(
                f"{prop}[{index}]",
                pattern,
                "a pattern that admits TTL deletions replicated from another region, which "
                "carry no userIdentity: this one requires the identity inside $or, so the "
                "mapping would drop them. Give the $or alternatives as separate patterns (a "
                "record matching any of a consumer's patterns is delivered), and the one "
                "requiring the identity is widened (docs/global-tables.md)",
            )
            for index, pattern in enumerate(as_pattern(p) for p in patterns)
            if IdentityUse.REQUIRES in identity_uses(pattern) and _has_alternatives(pattern)
        ]

    def pipe_problems(self, patterns: Sequence[Any], prop: str = "filters") -> list[Problem]:
        """A pipe runs no code to tell a replicated expiry: a pattern requiring the identity would
        forward this region's expiries only, so it is refused with the way out."""
        return [
            Problem(
                f"{prop}[{index}]",
                pattern,
                "a pattern that does not require the TTL identity (userIdentity): on a table "
                "with replicas a TTL deletion replicated from another region arrives without it, "
                "and a pipe runs no code that could tell it by the TTL attribute, so this pipe "
                "would forward this region's expiries only. Read expiries with a StreamConsumer "
                "(its mapping's filter is widened and its runtime tells them), or filter the "
                "pipe on something else (docs/global-tables.md)",
            )
            for index, pattern in enumerate(as_pattern(p) for p in patterns)
            if IdentityUse.REQUIRES in identity_uses(pattern)
        ]

    def _widened(self, pattern: Any) -> Any:
        if isinstance(pattern, Mapping) and isinstance(pattern.get("data"), Mapping):
            # A Kinesis record's pattern: the change is under ``data`` (KinesisFilters.on_data).
            return {**pattern, "data": self._widened(pattern["data"])}
        if not isinstance(pattern, Mapping) or _has_alternatives(pattern):
            return pattern  # a $or requiring the identity is refused (problems)
        if identity_uses(pattern) != [IdentityUse.REQUIRES]:
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
        if not group and any(names_identity(p) for p in declared):
            variables[RECORD_FILTERS_ENV] = json.dumps(declared)
        return variables

    def consumer_props(
        self, scope: IConstruct, reader: str, props: Mapping[str, Any], filters: Sequence[Any]
    ) -> tuple[dict[str, Any], list[Any], list[Problem]]:
        """What a Lambda consumer ``reader`` of the table (its ``props`` as given, ``filters``
        the mapping's as written, a group's merged) needs: ``props`` with the runtime's variables
        (:meth:`environment`), the mapping's filters (:meth:`mapping_filters`) and the filters'
        problems (:meth:`problems`); a filter on the TTL identity is said (:meth:`warn`)."""
        self.warn(scope, reader, filters)
        group = bool(props.get("members"))
        variables = self.environment(props.get("filters") or (), group=group)
        environment = {**variables, **(props.get("environment") or {})}
        changed = {**props, "environment": environment}
        return changed, self.mapping_filters(filters), self.problems(filters)

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
            "replicated expiry by the TTL attribute: a filter excluding the identity forwards "
            "the other regions' expiries as deletes (one requiring it is refused). Read "
            "expiries with a StreamConsumer, whose runtime tells them, or filter the pipe on "
            "something else (docs/global-tables.md; CdcChecks rule CDC-ESM13)",
        )


def _warn(scope: IConstruct, reader: str, patterns: Sequence[Any], consequence: str) -> None:
    named = [i for i, p in enumerate(patterns) if names_identity(as_pattern(p))]
    if not named:
        return
    Annotations.of(scope).add_warning_v2(
        REPLICATED_FILTER_WARNING,
        f"{reader}: filters {named} name the TTL identity (userIdentity), but the table has "
        "replicas: a TTL deletion replicated from another region arrives without it, and a "
        f"filter cannot compare the item's TTL attribute with the record's time. {consequence}",
    )


def _has_alternatives(pattern: Mapping[str, Any]) -> bool:
    """Whether ``pattern`` (or a Kinesis record's change under ``data``) has a ``$or``."""
    data = pattern.get("data")
    change = data if isinstance(data, Mapping) else pattern
    return len(list(alternatives(change))) > 1
