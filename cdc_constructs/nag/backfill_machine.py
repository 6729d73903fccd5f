"""A backfill state machine as CdcChecks sees it in a synthesized template.

A Step Functions state machine is a backfill when one of its Map states runs a task that
invokes a function of the same template whose handler is the runtime's backfill handler
(:data:`cdc_consumer.handler_paths.BACKFILL_HANDLER`): ViewBackfill's, or one made by hand around
the same handler. The definition is read from ``DefinitionString`` (a string, or the
``Fn::Join`` aws-cdk-lib writes, its references kept) or ``Definition``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cdc_consumer.handler_paths import BACKFILL_HANDLER

from cdc_constructs.nag.template import Resources

__all__ = ["STATE_MACHINE", "BackfillMachine"]

STATE_MACHINE = "AWS::StepFunctions::StateMachine"
_FUNCTION = "AWS::Lambda::Function"
_TOKEN = "__cdc_token_{}__"


@dataclass(frozen=True)
class BackfillMachine:
    """The state machine (its logical id), its backfill Map states, the template's resources."""

    logical_id: str
    maps: tuple[Mapping[str, Any], ...]
    functions: tuple[str, ...]
    """The backfill functions it invokes (logical ids)."""
    resources: Resources

    @classmethod
    def read(
        cls, logical_id: str, properties: Mapping[str, Any], resources: Resources
    ) -> BackfillMachine | None:
        """The backfill in this state machine's definition; None when it runs none (or its
        definition cannot be read: it is then not recognised as a backfill)."""
        backfill_functions = {
            lid
            for lid, resource in resources.items()
            if resource.get("Type") == _FUNCTION
            and (resource.get("Properties") or {}).get("Handler") == BACKFILL_HANDLER
        }
        if not backfill_functions:
            return None
        definition, tokens = _definition(properties)
        maps, invoked = [], set()
        for state in _states(definition):
            if state.get("Type") != "Map":
                continue
            called = _invoked(state, tokens) & backfill_functions
            if called:
                maps.append(state)
                invoked |= called
        if not maps:
            return None
        return cls(logical_id, tuple(maps), tuple(sorted(invoked)), resources)

    def alarms_on(self, metric_name: str) -> list[Mapping[str, Any]]:
        """The template's alarms on ``AWS/States`` ``metric_name`` of this state machine."""
        reference = {"Ref": self.logical_id}
        found = []
        for resource in self.resources.values():
            props = resource.get("Properties") or {}
            if resource.get("Type") != "AWS::CloudWatch::Alarm":
                continue
            if props.get("Namespace") != "AWS/States" or props.get("MetricName") != metric_name:
                continue
            dimensions = props.get("Dimensions") or []
            if {"Name": "StateMachineArn", "Value": reference} in dimensions:
                found.append(props)
        return found

    def environment_of(self, function: str) -> Mapping[str, Any]:
        props = self.resources.get(function, {}).get("Properties") or {}
        return (props.get("Environment") or {}).get("Variables") or {}


def _definition(properties: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The definition as JSON, each reference in a ``Fn::Join`` replaced by a placeholder
    (the second value maps placeholders back to the references)."""
    if isinstance(properties.get("Definition"), Mapping):
        return properties["Definition"], {}
    body = properties.get("DefinitionString")
    tokens: dict[str, Any] = {}
    if isinstance(body, Mapping) and isinstance(body.get("Fn::Join"), list):
        separator, parts = body["Fn::Join"]
        texts = []
        for part in parts:
            if isinstance(part, str):
                texts.append(part)
            else:
                placeholder = _TOKEN.format(len(tokens))
                tokens[placeholder] = part
                texts.append(placeholder)
        body = separator.join(texts)
    if not isinstance(body, str):
        return {}, tokens
    try:
        return json.loads(body), tokens
    except ValueError:
        return {}, tokens


def _states(definition: Any) -> Iterator[Mapping[str, Any]]:
    """Every state, nested ones (Map processors, Parallel branches) included."""
    if not isinstance(definition, Mapping):
        return
    for state in (definition.get("States") or {}).values():
        if not isinstance(state, Mapping):
            continue
        yield state
        for nested in (state.get("ItemProcessor"), state.get("Iterator")):
            yield from _states(nested)
        for branch in state.get("Branches") or ():
            yield from _states(branch)


def _invoked(map_state: Mapping[str, Any], tokens: Mapping[str, Any]) -> set[str]:
    """The functions a task inside ``map_state`` references (by ``Fn::GetAtt`` or ``Ref``)."""
    found: set[str] = set()
    processor = map_state.get("ItemProcessor") or map_state.get("Iterator")
    for state in _states(processor):
        if state.get("Type") == "Task":
            found |= set(_references(state, tokens))
    return found


def _references(value: Any, tokens: Mapping[str, Any]) -> Iterator[str]:
    if isinstance(value, str):
        for placeholder, reference in tokens.items():
            if placeholder in value:
                yield from _logical_ids(reference)
    elif isinstance(value, Mapping):
        yield from _logical_ids(value)
        for item in value.values():
            yield from _references(item, tokens)
    elif isinstance(value, list):
        for item in value:
            yield from _references(item, tokens)


def _logical_ids(reference: Any) -> Iterator[str]:
    if not isinstance(reference, Mapping):
        return
    if isinstance(reference.get("Ref"), str):
        yield reference["Ref"]
    attribute = reference.get("Fn::GetAtt")
    if isinstance(attribute, list) and attribute and isinstance(attribute[0], str):
        yield attribute[0]
